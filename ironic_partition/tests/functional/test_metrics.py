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

"""The example alert rules, checked by Prometheus's own promtool.

The rules load, and their ``promtool test rules`` cases pass: an alert
pending, firing after its ``for`` duration, and resolved, on synthetic
series. The nova lane (``test_nova_compute.PartitionLaneTest``) shows a
real Prometheus scraping three nova-compute services through a database
cut, the not-ready alert pending.
"""

import os
import shutil
import subprocess

from oslotest import base
from testtools import content

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
RULES_DIR = os.path.join(ROOT, 'etc', 'ironic-partition', 'prometheus')


class AlertRulesTest(base.BaseTestCase):

    def _promtool(self, *args):
        promtool = shutil.which('promtool')
        self.assertIsNotNone(promtool, 'promtool is missing: run '
                             'tools/test-setup.sh')
        result = subprocess.run([promtool] + list(args), cwd=RULES_DIR,
                                capture_output=True, text=True, timeout=120)
        self.addDetail('promtool-' + args[0] + '-' + args[1],
                       content.text_content(result.stdout + result.stderr))
        return result

    def test_the_rules_load(self):
        result = self._promtool('check', 'rules',
                                'ironic-partition-alerts.yaml')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('SUCCESS: 6 rules found', result.stdout)

    def test_the_rules_fire_and_resolve(self):
        result = self._promtool('test', 'rules',
                                'ironic-partition-alerts-test.yaml')
        self.assertEqual(0, result.returncode, result.stdout + result.stderr)
        self.assertIn('SUCCESS', result.stdout)
