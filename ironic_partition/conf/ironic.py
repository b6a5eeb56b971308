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

"""Options of the ``[ironic]`` group: partition_key, peer_list and shard.

The first two are the options nova's specification (seed 000) defines;
``shard`` is nova's ``[ironic] shard`` (Ironic API 1.82). Inside
nova-compute, nova registers its own ``[ironic] conductor_group`` (with the
deprecated name ``partition_key``), ``peer_list`` and ``shard``; then
:func:`ironic_partition.conf.register_opts` leaves nova's definitions in
place, and :func:`ironic_partition.conf.get_settings` reads them, so what an
operator writes in nova.conf is what this plugin uses.
"""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_config import types

from ironic_partition._i18n import _
from ironic_partition import names

GROUP = 'ironic'


class ConductorGroup(types.String):
    """An oslo.config type for an Ironic conductor group name."""

    def __init__(self):
        super().__init__(type_name='conductor group')

    def __call__(self, value):
        return names.check_conductor_group(super().__call__(value))


class ShardName(types.String):
    """An oslo.config type for an Ironic shard name."""

    def __init__(self):
        super().__init__(type_name='shard')

    def __call__(self, value):
        return names.check_shard(super().__call__(value))


class HostName(types.String):
    """An oslo.config type for one compute service host name."""

    def __init__(self):
        super().__init__(type_name='host name')

    def __call__(self, value):
        return names.check_host(super().__call__(value))


partition_key = cfg.Opt(
    'partition_key',
    type=ConductorGroup(),
    default=None,
    mutable=True,
    help=_('Case-insensitive Ironic conductor group whose nodes this '
           'service manages. Nodes are listed from Ironic filtered by '
           'this group, and shared among the services in peer_list with '
           'a consistent hash ring. Unset (the default) disables '
           'partitioning: every node is eligible and every live service '
           'of the same role is a peer. The empty string ("") means '
           'Ironic\'s default group, which is not the same as unset. '
           'Allowed: ' + names.ALPHABET + ', at most 255 characters. '
           'A change takes effect on SIGHUP at the next refresh.'))

conductor_group = cfg.Opt(
    'conductor_group',
    type=ConductorGroup(),
    default=None,
    mutable=True,
    help=_('Alias of partition_key: nova\'s newer name for the same '
           'setting. Set one or the other; if both are set they must be '
           'equal (ignoring case).'))

peer_list = cfg.ListOpt(
    'peer_list',
    item_type=HostName(),
    default=[],
    mutable=True,
    help=_('Host names of every service that manages the conductor group '
           'named by partition_key, including this service\'s own host. '
           'Names are trimmed and compared ignoring case; duplicates are '
           'collapsed. Peers that have not heartbeated within '
           '[ironic_partition] service_down_time are left out of the ring '
           'until they come back. Ignored when neither partition_key nor '
           'shard is set. '
           'A change takes effect on SIGHUP at the next refresh.'))

shard = cfg.Opt(
    'shard',
    type=ShardName(),
    default=None,
    help=_('Ironic shard (API 1.82) whose nodes this service manages, as '
           'nova\'s own [ironic] shard. Nodes are listed from Ironic '
           'filtered by this shard and, when partition_key is set, by '
           'that conductor group as well: the partition is the pair '
           '(conductor group, shard). Without peer_list, this service '
           'manages every node of the partition alone, as nova does for '
           'a shard; with peer_list, the listed services share the '
           'shard\'s nodes with a hash ring and ownership claims. '
           'Allowed: ' + names.ALPHABET + ', at most 255 characters; '
           'Ironic lower-cases the name it filters on. Unset (the '
           'default): no shard filter. A change needs a restart: a SIGHUP '
           'that changes it is refused and the old shard kept.'))

opts = [partition_key, conductor_group, peer_list, shard]

#: keystoneauth's defaults for reaching Ironic, as nova sets them.
KSA_DEFAULTS = {'service_type': 'baremetal',
                'valid_interfaces': ['internal', 'public']}


def ksa_opts():
    """keystoneauth's options for reaching Ironic (session, auth, adapter).

    :returns: a list of options of the ``[ironic]`` group.
    """
    return (ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_adapter_conf_options(include_deprecated=False))


def set_ksa_defaults(conf):
    """Set the defaults of :data:`KSA_DEFAULTS` on registered options.

    Also the ``oslo.config.opts.defaults`` hook, so that the sample config
    and the docs show the defaults the service runs with.

    :param conf: an oslo.config ``ConfigOpts``.
    """
    for name, value in KSA_DEFAULTS.items():
        conf.set_default(name, value, group=GROUP)


def register_ksa_opts(conf):
    """Register keystoneauth's options for reaching Ironic in ``[ironic]``.

    Skipped where nova already registered them (nova-compute).

    :param conf: an oslo.config ``ConfigOpts``.
    """
    if GROUP in conf and 'auth_type' in conf[GROUP]:
        return
    ks_loading.register_session_conf_options(conf, GROUP)
    ks_loading.register_auth_conf_options(conf, GROUP)
    ks_loading.register_adapter_conf_options(conf, GROUP,
                                             include_deprecated=False)
    set_ksa_defaults(conf)
