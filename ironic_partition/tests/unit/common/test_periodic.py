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

import threading

import fixtures
from oslotest import base

from ironic_partition.common import periodic


class TestPeriodic(base.BaseTestCase):

    def _periodic(self, tick, delay=0.01):
        timer = periodic.Periodic('test-timer', tick, lambda: delay)
        self.addCleanup(timer.stop, 5)
        return timer

    def test_ticks_until_stopped(self):
        calls = []
        third = threading.Event()

        def tick():
            calls.append(threading.current_thread().name)
            if len(calls) == 3:
                third.set()
        timer = self._periodic(tick)
        timer.start()
        thread = timer.thread
        self.assertTrue(thread.daemon)
        self.assertTrue(third.wait(5))
        timer.stop(5)
        self.assertFalse(thread.is_alive())
        self.assertIsNone(timer.thread)
        self.assertEqual({'test-timer'}, set(calls))

    def test_start_is_idempotent(self):
        timer = self._periodic(lambda: None, delay=60)
        timer.start()
        thread = timer.thread
        timer.start()
        self.assertIs(thread, timer.thread)

    def test_first_call_after_the_first_delay(self):
        called = threading.Event()
        timer = self._periodic(called.set, delay=60)
        timer.start()
        self.assertFalse(called.wait(0.2))

    def test_false_ends_the_thread(self):
        calls = []

        def tick():
            calls.append(1)
            return False
        timer = self._periodic(tick)
        timer.start()
        timer.thread.join(5)
        self.assertFalse(timer.thread.is_alive())
        self.assertEqual([1], calls)

    def test_an_error_is_logged_and_the_next_call_comes(self):
        logger = self.useFixture(fixtures.FakeLogger())
        calls = []
        second = threading.Event()

        def tick():
            calls.append(1)
            if len(calls) == 1:
                raise KeyboardInterrupt('boom')
            second.set()
        timer = self._periodic(tick)
        timer.start()
        self.assertTrue(second.wait(5))
        self.assertIn('Unexpected error in test-timer', logger.output)
        self.assertIn('boom', logger.output)

    def test_stop_from_the_tick_does_not_wait_for_itself(self):
        stopped = threading.Event()
        timer = None
        ran_in = []

        def tick():
            # NOTE(ironic-partition): the thread is taken here: the tick
            # may stop the timer (which forgets its thread) before the
            # test could read timer.thread.
            ran_in.append(threading.current_thread())
            timer.stop()
            stopped.set()
        timer = self._periodic(tick)
        timer.start()
        self.assertTrue(stopped.wait(5))
        [thread] = ran_in
        thread.join(5)
        self.assertFalse(thread.is_alive())
