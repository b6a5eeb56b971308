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

"""Masking the password of a URL."""

from oslotest import base as test_base

from ironic_partition import _urls


class TestMask(test_base.BaseTestCase):

    def test_masks(self):
        for url, masked in [
                ('mysql+pymysql://u:pw@h/db', 'mysql+pymysql://u:***@h/db'),
                ('postgresql://u:p%40ss@h:5432/db?sslmode=require',
                 'postgresql://u:***@h:5432/db?sslmode=require'),
                ('https://admin:s3cret@ironic.example.org:6385/v1',
                 'https://admin:***@ironic.example.org:6385/v1'),
                ('mysql://u:a@b@h/db', 'mysql://u:***@h/db')]:
            self.assertEqual(masked, _urls.mask(url))

    def test_without_password(self):
        for url in ('sqlite:////var/lib/x.sqlite', 'http://h:6385',
                    'mysql://u@h/db', '', None):
            self.assertEqual(url, _urls.mask(url))

    def test_unparsable(self):
        self.assertEqual('<unparsable URL>', _urls.mask('http://[::1/x'))
