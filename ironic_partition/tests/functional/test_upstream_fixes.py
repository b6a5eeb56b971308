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
the installed package (:mod:`ironic_partition.testing.install.upstream`), and
the unit tests it adds are run there: they pass with the fix, and on the
release they fail the way the bug does. The lanes show the same fixes in
real services (``test_nova_compute`` for SIGHUP, ``test_nova_servers``
for a rebuild, and for a rebuild refused while not ready), in
``tox -e functional-long``.
"""

import os
import re
import subprocess
import sys

import fixtures
from oslotest import base
from testtools import content

from ironic_partition.testing.install import upstream

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

#: The nova fix: rebuild an image-backed server at compute API 2.93+.
NOVA_REBUILD = os.path.join(UPSTREAM,
                            'nova-ironic-rebuild-image-backed.patch')
NOVA_REBUILD_TESTS = 'nova.tests.unit.virt.ironic.test_driver.' \
    'IronicDriverTestCase'
NEW_NOVA_REBUILD_TESTS = (
    'test_rebuild_image_backed_reimage_boot_volume',
    'test_rebuild_volume_backed_reimage_boot_volume',
)
#: The nova fix: a failed same-host rebuild keeps the server's
#: allocation, and its own error (no KeyError for an untracked node).
NOVA_REBUILD_FAILURE = os.path.join(
    UPSTREAM, 'nova-rebuild-failure-keeps-allocation.patch')
NOVA_COMPUTE_TESTS = 'nova.tests.unit.compute.test_compute_mgr.' \
    'ComputeManagerUnitTestCase'
NEW_NOVA_REBUILD_FAILURE_TESTS = (
    'test_rebuild_driver_error_same_host_keeps_allocation',
    'test_rebuild_driver_error_untracked_node_keeps_the_error',
)
#: The nova fix: aborting a claim on a node the tracker dropped since.
NOVA_ABORT_CLAIM = os.path.join(UPSTREAM,
                                'nova-abort-claim-untracked-node.patch')
NOVA_CLAIM_TESTS = 'nova.tests.unit.compute.test_resource_tracker.' \
    'TestInstanceClaim'
NEW_NOVA_ABORT_CLAIM_TESTS = ('test_claim_abort_node_no_longer_tracked',)
#: The Ironic fix: a rebuild no longer reads an unbound auto_lessee.
IRONIC_REBUILD = os.path.join(UPSTREAM, 'ironic-rebuild-auto-lessee.patch')
IRONIC_REBUILD_TESTS = 'ironic.tests.unit.conductor.test_deployments.' \
    'DoNodeDeployTestCase'
NEW_IRONIC_REBUILD_TESTS = (
    'test_start_deploy_rebuild_image_type_unchanged',
    'test_start_deploy_rebuild_image_type_updated',
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


class _RebuildFix(object):
    """A proposed rebuild fix: its new tests, with it and on the release.

    Only the new tests run (and one of the release's for the code path),
    not the project's whole suite: the point is the fix and that the
    tests catch the bug.
    """

    PACKAGE = None
    PATCH = None
    CASE = None
    NEW_TESTS = ()
    #: A test of the release that runs the same code, kept passing.
    KEPT = None
    #: The new test that fails on the release, and the bug's error there.
    FAILS_ON_RELEASE = None
    THE_BUG = None
    #: unittest's last line for the new tests on the release.
    ON_RELEASE = 'FAILED (errors=1)'

    def _run(self, include=None):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = upstream.patched_copy(self.PACKAGE, self.PATCH, tmp,
                                     include=include)
        names = ['%s.%s' % (self.CASE, name)
                 for name in self.NEW_TESTS + (self.KEPT,)]
        result = subprocess.run(
            [sys.executable, '-m', 'unittest', '-v'] + names,
            cwd=path, env=upstream.pythonpath(path), capture_output=True,
            text=True, timeout=300)
        self.addDetail('unittest-%s' % ('release' if include else 'fix'),
                       content.text_content(result.stderr))
        if include:
            self.release_output = result.stderr
        return result

    def test_the_fix_passes_its_tests(self):
        result = self._run()
        self.assertEqual(0, result.returncode, result.stderr[-2000:])
        names = self.NEW_TESTS + (self.KEPT,)
        for name in names:
            self.assertIn('%s.%s ... ' % (self.CASE, name), result.stderr)
        self.assertIn('Ran %d tests' % len(names), result.stderr)
        self.assertIn('\nOK', result.stderr)

    def test_the_release_fails_them_as_the_bug_does(self):
        # Only the patch's tests, on the release: the one of the bug
        # fails with the bug's own error; the others pass.
        result = self._run(include='%s/tests/*' % self.PACKAGE)
        self.assertNotEqual(0, result.returncode)
        self.assertIn('ERROR: %s ' % self.FAILS_ON_RELEASE, result.stderr)
        self.assertIn(self.THE_BUG, result.stderr)
        self.assertIn(self.ON_RELEASE, result.stderr)


class NovaIronicRebuildTest(_RebuildFix, base.BaseTestCase):
    """The proposed nova fix, on the installed nova 34.

    On the release, the image-backed rebuild at 2.93 gets the refusal
    nova-compute logs; the volume-backed one is refused by both.
    """

    PACKAGE = 'nova'
    PATCH = NOVA_REBUILD
    CASE = NOVA_REBUILD_TESTS
    NEW_TESTS = NEW_NOVA_REBUILD_TESTS
    KEPT = 'test_rebuild_no_preserve_ephemeral'
    FAILS_ON_RELEASE = 'test_rebuild_image_backed_reimage_boot_volume'
    THE_BUG = ("nova.exception.NovaException: Ironic doesn't support "
               "rebuilding volume backed instances.")


class NovaRebuildFailureTest(_RebuildFix, base.BaseTestCase):
    """The proposed nova fix for a failed rebuild, on the installed nova 34.

    On the release, a driver error on a server whose node the resource
    tracker does not track becomes a KeyError (the fault nova records
    when our driver refuses a rebuild while not ready), and one on a
    tracked node removes the server's own allocation.
    """

    PACKAGE = 'nova'
    PATCH = NOVA_REBUILD_FAILURE
    CASE = NOVA_COMPUTE_TESTS
    NEW_TESTS = NEW_NOVA_REBUILD_FAILURE_TESTS
    KEPT = 'test_rebuild_driver_error_evacuate'
    FAILS_ON_RELEASE = \
        'test_rebuild_driver_error_untracked_node_keeps_the_error'
    THE_BUG = "KeyError: 'fake-node'"
    ON_RELEASE = 'FAILED (failures=1, errors=1)'

    def test_the_release_fails_them_as_the_bug_does(self):
        super().test_the_release_fails_them_as_the_bug_does()
        # And the other: the server's own allocation removed.
        self.assertIn('FAIL: test_rebuild_driver_error_same_host_keeps_'
                      'allocation ', self.release_output)


class NovaAbortClaimTest(_RebuildFix, base.BaseTestCase):
    """The proposed nova fix for an aborted claim, on the installed nova 34.

    On the release, the abort fails with the KeyError nova-compute logs
    when our spawn check refuses a node another compute took over.
    """

    PACKAGE = 'nova'
    PATCH = NOVA_ABORT_CLAIM
    CASE = NOVA_CLAIM_TESTS
    NEW_TESTS = NEW_NOVA_ABORT_CLAIM_TESTS
    KEPT = 'test_claim_abort'
    FAILS_ON_RELEASE = 'test_claim_abort_node_no_longer_tracked'
    THE_BUG = "KeyError: 'fake-node'"


class IronicRebuildAutoLesseeTest(_RebuildFix, base.BaseTestCase):
    """The proposed Ironic fix, on the installed Ironic 39.

    On the release, a rebuild whose image type cannot be told fails as
    nova's rebuild does in the lane.
    """

    PACKAGE = 'ironic'
    PATCH = IRONIC_REBUILD
    CASE = IRONIC_REBUILD_TESTS
    NEW_TESTS = NEW_IRONIC_REBUILD_TESTS
    KEPT = 'test_start_deploy_lessee_legacy_false'
    FAILS_ON_RELEASE = 'test_start_deploy_rebuild_image_type_unchanged'
    THE_BUG = ("UnboundLocalError: cannot access local variable "
               "'auto_lessee' where it is not associated with a value")
