# Copyright 2026 The ironic-partition Authors.
#
#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""A call repeated on a daemon thread of its own: the services' timers.

The lease timer, the claims' garbage collection and the membership
heartbeat each run one of these. Neither library timer fits a plugin that
runs inside nova-compute: ``futurist.periodics`` and oslo.service's
looping calls both import eventlet wherever it is installed (every host
with oslo.service) and print its deprecation warning, which this project
keeps out of its processes (``test_module_map.
test_no_eventlet_in_our_processes``). A timer never waits on anything but
its own delay, so a slow call elsewhere (a listing, a pool) cannot delay
it; under eventlet's monkey patching (an operator who turns it back on in
nova-compute) the thread is a green thread, which stays correct.
"""

import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class Periodic(object):
    """Calls ``tick()`` after every ``delay()`` seconds until stopped.

    The first call comes after the first delay. ``tick`` returning
    ``False`` ends the thread; any exception it raises is logged and the
    next call comes as usual, so the timer never dies silently.

    :param name: the thread's name.
    :param tick: a callable without arguments.
    :param delay: a callable returning the seconds to wait before the
        next call (read before each wait).
    """

    def __init__(self, name, tick, delay):
        self.name = name
        self._tick = tick
        self._delay = delay
        self._stop = threading.Event()
        #: The thread, or None when stopped.
        self.thread = None

    def start(self):
        """Start the thread, unless it runs. Idempotent.

        :returns: None
        """
        if self.thread is not None and self.thread.is_alive():
            return
        self._stop.clear()
        self.thread = threading.Thread(target=self._run, name=self.name,
                                       daemon=True)
        self.thread.start()

    def stop(self, timeout=None):
        """Stop the thread and wait for it, unless called from it.

        :param timeout: seconds to wait for the thread at most; a call
            under way is not interrupted.
        :returns: None
        """
        self._stop.set()
        thread, self.thread = self.thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self):
        while not self._stop.wait(self._delay()):
            try:
                if self._tick() is False:
                    return
            except BaseException:
                # NOTE(ironic-partition): the ticks catch what they expect
                # (database errors); this only guards against bugs.
                LOG.exception('Unexpected error in %s', self.name)
