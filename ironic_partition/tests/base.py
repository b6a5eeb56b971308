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

"""Base classes for ironic-partition's tests."""

from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslotest import base

from ironic_partition import conf as ip_conf
from ironic_partition import settings as settings_mod


class TestCase(base.BaseTestCase):
    """A test case with a private, registered ``ConfigOpts`` as ``conf``."""

    def setUp(self):
        super().setUp()
        self.conf = cfg.ConfigOpts()
        ip_conf.register_opts(self.conf)
        self.conf_fixture = self.useFixture(
            config_fixture.Config(self.conf))
        self.conf([], project='ironic-partition')

    def config(self, group=None, **kw):
        """Override options of ``group`` for this test.

        :param group: the option group, ``None`` for ``[DEFAULT]``.
        :param kw: option names and values.
        """
        self.conf_fixture.config(group=group, **kw)

    def read_settings(self, cadence=None):
        """The service's settings from ``self.conf``, as a reload reads them.

        :param cadence: the consumer's cadence; the agent's by default.
        :returns: a :class:`~ironic_partition.settings.Settings`.
        """
        return settings_mod.from_conf(self.conf, cadence)
