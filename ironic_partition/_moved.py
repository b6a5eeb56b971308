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

"""Deprecated module names that stay, for a release, as the moved modules."""

import sys
import warnings


def alias(old_name, module):
    """Make the module named ``old_name`` the moved module, with a warning.

    :param old_name: the deprecated module's ``__name__``.
    :param module: the module it moved to, imported.
    :returns: None
    """
    warnings.warn('%s is deprecated: import %s' % (old_name, module.__name__),
                  DeprecationWarning, stacklevel=3)
    sys.modules[old_name] = module
