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

"""Deprecated name of :mod:`ironic_partition.settings.claims`.

The claim timing moved into the settings package, where a service's
settings are built; this name is the same module object and stays for one
release.
"""

from ironic_partition import _moved
from ironic_partition.settings import claims

_moved.alias(__name__, claims)
