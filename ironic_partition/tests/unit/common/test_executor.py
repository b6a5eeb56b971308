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

import subprocess
import sys
import threading

from ironic_partition.common import executor
from ironic_partition.tests import base

TIMEOUT = 10


class TestDaemonExecutor(base.TestCase):

    def make(self, workers=4):
        pool = executor.DaemonExecutor(workers, name='test-pool')
        self.addCleanup(pool.shutdown, wait=True, cancel_futures=True)
        return pool

    def test_results_and_errors(self):
        pool = self.make()
        self.assertEqual(3, pool.submit(lambda a, b=0: a + b, 1, b=2)
                         .result(TIMEOUT))
        failed = pool.submit(lambda: {}['missing'])
        self.assertIsInstance(failed.exception(TIMEOUT), KeyError)

    def test_an_idle_worker_is_reused(self):
        pool = self.make()
        for i in range(20):
            self.assertEqual(i, pool.submit(lambda i=i: i).result(TIMEOUT))
        # Each call ended before the next was submitted: one worker did
        # them all (a second may start while the first marks itself idle).
        self.assertLessEqual(pool.workers, 2)

    def test_bounded_and_daemon(self):
        pool = self.make(workers=3)
        release = threading.Event()
        self.addCleanup(release.set)
        started = threading.Semaphore(0)
        names = []

        def block():
            names.append((threading.current_thread().name,
                          threading.current_thread().daemon))
            started.release()
            release.wait(TIMEOUT)
            return True
        calls = [pool.submit(block) for _ in range(5)]
        for _ in range(3):
            self.assertTrue(started.acquire(timeout=TIMEOUT))
        # Three run, two wait for a worker.
        self.assertEqual(3, pool.workers)
        self.assertFalse(started.acquire(timeout=0.2))
        release.set()
        self.assertEqual([True] * 5, [c.result(TIMEOUT) for c in calls])
        self.assertEqual(3, pool.workers)
        self.assertTrue(all(daemon for _name, daemon in names))
        self.assertTrue(all(n.startswith('test-pool-') for n, _d in names))

    def test_shutdown(self):
        pool = self.make()
        self.assertTrue(pool.submit(lambda: True).result(TIMEOUT))
        pool.shutdown(wait=True)
        self.assertRaises(RuntimeError, pool.submit, lambda: None)

    def test_cancel_what_has_not_started(self):
        pool = self.make(workers=1)
        release = threading.Event()
        running = pool.submit(release.wait, TIMEOUT)
        queued = pool.submit(lambda: 'never')
        pool.shutdown(wait=False, cancel_futures=True)
        self.assertTrue(queued.cancelled())
        release.set()
        self.assertTrue(running.result(TIMEOUT))

    def test_a_call_in_flight_does_not_keep_the_process_alive(self):
        # The standard library's pool would join its worker at exit and
        # hang on a call that never returns.
        code = ('import threading\n'
                'from ironic_partition.common import executor\n'
                'pool = executor.DaemonExecutor(2)\n'
                'pool.submit(threading.Event().wait)\n'
                'print("exiting")\n')
        done = subprocess.run([sys.executable, '-c', code], timeout=60,
                              capture_output=True, text=True)
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual('exiting', done.stdout.strip())
