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

"""Pipelining: a generator run one item ahead of its consumer.

:class:`~ironic_partition.ironic.baremetal.IronicClient` lists nodes page by
page; the next page is fetched while the current one is processed.
"""

from concurrent import futures
import queue
import threading


class Prefetcher(object):
    """Runs a generator one item ahead, on the client's executor.

    A worker fetches the next page (waiting on Ironic) while the caller
    processes the current one. At most one page waits in the queue.
    Errors are raised to the caller at the point they would have been.
    In an eventlet-patched process the worker is a green thread and the
    pipelining becomes cooperative, which stays correct.

    :param generator: the generator to run ahead.
    :param executor: the client's executor.
    """

    _DONE = object()

    def __init__(self, generator, executor):
        self._generator = generator
        self._queue = queue.Queue(maxsize=1)
        self._stopped = threading.Event()
        self._future = executor.submit(self._run)

    def _put(self, item):
        while not self._stopped.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self):
        try:
            for item in self._generator:
                if not self._put((item, None)):
                    return
            self._put((self._DONE, None))
        except BaseException as e:
            self._put((None, e))
        finally:
            self._generator.close()

    def __iter__(self):
        while True:
            item, error = self._queue.get()
            if error is not None:
                raise error
            if item is self._DONE:
                return
            yield item

    def close(self):
        """Stop fetching; wait for the worker to let go of the generator."""
        self._stopped.set()
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass
        futures.wait([self._future])
