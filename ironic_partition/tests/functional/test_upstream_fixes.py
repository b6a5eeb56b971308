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

"""The fixes we propose upstream, against the releases we run.

Each patch in ``doc/source/contributor/upstream/`` is applied to a copy of
the installed package (:mod:`ironic_partition.testing.upstream`), and the
unit tests it adds are run there: they pass with the fix, and on the
release they fail the way the bug does. The lane shows the same fix inside
nova-compute (``test_nova_compute``).
"""

import os
import re
import subprocess
import sys

import fixtures
from oslotest import base
from testtools import content

from ironic_partition.testing import upstream

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
UPSTREAM = os.path.join(ROOT, 'doc', 'source', 'contributor', 'upstream')

#: The oslo.service fix for SIGHUP with no_fork (nova-compute).
OSLO_SERVICE_SIGHUP = os.path.join(UPSTREAM,
                                   'oslo-service-no-fork-sighup.patch')
#: The module of oslo.service's tests the patch extends, and its new tests.
SIGHUP_TESTS = 'oslo_service.tests.backend.threading.test_signal_handler'
NEW_SIGHUP_TESTS = (
    'test_sighup_mutates_and_resets_the_service_no_fork',
    'test_sighup_reloads_with_restart_method_reload_no_fork',
    'test_sighup_reload_failure_keeps_the_service_no_fork',
    'test_sighup_does_not_end_the_running_service_no_fork',
)


class OsloServiceNoForkSighupTest(base.BaseTestCase):
    """The proposed oslo.service fix, on the installed release."""

    def _run_tests(self, path, native):
        env = upstream.pythonpath(path)
        # NOTE(ironic-partition): oslo.service's tests monkey-patch
        # eventlet unless told not to; nova 34 runs native threads.
        if native:
            env['OSLO_SERVICE_SKIP_EVENTLET'] = '1'
        else:
            env.pop('OSLO_SERVICE_SKIP_EVENTLET', None)
        result = subprocess.run(
            [sys.executable, '-m', 'unittest', '-v', SIGHUP_TESTS],
            cwd=path, env=env, capture_output=True, text=True, timeout=300)
        self.addDetail('unittest-%s-%s' % (
            os.path.basename(path), 'native' if native else 'eventlet'),
            content.text_content(result.stderr))
        return result

    def _copy(self, **kwargs):
        tmp = self.useFixture(fixtures.TempDir()).path
        return upstream.patched_copy('oslo_service', OSLO_SERVICE_SIGHUP,
                                     tmp, **kwargs)

    def test_the_fix_passes_its_tests_in_both_threading_modes(self):
        path = self._copy()
        for native in (True, False):
            result = self._run_tests(path, native)
            self.assertEqual(0, result.returncode, result.stderr[-2000:])
            for name in NEW_SIGHUP_TESTS:
                self.assertRegex(result.stderr,
                                 r'%s \(.*\)( \.\.\.)?.*\n?.*ok' % name)
            self.assertIn('\nOK', result.stderr)

    def test_the_release_fails_them_with_signal_exit(self):
        # Only the tests of the patch, on the release: each new test ends
        # in the SignalExit that stops nova-compute.
        path = self._copy(include='oslo_service/tests/*')
        result = self._run_tests(path, native=True)
        self.assertNotEqual(0, result.returncode)
        for name in NEW_SIGHUP_TESTS:
            self.assertIn('ERROR: %s ' % name, result.stderr)
        self.assertEqual(len(NEW_SIGHUP_TESTS), len(re.findall(
            r'^oslo_service\.backend\._common\.service\.SignalExit: 1$',
            result.stderr, re.M)))
        self.assertIn('FAILED (errors=%d)' % len(NEW_SIGHUP_TESTS),
                      result.stderr)
