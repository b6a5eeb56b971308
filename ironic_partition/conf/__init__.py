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

"""Registering, reading and validating ironic-partition's options.

Nothing is registered at import. :func:`register_opts` registers on the
``ConfigOpts`` it is given; :func:`get_settings` reads the partition settings
at the moment of use, normalised and validated.
"""

import collections
import socket
import warnings

from oslo_config import cfg

from ironic_partition._i18n import _
from ironic_partition.conf import database
from ironic_partition.conf import ironic
from ironic_partition.conf import partition
from ironic_partition import exception
from ironic_partition import names

#: What :func:`get_settings` returns.
#:
#: ``partition_key`` is ``None`` (partitioning off) or a lower-cased
#: conductor group, ``""`` being Ironic's default group. ``peer_list`` is a
#: tuple of lower-cased, unique host names in the order written. ``host``
#: is this service's own lower-cased host name. ``shard`` is ``None`` (no
#: shard filter) or a lower-cased Ironic shard name: the partition is the
#: pair ``(partition_key, shard)``.
PartitionSettings = collections.namedtuple(
    'PartitionSettings', ['partition_key', 'peer_list', 'host', 'shard'],
    defaults=(None,))


def _has_opt(conf, group, name):
    return group in conf and name in conf[group]


def nova_owns_ironic_opts(conf):
    """Whether nova registered the ``[ironic]`` options on this conf.

    nova registers ``[ironic] conductor_group`` (deprecated name
    ``partition_key``) and ``peer_list``. Ours register ``partition_key``
    as the option name, so its presence tells the two apart.

    :param conf: an oslo.config ``ConfigOpts``.
    :returns: ``True`` inside nova-compute (or any process that registered
        nova's options first).
    """
    return (_has_opt(conf, ironic.GROUP, 'conductor_group')
            and not _has_opt(conf, ironic.GROUP, 'partition_key'))


def register_opts(conf):
    """Register every ironic-partition option on ``conf``.

    Safe to call more than once. When nova's ``[ironic]`` options are
    already registered, they are left as they are and read instead of ours,
    so no ``DuplicateOptError`` is raised. keystoneauth's options for
    reaching Ironic are registered in ``[ironic]`` likewise.

    :param conf: an oslo.config ``ConfigOpts``.
    """
    if not nova_owns_ironic_opts(conf):
        conf.register_opts(ironic.opts, group=ironic.GROUP)
    ironic.register_ksa_opts(conf)
    conf.register_opts(partition.opts, group=partition.GROUP)
    database.register_opts(conf)


#: nova's ``[DEFAULT] host``, read by the operator tools when they
#: describe a nova-compute; nova registers it with the machine's host name
#: as default, which :func:`get_host` falls back to.
_NOVA_HOST_OPT = cfg.StrOpt(
    'host',
    help=_('nova-compute\'s own host name, read from nova.conf when a '
           'command describes a nova-compute service ([ironic_partition] '
           'host overrides it).'))


#: nova's ``[DEFAULT] service_down_time``, read by the operator tools
#: when they describe a nova-compute, as nova registers it.
_NOVA_DOWN_TIME_OPT = cfg.IntOpt(
    'service_down_time', default=60,
    help=_('nova\'s own service_down_time, which [ironic_partition] '
           'service_down_time follows inside nova-compute when unset.'))


def follow_nova_service_down_time(conf):
    """Inside nova, one ``service_down_time`` unless ours is set.

    nova-compute has ``[DEFAULT] service_down_time`` (nova's service
    group) and ``[ironic_partition] service_down_time`` (the membership
    database, the wait for a previous process, the automatic lease):
    when ours is not set in a file, it takes nova's value, so that one
    setting governs both. Call after the files are parsed.

    :param conf: nova's ``ConfigOpts`` (or a tool's, reading nova.conf),
        our options registered.
    :returns: None
    """
    if 'service_down_time' not in conf:
        return
    location = conf.get_location('service_down_time', partition.GROUP)
    if location is not None and location.location not in (
            cfg.Locations.opt_default, cfg.Locations.set_default):
        return
    conf.set_default('service_down_time', conf.service_down_time,
                     group=partition.GROUP)


def register_nova_host_opt(conf):
    """Read ``[DEFAULT] host`` from the files, as nova-compute does.

    The operator tools call this when they describe a nova-compute, so
    that they name the service as it names itself (``host = compute-1``
    in nova.conf, kolla's ``<group>-<shard>-ironic``), never the machine
    they run on. An agent (``ironic-partition serve``) keeps its own
    identity: ``[ironic_partition] host``, else the machine's name.

    Safe to call more than once, and where nova already registered it.

    :param conf: an oslo.config ``ConfigOpts``, parsed or not.
    :returns: None
    """
    if 'host' not in conf:
        conf.register_opt(_NOVA_HOST_OPT)
    if 'service_down_time' not in conf:
        conf.register_opt(_NOVA_DOWN_TIME_OPT)


