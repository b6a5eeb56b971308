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

"""Look at the shared state the way a service does, without joining it.

The CLI (``status``, ``ring``, ``check``, ``reserve``, ``takeover``)
reads the membership and the claims a running service would read, but
must never look like a live service: :func:`open_membership` opens the
configured backend without a heartbeat, and :func:`check_database` checks
a membership database without writing to it (not even creating an SQLite
file that does not exist yet).
"""

import os

from oslo_log import log as logging
from sqlalchemy.engine import url as sa_url

from ironic_partition._i18n import _
from ironic_partition.claims import manager as claims_mod
from ironic_partition import conf as ip_conf
from ironic_partition import exception
from ironic_partition.membership import base as membership_base

LOG = logging.getLogger(__name__)


def sqlite_file(connection):
    """The absolute path of a SQLite URL's file, or None for any other URL.

    :param connection: a SQLAlchemy URL.
    :returns: a path or None.
    """
    try:
        url = sa_url.make_url(connection)
    except Exception:
        return None
    if url.get_backend_name() != 'sqlite':
        return None
    path = url.database
    if not path or path == ':memory:' or path.startswith('file:'):
        return None
    return os.path.abspath(path)


def check_database(db):
    """Check, without writing, that a membership database is usable.

    :param db: a :class:`~ironic_partition.db.api.Connection`.
    :returns: the schema revision.
    :raises DatabaseConnectionFailed: it cannot be reached (an SQLite file
        that does not exist counts: no service has used it yet).
    :raises DatabaseNotMigrated: its schema is missing or old.
    :raises DatabaseTooNew: its schema is newer than this code.
    """
    path = sqlite_file(db.connection)
    if path is not None and not os.path.exists(path):
        raise exception.DatabaseConnectionFailed(
            connection=db.masked_connection,
            reason=_('the SQLite file %s does not exist: no service has '
                     'used this membership database yet (services create '
                     'it when they start)') % path)
    try:
        db.check()
        return db.ensure_schema(upgrade=False)
    except exception.MembershipError:
        raise
    except Exception as e:
        raise exception.DatabaseConnectionFailed.from_error(
            db.masked_connection, e)


def open_membership(settings, role):
    """Open the configured membership backend read-only.

    Nothing joins: the database backend is checked and read but sends no
    heartbeat, so a CLI run never looks like a live service. Its
    ``members()`` counts the peers that the live computes count from
    nova's service group, as they recorded them.

    :param settings: the :class:`~ironic_partition.settings.Settings`.
    :param role: the role whose services to read.
    :returns: a membership backend whose ``members()`` can be called.
    :raises MembershipError: the backend cannot be loaded or read.
    """
    name = settings.membership_backend
    if name == 'nova':
        raise exception.BackendNotSupported(
            backend=name,
            reason=_('nova\'s service group can only be read inside '
                     'nova-compute; the CLI reads the "database" and '
                     '"static" backends ([ironic_partition] '
                     'membership_backend)'))
    backend = membership_base.get_backend(settings, role)
    store = getattr(backend, 'store', None)
    if store is not None:
        check_database(store.db)
        # NOTE(ironic-partition): the peers the computes count from nova's
        # service group, as they recorded them: the ring they use.
        backend.count_recorded_outside = True
    else:
        backend.start()
    return backend


def close_membership(backend):
    """Release what :func:`open_membership` opened; never raises.

    :param backend: the backend, or None.
    :returns: None
    """
    if backend is None:
        return
    store = getattr(backend, 'store', None)
    try:
        if store is not None:
            store.dispose()
        else:
            backend.stop()
    except Exception:
        LOG.debug('Ignoring an error while closing the membership',
                  exc_info=True)


def read_members(backend, settings):
    """Read the membership of a partition, shard included.

    :param backend: a membership backend.
    :param settings: the :data:`~ironic_partition.conf.PartitionSettings`.
    :returns: a :class:`~ironic_partition.membership.base.Membership`.
    """
    peers = settings.peer_list if ip_conf.is_partitioned(settings) else None
    extra = {'shard': settings.shard} if settings.shard is not None else {}
    return backend.members(settings.partition_key, peers, **extra)


def claimed_by_others(settings, store, role, node_ids):
    """Read which nodes another service holds a valid claim on.

    For a consumer that hands nodes out without holding claims of its
    own (``ironic-partition reserve``): a node the ring gives this host
    may still be claimed by a peer, until its lease runs out.

    :param settings: the :class:`~ironic_partition.settings.Settings`
        (the claims mode and this host's name).
    :param store: the membership backend's store, or None.
    :param role: the role the claims are kept under.
    :param node_ids: node UUIDs.
    :returns: a frozenset of those validly claimed by another host;
        empty when claims are off.
    :raises MembershipError: the claims database cannot be read.
    """
    if store is None or not settings.claims_wanted(store):
        return frozenset()
    host = settings.host.lower()
    try:
        snapshot = store.claims.read_claims(role, node_ids=node_ids)
    except claims_mod.DATABASE_ERRORS as e:
        if isinstance(e, exception.MembershipError):
            raise
        raise exception.MembershipError(
            reason='cannot read the ownership claims: %s' % e) from e
    return frozenset(c.node_id for c in snapshot.claims
                     if c.valid and c.owner != host)
