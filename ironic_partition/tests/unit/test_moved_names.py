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

"""The deprecated names of the modules moved by the layout by concern."""

import importlib
import sys
import warnings

from ironic_partition.tests import base


class MovedNamesTestCase(base.TestCase):

    def _import_old(self, old):
        sys.modules.pop(old, None)
        self.addCleanup(sys.modules.pop, old, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            module = importlib.import_module(old)
        return module, [str(w.message) for w in caught
                        if issubclass(w.category, DeprecationWarning)]

    def test_old_names_are_the_new_modules_with_a_warning(self):
        for old, new in [
                ('ironic_partition.hash_ring',
                 'ironic_partition.ring.hash_ring'),
                ('ironic_partition.allocations',
                 'ironic_partition.ironic.allocations'),
                ('ironic_partition.claims.claim_settings',
                 'ironic_partition.settings.claims')]:
            module, messages = self._import_old(old)
            self.assertIs(importlib.import_module(new), module)
            self.assertEqual(['%s is deprecated: import %s' % (old, new)],
                             messages)

    def test_the_old_error_builder_warns_and_builds_the_one_error(self):
        from ironic_partition import conf as ip_conf
        from ironic_partition import exception
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            error = ip_conf.config_error('peer_list', ['a'], 'it is wrong')
        self.assertEqual(
            [DeprecationWarning],
            [w.category for w in caught
             if issubclass(w.category, DeprecationWarning)])
        self.assertIsInstance(error, exception.ConfigurationError)
        self.assertEqual(
            "Invalid value ['a'] for option [ironic] peer_list: it is wrong",
            str(error))