def normalize_host(host):
    """The canonical form of a host name: stripped and lower-cased.

    Every comparison of host names (peer lists, heartbeats, ring members)
    goes through this, so a change of case never splits a host in two.

    :param host: a host name.
    :returns: the host name, stripped and in lower case.
    """
    return host.strip().lower()


def get_host(conf):
    """This service's own host name, lower-cased.

    :param conf: a ``ConfigOpts`` with our options registered.
    :returns: ``[ironic_partition] host``, else ``[DEFAULT] host`` if that
        option exists, else the machine's host name.
    """
    host = conf[partition.GROUP].host
    if not host and 'host' in conf:
        host = conf.host
    return normalize_host(host or socket.gethostname())


def config_error(option, value, reason, group=ironic.GROUP):
    """Deprecated: raise ``ConfigurationError`` with its keywords instead.

    Every configuration error is built by
    :class:`~ironic_partition.exception.ConfigurationError` itself, with
    ``group``, ``option``, ``value`` and ``reason``; this alias stays for
    one release and is not used by the package.

    :returns: a :class:`~ironic_partition.exception.ConfigurationError`.
    """
    warnings.warn('ironic_partition.conf.config_error is deprecated: '
                  'build exception.ConfigurationError(group=, option=, '
                  'value=, reason=)', DeprecationWarning, stacklevel=2)
    return exception.ConfigurationError(
        group=group, option=option, value=value, reason=reason)


def normalize_partition_key(value, option='partition_key'):
    """Validate and lower-case a conductor group name.

    :param value: ``None`` or a string.
    :param option: the option name to blame in an error.
    :returns: ``None`` or the lower-cased group.
    :raises ConfigurationError: naming the option, the value and what is
        allowed.
    """
    return _normalized(value, names.check_conductor_group, option)


def _normalized(value, check, option):
    if value is None:
        return None
    try:
        check(value)
    except ValueError as e:
        raise exception.ConfigurationError(
            group=ironic.GROUP, option=option, value=value, reason=str(e))
    return names.key(value)


def normalize_peer_list(values, option='peer_list'):
    """Trim, lower-case and de-duplicate a list of host names.

    :param values: an iterable of strings.
    :param option: the option name to blame in an error.
    :returns: a tuple of unique host names in the order first written.
    :raises ConfigurationError: for an empty or malformed name.
    """
    seen = {}
    for value in values or ():
        try:
            host = normalize_host(names.check_host(value))
        except ValueError as e:
            raise exception.ConfigurationError(
                group=ironic.GROUP, option=option, value=list(values),
                reason=str(e))
        seen.setdefault(host, None)
    return tuple(seen)


def normalize_shard(value, option='shard'):
    """Validate and lower-case an Ironic shard name.

    Ironic lower-cases the names of its ``shard`` list filter, so the
    lower-cased name is the one that selects nodes.

    :param value: ``None`` or a string.
    :param option: the option name to blame in an error.
    :returns: ``None`` or the lower-cased shard.
    :raises ConfigurationError: naming the option, the value and what is
        allowed.
    """
    return _normalized(value, names.check_shard, option)


def _read_shard(conf):
    # NOTE(ironic-partition): nova registers [ironic] shard itself (a
    # StrOpt with the same rules); ours is registered where nova is not.
    group = conf[ironic.GROUP]
    if 'shard' not in group:
        return None
    return normalize_shard(group.shard)


def describe_partition(settings):
    """The partition of some settings, for log lines.

    :param settings: a :data:`PartitionSettings`.
    :returns: the conductor group, followed by the shard when one is set.
    """
    if settings.shard is None:
        return repr(settings.partition_key)
    return '%r shard %r' % (settings.partition_key, settings.shard)


def is_partitioned(settings):
    """Whether a service is confined to a partition of the fleet.

    :param settings: a :data:`PartitionSettings`.
    :returns: True when a conductor group or a shard is set; then only
        the services of ``peer_list`` (and this one) share its nodes.
    """
    return settings.partition_key is not None or settings.shard is not None


def _read_partition_key(conf):
    group = conf[ironic.GROUP]
    if nova_owns_ironic_opts(conf):
        return normalize_partition_key(group.conductor_group,
                                       option='conductor_group')
    key = normalize_partition_key(group.partition_key)
    alias = normalize_partition_key(group.conductor_group,
                                    option='conductor_group')
    if key is None:
        return alias
    if alias is not None and alias != key:
        raise exception.ConflictingOptions(
            group=ironic.GROUP, option='partition_key',
            value=group.partition_key, other='conductor_group',
            other_value=group.conductor_group)
    return key


