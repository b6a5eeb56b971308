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

"""A service's settings, read and validated once from its configuration.

The one place settings are built. :func:`from_conf` reads every option a
running service uses in one pass, downwards: the options' own checks
(:mod:`ironic_partition.conf`, one check per kind of name in
:mod:`ironic_partition.names`), then the checks across options, here and
in :mod:`ironic_partition.settings.claims` (the claim timing against the
consumer's cadence). Every invalid value raises the one error,
:class:`~ironic_partition.exception.ConfigurationError`, naming the
option, the value and what is allowed.

The nova driver's mixin and ``cmd/`` call :func:`from_conf` at setup and
at each SIGHUP, and hand the frozen :class:`Settings` down to the
partitioner, the claims, the membership backend and the ring provider.
Nothing below them reads ``conf``. A reload whose options do not validate
raises, and the service keeps the :class:`Settings` it had (see
:meth:`ironic_partition.partition.partitioner.Partitioner.
reload_settings`).

The Ironic client is the one exception in shape, not in substance:
keystoneauth loads its auth plugin and session from the ``[ironic]``
options, so :func:`ironic_client` hands the client a connector that does
that on first use (Ironic may be down at start), built here.
"""

import dataclasses
import typing

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from openstack import connection as sdk_connection
from openstack import exceptions as sdk_exc
from oslo_config import cfg

from ironic_partition import _urls
from ironic_partition import conf as ip_conf
from ironic_partition.conf import database as database_conf
from ironic_partition.conf import ironic as ironic_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition.db import api as db_api
from ironic_partition import exception
from ironic_partition.ironic import baremetal
from ironic_partition import names
from ironic_partition.settings import claims as claim_settings


#: The ``[ironic_partition]`` options' defaults: :class:`Settings`' too.
_DEFAULTS = {opt.dest: opt.default for opt in partition_conf.opts}


@dataclasses.dataclass(frozen=True)
class DatabaseSettings:
    """``[ironic_partition_database]``: where membership and claims live.

    ``engine`` holds the oslo.db engine arguments as sorted pairs, so that
    the object stays hashable; :meth:`connect` builds the connection.
    """

    connection: str
    engine: tuple = ()

    def connect(self):
        """Open (lazily) the database these settings name.

        :returns: a :class:`~ironic_partition.db.api.Connection`.
        """
        return db_api.Connection(self.connection, **dict(self.engine))


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything below the entry points needs to know, validated.

    The partition settings (:data:`~ironic_partition.conf.
    PartitionSettings`) are also readable as attributes of their own
    (``host``, ``partition_key``, ``peer_list``, ``shard``), so a
    :class:`Settings` is accepted wherever partition settings are.
    """

    partition: ip_conf.PartitionSettings
    #: How the consumer refreshes (:data:`~ironic_partition.settings.
    #: claims.Cadence`): the agent's, or nova's.
    cadence: claim_settings.Cadence
    membership_backend: str = _DEFAULTS['membership_backend']
    heartbeat_interval: int = _DEFAULTS['heartbeat_interval']
    service_down_time: int = _DEFAULTS['service_down_time']
    membership_stale_timeout: int = _DEFAULTS['membership_stale_timeout']
    claims_mode: str = _DEFAULTS['claims']
    #: Unset (None): computed from the cadence, see :meth:`claims`.
    lease_time: typing.Optional[int] = _DEFAULTS['lease_time']
    fencing_margin: typing.Optional[float] = _DEFAULTS['fencing_margin']
    #: Whether an operator chose one of the timing options (the lease
    #: warning is only worth it then).
    timing_chosen: bool = False
    ring_provider: str = _DEFAULTS['ring_provider']
    ring_mode: str = _DEFAULTS['ring_mode']
    partition_exponent: int = _DEFAULTS['partition_exponent']
    full_resync_interval: int = _DEFAULTS['full_resync_interval']
    change_feed_overlap: int = _DEFAULTS['change_feed_overlap']
    hand_over_on_stop: typing.Optional[bool] = _DEFAULTS['hand_over_on_stop']
    #: Database nodes whose inherited clock levels are not taken over.
    forget_database_clocks: typing.Tuple[str, ...] = ()
    allocation_timeout: int = _DEFAULTS['allocation_timeout']
    #: None: no metrics served.
    metrics_port: typing.Optional[int] = _DEFAULTS['metrics_port']
    metrics_host: str = _DEFAULTS['metrics_host']
    #: None only for :func:`for_tests` settings without a ``conf``.
    database: typing.Optional[DatabaseSettings] = None

    @property
    def host(self):
        """This service's own lower-cased host name."""
        return self.partition.host

    @property
    def partition_key(self):
        """The conductor group, ``None`` when unset."""
        return self.partition.partition_key

    @property
    def peer_list(self):
        """The lower-cased peer host names."""
        return self.partition.peer_list

    @property
    def shard(self):
        """The lower-cased Ironic shard, ``None`` when unset."""
        return self.partition.shard

    def claims_wanted(self, store):
        """Whether claims are on for these settings and a store.

        :param store: the membership backend's :class:`~ironic_partition.
            db.store.Store`, or None when it keeps no database.
        :returns: True for ``claims = database``, or ``auto`` with a
            backend that keeps a database.
        """
        return claim_settings.wanted(self.claims_mode, store)

    def claims(self):
        """The claim timings, resolved against the cadence and validated.

        :returns: a
            :data:`~ironic_partition.settings.claims.ClaimSettings`.
        :raises ConfigurationError: see :func:`~ironic_partition.settings.
            claims.resolve`.
        """
        return claim_settings.resolve(self)

    def replace(self, **changes):
        """A copy with some fields changed (tests, tools).

        :returns: a new :class:`Settings`.
        """
        return dataclasses.replace(self, **changes)


