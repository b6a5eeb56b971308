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

"""One ``nova-compute`` process of the nova fixture, and its log marks.

The fixture (:class:`~ironic_partition.testing.services.nova.NovaFixture`)
writes a time-stamped mark into a compute's log before every signal it sends
(``--- harness: kill at <time>``), so that :mod:`.novalane` can tell from
the log alone when each process started, was paused or died.
"""

import signal
import time

from ironic_partition.testing import process as harness_process

MARKER = harness_process.MARKER
"""Prefix of the lines the fixture writes into a compute's log."""

#: The loggers whose debug lines the lane parses: every node a
#: resource-tracker run reports ("Final resource view: name=<node>"), the
#: start of every periodic run, and the compute manager's reasons for a
#: reschedule (nova logs a claim refused on an untracked node only at
#: debug level).
DEBUG_LOGGERS = ('nova.compute.resource_tracker=DEBUG',
                 'oslo_service.periodic_task=DEBUG',
                 'nova.compute.manager=DEBUG')

#: nova's own default log levels, which a ``default_log_levels`` option
#: replaces rather than extends.
NOVA_DEFAULT_LOG_LEVELS = (
    'amqp=WARN', 'amqplib=WARN', 'boto=WARN', 'qpid=WARN',
    'sqlalchemy=WARN', 'suds=INFO', 'oslo.messaging=INFO',
    'oslo_messaging=INFO', 'iso8601=WARN',
    'requests.packages.urllib3.connectionpool=WARN', 'urllib3=WARN',
    'keystoneauth=WARN', 'keystoneauth1=WARN', 'openstack=WARN',
    'stevedore=WARN', 'taskflow=WARN', 'keystoneauth1.session=WARN',
    'oslo_policy=INFO', 'dogpile.core.dogpile=INFO', 'glanceclient=WARN',
    'oslo.privsep.daemon=INFO')


class Compute(harness_process.Service):
    """One ``nova-compute`` process, with its own host name and config.

    :param host: its ``[DEFAULT] host``.
    :param config_file: its nova.conf.
    :param kwargs: passed to :class:`~ironic_partition.testing.Service`.
    """

    #: The command that runs nova-compute in a PID namespace of its own.
    UNSHARE = ('unshare', '--pid', '--fork', '--kill-child')

    def __init__(self, host, config_file, **kwargs):
        super().__init__(**kwargs)
        self.host = host
        self.config_file = config_file
        self._argv = list(self.argv)
        #: Start each process in a new PID namespace, as a container
        #: (re)start does (``unshare``; needs root or user namespaces).
        self.own_pid_namespace = False

    def mark(self, event):
        """Write a time-stamped event line into this compute's log.

        :param event: e.g. ``kill``; see :mod:`.novalane` for the parser.
        :returns: None
        """
        with open(self.log_path, 'ab') as log:
            log.write(('%s%s at %.6f\n' % (MARKER, event, time.time()))
                      .encode())

    def start(self):
        """Start nova-compute, after a ``start`` mark in its log.

        :returns: None
        """
        self.mark('start')
        self.argv = ((list(self.UNSHARE) if self.own_pid_namespace else [])
                     + self._argv)
        super().start()

    def kill(self, timeout=30):
        """SIGKILL the group, marking the log before and once it is gone.

        A line the process logs between the ``kill`` mark and its death
        comes after the mark: what it reports is held until ``killed``.

        :param timeout: seconds to wait for the processes to vanish.
        :returns: the exit code of the leader.
        """
        running = self.running()
        if running:
            self.mark('kill')
        code = super().kill(timeout)
        if running:
            self.mark('killed')
        return code

    def stop(self, timeout=30):
        """SIGTERM the group (nova's graceful stop), marking the log.

        :param timeout: seconds allowed before SIGKILL.
        :returns: the exit code of the leader.
        """
        if self.running():
            self.mark('stop')
        code = super().stop(timeout)
        self.mark('stopped')
        return code

    def pause(self):
        """SIGSTOP the group, marking the log.

        :returns: None
        """
        self.mark('pause')
        super().pause()

    def resume(self):
        """SIGCONT the group, marking the log.

        :returns: None
        """
        super().resume()
        self.mark('resume')

    def sighup(self):
        """SIGHUP the group: nova re-reads its config files (mutate).

        :returns: None
        """
        self.mark('sighup')
        self.signal(signal.SIGHUP)