def get_settings(conf):
    """Read, normalise and validate the partition settings.

    Reads at the moment of use, so a SIGHUP that changed the (mutable)
    options is seen by the next call.

    :param conf: a ``ConfigOpts`` with our options registered (and perhaps
        nova's).
    :returns: a :data:`PartitionSettings`.
    :raises ConfigurationError: for any invalid value, naming the option,
        the value and what is allowed.
    :raises InvalidPeerList: when partition_key is set and peer_list does
        not contain this service's host.
    """
    key = _read_partition_key(conf)
    shard = _read_shard(conf)
    peers = normalize_peer_list(conf[ironic.GROUP].peer_list)
    host = get_host(conf)
    if shard is not None:
        # NOTE(ironic-partition): nova 34 with a shard manages the shard
        # alone, whatever conductor_group and peer_list say; so does this
        # service without peer_list. With peer_list, its services share
        # the shard, and this service must be one of them.
        if peers and host not in peers:
            raise exception.InvalidShardPeerList(
                peer_list=list(peers), host=host, shard=shard)
    elif key is not None:
        if not peers:
            raise exception.ConfigurationError(
                group=ironic.GROUP, option='peer_list', value=[],
                reason='it is empty while [ironic] partition_key is %r; list '
                'every service managing that group, including this host '
                '%r' % (key, host))
        if host not in peers:
            raise exception.InvalidPeerList(
                peer_list=list(peers), host=host, partition_key=key)
    return PartitionSettings(key, peers, host, shard)


def _config_sources(conf):
    files, dirs = [], []
    for name, out in (('config_file', files), ('config_dir', dirs)):
        try:
            out.extend(conf[name] or ())
        except cfg.NoSuchOptError:
            pass
    return files, dirs


def reread_immutable_options(conf, apply=True):
    """Re-read the immutable partition options from the config files.

    oslo.config's ``mutate_config_files`` (SIGHUP) only changes options
    registered as mutable. nova 34 registers ``[ironic] peer_list`` and
    ``shard`` without ``mutable=True``, and ours registers ``shard`` the
    same way, so a SIGHUP would leave their old values in force without a
    word. This reads them again from the same config files and
    directories into a private ``ConfigOpts`` and applies them to ``conf``
    as overrides: inside nova-compute ``partition_key`` and ``peer_list``
    then follow the files on every SIGHUP like the other options, and a
    changed ``shard`` reaches :meth:`~ironic_partition.partition.partitioner.
    Partitioner.reload_settings`, which refuses it (a shard change needs
    a restart).

    With our own (mutable) ``partition_key`` and ``peer_list``, only
    ``shard`` is re-read, and only when the service was started from
    config files.

    :param conf: the service's ``ConfigOpts``.
    :param apply: False only reads and checks the files (at start: nova
        silently uses one of ``partition_key`` and ``conductor_group``
        when both are set); nothing is overridden.
    :returns: a dict of the option names whose value changed to their new
        value (empty when nothing changed, nothing was re-read, or the
        configuration has no files).
    :raises ConfigurationError: when the files cannot be parsed, or hold
        an invalid value; ``conf`` is left unchanged then.
    """
    nova = nova_owns_ironic_opts(conf)
    files, dirs = _config_sources(conf)
    if not files and not dirs:
        return {}
    fresh = cfg.ConfigOpts()
    fresh.register_opts(ironic.opts, group=ironic.GROUP)
    try:
        fresh(args=[], project=conf.project, prog=conf.prog,
              default_config_files=files, default_config_dirs=dirs,
              use_env=False)
        # NOTE(ironic-partition): validated here, kept as written.
        raw_shard = fresh[ironic.GROUP].shard
        normalize_shard(raw_shard)
        values = {'shard': raw_shard}
        if nova:
            values.update({
                'conductor_group': _read_partition_key(fresh),
                'peer_list': list(fresh[ironic.GROUP].peer_list or ())})
    except exception.ConflictingOptions:
        # NOTE(ironic-partition): already names both options and values.
        raise
    except (cfg.Error, ValueError, exception.ConfigurationError) as e:
        raise exception.ConfigurationError(
            message='Cannot re-read [%s] %s from %s: %s' % (
                ironic.GROUP, ', '.join(
                    ['partition_key', 'peer_list', 'shard'] if nova
                    else ['shard']),
                ', '.join(files + dirs), e))
    if not apply:
        return {}
    changed = {}
    for name, value in values.items():
        if name not in conf[ironic.GROUP]:
            continue
        current = conf[ironic.GROUP][name]
        if name in ('conductor_group', 'shard') and current is not None:
            current = current.lower()
        if name == 'peer_list':
            current = list(current or ())
        compared = (value.lower() if name == 'shard' and value is not None
                    else value)
        if current != compared:
            changed[name] = value
        conf.set_override(name, value, group=ironic.GROUP)
    return changed
