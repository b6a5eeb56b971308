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

"""A bounded pool of daemon workers: the one executor of a client.

A ``concurrent.futures.Executor`` whose workers start on demand, up to a
bound, reuse an idle worker before starting another, and are *daemon*
threads. Neither library pool fits a plugin that runs inside nova-compute:

* the standard library's ``ThreadPoolExecutor`` joins its workers when
  the interpreter exits, so a worker waiting on an Ironic that no longer
  answers (a session without a timeout, a peer gone without a reset)
  would keep nova-compute or the agent from exiting after SIGTERM;
* ``import futurist`` imports eventlet wherever it is installed (every
  host with oslo.service) and prints its deprecation warning, which this
  project keeps out of its processes.

Under eventlet's monkey patching (an operator who turns it back on in
nova-compute) the workers are green threads, which stays correct.
"""

from concurrent import futures
import queue
import threading


class DaemonExecutor(futures.Executor):
    """Runs calls on at most ``max_workers`` daemon threads.

    :param max_workers: the bound.
    :param name: the threads' name prefix.
    """

    def __init__(self, max_workers, name='ironic-partition'):
        if max_workers < 1:
            raise ValueError('max_workers must be at least 1')
        self._max_workers = max_workers
        self._name = name
        self._work = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads = []
        self._shutdown = False

    def submit(self, fn, /, *args, **kwargs):
        """Schedule ``fn(*args, **kwargs)``.

        :returns: a ``concurrent.futures.Future``.
        :raises RuntimeError: after :meth:`shutdown`.
        """
        with self._lock:
            if self._shutdown:
                raise RuntimeError('cannot schedule new calls after '
                                   'shutdown')
            future = futures.Future()
            self._work.put((future, fn, args, kwargs))
            if (not self._idle.acquire(blocking=False) and
                    len(self._threads) < self._max_workers):
                thread = threading.Thread(
                    target=self._run, daemon=True,
                    name='%s-%d' % (self._name, len(self._threads)))
                self._threads.append(thread)
                thread.start()
            return future

    def _run(self):
        while True:
            item = self._work.get()
            if item is None:
                return
            future, fn, args, kwargs = item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as e:
                    future.set_exception(e)
                else:
                    future.set_result(result)
            del item, future, fn, args, kwargs
            self._idle.release()

    @property
    def workers(self):
        """How many worker threads were started."""
        with self._lock:
            return len(self._threads)

    def shutdown(self, wait=True, *, cancel_futures=False):
        """Take no new call; let the workers end after the queued ones.

        :param wait: wait for the workers to end.
        :param cancel_futures: cancel the calls not started yet.
        :returns: None
        """
        with self._lock:
            self._shutdown = True
            threads = list(self._threads)
        if cancel_futures:
            while True:
                try:
                    item = self._work.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        for _thread in threads:
            self._work.put(None)
        if wait:
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join()
