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

"""The nova driver's start-up policy, with nova's own classes and fakes."""

import types

from oslo_config import cfg

from ironic_partition import exception
from ironic_partition.tests import base
from ironic_partition.virt import nova_driver


class TestParallelTracking(base.TestCase):

    def _driver(self, workers, claims=True):
        conf = cfg.ConfigOpts()
        conf.register_opt(cfg.IntOpt('update_resources_max_workers',
                                     default=1), group='compute')
        conf([])
        conf.set_override('update_resources_max_workers', workers,
                          group='compute')
        # NOTE(ironic-partition): nova's IronicDriver is not built (it
        # connects to Ironic); the check reads two attributes.
        driver = object.__new__(nova_driver.IronicPartitionDriver)
        driver.partition_conf = conf
        driver.partitioner = types.SimpleNamespace(
            claims=object() if claims else None)
        return driver

    def test_more_than_one_worker_is_refused_with_claims(self):
        e = self._driver(4)._parallel_tracking_error()
        self.assertIsInstance(e, exception.ConfigurationError)
        self.assertIn('Invalid value 4 for option [compute] '
                      'update_resources_max_workers', str(e))
        self.assertIn("Set it to 1 (nova's default), or turn claims off",
                      str(e))

    def test_one_worker_or_claims_off_is_fine(self):
        self.assertIsNone(self._driver(1)._parallel_tracking_error())
        self.assertIsNone(
            self._driver(8, claims=False)._parallel_tracking_error())
        # A nova without the option (before 34): one worker.
        driver = self._driver(1)
        driver.partition_conf = cfg.ConfigOpts()
        self.assertIsNone(driver._parallel_tracking_error())
