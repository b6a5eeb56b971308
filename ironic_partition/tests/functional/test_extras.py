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

"""The ``testing`` extra is enough to run the harness.

A clean virtual environment (no system site packages) gets
``ironic-partition[testing]`` and nothing else, with the project's
constraints; the harness is then started from that environment's
interpreter, as someone who only read the install guide would, and an
Ironic with nodes answers. Nothing of the tox environment running the test
is visible to it.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import fixtures
from oslotest import base
from testtools import content

from ironic_partition import testing as harness

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

#: Seconds allowed for the install (wheels come from pip's cache once the
#: functional environment exists; several minutes without it).
INSTALL_TIMEOUT = 1200


def _clean_env():
    env = {k: v for k, v in os.environ.items()
           if k not in ('PYTHONPATH', 'VIRTUAL_ENV', 'PYTHONHOME')}
    # NOTE(ironic-partition): the tox environment's bin first in PATH
    # would hide the new environment's console scripts.
    env['PATH'] = os.pathsep.join(
        p for p in env.get('PATH', '').split(os.pathsep)
        if not p.startswith(os.path.dirname(os.path.dirname(
            os.path.abspath(sys.executable)))))
    env['PYTHONWARNINGS'] = 'ignore::DeprecationWarning'
    return env


class TestingExtraTest(base.BaseTestCase):

    def test_harness_runs_from_the_testing_extra_alone(self):
        harness.skip_unless_long(self)
        tmp = self.useFixture(fixtures.TempDir()).path
        venv = os.path.join(tmp, 'venv')
        env = _clean_env()
        subprocess.run([sys.executable, '-m', 'venv', venv], check=True,
                       env=env, timeout=120)
        python = os.path.join(venv, 'bin', 'python')
        started = time.monotonic()
        install = subprocess.run(
            [python, '-m', 'pip', 'install', '--quiet',
             '--disable-pip-version-check',
             '-c', os.path.join(ROOT, 'upper-constraints.txt'),
             '%s[testing]' % ROOT],
            capture_output=True, text=True, env=env,
            timeout=INSTALL_TIMEOUT)
        self.assertEqual(0, install.returncode,
                         install.stdout[-4000:] + install.stderr[-4000:])
        self.addDetail('install-seconds', content.text_content(
            '%.1f' % (time.monotonic() - started)))
        # The package comes from the new environment, not from this one.
        where = subprocess.run(
            [python, '-c', 'import ironic_partition, sys; '
             'print(ironic_partition.__file__); print(sys.prefix)'],
            capture_output=True, text=True, env=env, check=True, cwd=tmp)
        module, prefix = where.stdout.split()
        self.assertTrue(module.startswith(venv), module)
        self.assertEqual(venv, prefix)

        harness_run = subprocess.Popen(
            [python, '-m', 'ironic_partition.testing', 'start',
             '--db-backend', 'postgresql', '--groups', 'rack1,rack2',
             '--nodes', '4', '--node-state', 'available'],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env, cwd=tmp, start_new_session=True)
        self.addCleanup(self._stop, harness_run)
        line = harness_run.stdout.readline()
        if not line:
            harness_run.wait(60)
            self.fail('the harness did not start: %s'
                      % harness_run.stderr.read()[-4000:])
        description = json.loads(line)
        self.assertEqual(4, description['nodes']['count'])
        self.assertEqual({'rack1', 'rack2'}, {
            c['conductor_group'] for c in description['conductors']})
        request = urllib.request.Request(
            description['endpoint'].rstrip('/') + '/v1/nodes',
            headers={'X-OpenStack-Ironic-API-Version': '1.46'})
        with urllib.request.urlopen(request, timeout=30) as answer:
            nodes = json.load(answer)['nodes']
        self.assertEqual(4, len(nodes))
        pids = ([description['api']['pid']] +
                [c['pid'] for c in description['conductors']])
        harness_run.send_signal(signal.SIGTERM)
        self.assertEqual(0, harness_run.wait(120))
        self.assertEqual([], harness.pids_alive(pids))
        self.assertFalse(os.path.exists(description['workdir']))

    def _stop(self, process):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
        process.stdout.close()
        process.stderr.close()