#: The options whose choice by an operator makes a long lease worth a
#: warning.
_TIMING_OPTIONS = ('lease_time', 'fencing_margin', 'service_down_time',
                   'refresh_interval')


def _timing_chosen(conf):
    defaults = (cfg.Locations.opt_default, cfg.Locations.set_default)
    for name in _TIMING_OPTIONS:
        # NOTE(ironic-partition): None before the configuration is parsed.
        where = conf.get_location(name, partition_conf.GROUP)
        if where is not None and where.location not in defaults:
            return True
    return False


def database_settings(conf):
    """Read ``[ironic_partition_database]``.

    :param conf: a ``ConfigOpts``; the options are registered if needed
        (their default is a SQLite file under ``state_path``).
    :returns: a :class:`DatabaseSettings`.
    """
    if database_conf.GROUP not in conf:
        database_conf.register_opts(conf)
    group = conf[database_conf.GROUP]
    return DatabaseSettings(
        group.connection, tuple(sorted(db_api.engine_kwargs(group).items())))


def _database_nodes(values, option):
    """Check a list of database nodes (``host:port``).

    :param values: the option's value.
    :param option: its name, for the error.
    :returns: a tuple of the nodes, lower-cased.
    :raises ConfigurationError: naming the option and the bad value.
    """
    nodes = set()
    for value in values:
        try:
            nodes.add(names.check_database_node(value))
        except ValueError as exc:
            raise exception.ConfigurationError(
                group=partition_conf.GROUP, option=option, value=value,
                reason=str(exc))
    return tuple(sorted(nodes))


def from_conf(conf, cadence=None, partition=None, lenient=False):
    """Read and validate every option a service runs with.

    :param conf: a ``ConfigOpts`` with our options registered (and perhaps
        nova's).
    :param cadence: the consumer's :data:`~ironic_partition.settings.
        claims.Cadence`; the agent's by default.
    :param partition: the partition settings, when the caller has read
        them already.
    :param lenient: skip the checks across options (a report on a
        configuration that already failed them).
    :returns: a :class:`Settings`.
    :raises ConfigurationError: for the first invalid value, naming the
        option, the value and what is allowed.
    """
    if partition is None:
        partition = ip_conf.get_settings(conf)
    group = conf[partition_conf.GROUP]
    if (not lenient and
            group.heartbeat_interval >= group.service_down_time):
        raise exception.ConfigurationError(
            group=partition_conf.GROUP, option='heartbeat_interval',
            value=group.heartbeat_interval, reason=(
                'it must be smaller than [ironic_partition] '
                'service_down_time (%d), or every peer would look dead '
                'between two heartbeats' % group.service_down_time))
    return Settings(
        partition=partition,
        cadence=cadence if cadence is not None else
        claim_settings.agent_cadence(group.refresh_interval),
        membership_backend=group.membership_backend,
        heartbeat_interval=group.heartbeat_interval,
        service_down_time=group.service_down_time,
        membership_stale_timeout=group.membership_stale_timeout,
        claims_mode=group.claims,
        lease_time=group.lease_time,
        fencing_margin=group.fencing_margin,
        timing_chosen=_timing_chosen(conf),
        ring_provider=group.ring_provider,
        ring_mode=group.ring_mode,
        partition_exponent=group.partition_exponent,
        full_resync_interval=group.full_resync_interval,
        change_feed_overlap=group.change_feed_overlap,
        hand_over_on_stop=group.hand_over_on_stop,
        forget_database_clocks=_database_nodes(
            group.forget_database_clocks, 'forget_database_clocks'),
        allocation_timeout=group.allocation_timeout,
        metrics_port=group.metrics_port,
        metrics_host=group.metrics_host,
        database=database_settings(conf))


