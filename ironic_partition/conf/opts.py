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

"""Option listing for oslo-config-generator and the sphinx extension.

Registered as the ``ironic_partition`` entry point of the
``oslo.config.opts`` namespace. Nothing is registered at import.
"""

import copy

from oslo_config import cfg

from ironic_partition.conf import database
from ironic_partition.conf import ironic
from ironic_partition.conf import partition


def list_opts():
    """Every ironic-partition option, by group.

    :returns: a list of ``(group name, [options])`` tuples.
    """
    return [
        (ironic.GROUP, copy.deepcopy(ironic.opts)
         + _KSA_OPTS),
        (partition.GROUP, copy.deepcopy(partition.opts)),
    ] + database.list_opts()


_KSA_OPTS = ironic.ksa_opts()


def update_opt_defaults():
    """The ``oslo.config.opts.defaults`` hook: the defaults we run with.

    oslo-config-generator and ``oslo_config.sphinxext`` call it before
    rendering, so the sample config and the reference show
    ``service_type = baremetal`` rather than ``<None>``, as the service
    sets at registration (:func:`ironic_partition.conf.ironic.
    register_ksa_opts`).
    """
    cfg.set_defaults(_KSA_OPTS, **ironic.KSA_DEFAULTS)