def for_tests(host='compute-1', partition_key=None, peer_list=(),
              shard=None, cadence=None, conf=None, **fields):
    """Settings for one of several services in a process (tests, benchmarks).

    :param host: this service's host name.
    :param partition_key: the conductor group, or None.
    :param peer_list: the peers.
    :param shard: the shard, or None.
    :param cadence: the consumer's cadence; the agent's of ``conf``, or
        of a 60 s ``refresh_interval`` without one.
    :param conf: a ``ConfigOpts`` to read the other options from (not
        validated); the options' defaults without one.
    :param fields: any other :class:`Settings` field.
    :returns: a :class:`Settings`.
    """
    partition = ip_conf.PartitionSettings(
        partition_key, tuple(ip_conf.normalize_host(p) for p in peer_list),
        ip_conf.normalize_host(host), shard)
    if conf is not None:
        settings = from_conf(conf, cadence, partition=partition,
                             lenient=True)
    else:
        settings = Settings(
            partition=partition,
            cadence=cadence or claim_settings.agent_cadence(60))
    return settings.replace(**fields)


def _ironic_endpoint(conf):
    group = conf[ironic_conf.GROUP]
    override = (group.endpoint_override
                if 'endpoint_override' in group else None)
    if override:
        return _urls.mask(override)
    return 'the baremetal endpoint of the service catalog'


def ironic_connector(conf):
    """A callable that builds the openstacksdk connection from ``[ironic]``.

    keystoneauth reads its auth plugin and session options from ``conf``
    itself; this is the one place it does.

    :param conf: a ``ConfigOpts`` with the keystoneauth options in
        ``[ironic]`` (see :func:`ironic_partition.conf.ironic.
        register_ksa_opts`).
    :returns: ``(connect, endpoint)``: ``connect()`` returns an
        ``openstack.connection.Connection`` or raises
        :class:`~ironic_partition.exception.IronicUnavailable`;
        ``endpoint`` describes the endpoint for messages (masked).
    """
    endpoint = _ironic_endpoint(conf)

    def connect():
        try:
            auth = ks_loading.load_auth_from_conf_options(
                conf, ironic_conf.GROUP)
            session = ks_loading.load_session_from_conf_options(
                conf, ironic_conf.GROUP, auth=auth)
            # NOTE(ironic-partition): only the baremetal service; with
            # nova's CONF the SDK would otherwise try (and warn about)
            # every service nova has options for.
            return sdk_connection.Connection(
                session=session, oslo_conf=conf,
                service_types={'baremetal'})
        except (ks_exc.ClientException, sdk_exc.SDKException) as e:
            raise exception.IronicUnavailable(endpoint=endpoint, reason=e)
    return connect, endpoint


def ironic_client(conf, **kwargs):
    """An Ironic client configured by ``[ironic]``.

    :param conf: see :func:`ironic_connector`.
    :param kwargs: more
        :class:`~ironic_partition.ironic.baremetal.IronicClient` arguments.
    :returns: an :class:`~ironic_partition.ironic.baremetal.IronicClient`.
    """
    connect, endpoint = ironic_connector(conf)
    return baremetal.IronicClient(connect=connect, endpoint=endpoint,
                                  **kwargs)
