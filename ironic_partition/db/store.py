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

"""One store: a process's database and its identity in it.

A service keeps its services row and its ownership claims in one
membership database, under one identity (:class:`~ironic_partition.
identity.Identity`). A :class:`Store` holds both, and is given to the
membership backend and to the claims (:class:`~ironic_partition.claims.manager.
ClaimManager`) alike, so that they share one connection pool and one
incarnation. Whoever builds the store decides who registers the identity
and heartbeats it: the ``database`` membership backend, or the claims
when the membership backend keeps no database (``nova``, ``static``).
"""

from ironic_partition.conf import database as database_conf
from ironic_partition.db import identity as identity_mod
from ironic_partition import exception


class Store(object):
    """A membership database and this process's identity in it.

    :param db: an :class:`ironic_partition.db.api.Connection`.
    :param identity: this process's :class:`~ironic_partition.db.identity.
        Identity` in ``db``, or None (read-only use, tests).
    """

    def __init__(self, db, identity=None):
        #: The :class:`~ironic_partition.db.api.Connection`.
        self.db = db
        #: This process's :class:`~ironic_partition.db.identity.Identity`,
        #: or None.
        self.identity = identity

    @classmethod
    def open(cls, settings, role, takeover=False, connection=None):
        """Open the store of a process, with its identity.

        :param settings: the service's :class:`~ironic_partition.settings.
            Settings`: its database, host name and ``service_down_time``
            (after which a silent holder of the host name counts as
            dead).
        :param role: this service's role.
        :param takeover: replace a live holder of the host name at start.
        :param connection: a :class:`~ironic_partition.db.api.Connection`
            to use instead of the settings' database (tests, benchmarks).
        :returns: a :class:`Store` with an identity.
        :raises ConfigurationError: when no database is configured.
        """
        if connection is None:
            if settings.database is None:
                raise exception.ConfigurationError(
                    group=database_conf.GROUP, option='connection',
                    value=None, reason='no database options are '
                    'registered for this service')
            connection = settings.database.connect()
        return cls(connection, identity_mod.Identity(
            connection, settings.host, role, settings.service_down_time,
            takeover=takeover))

    @property
    def services(self):
        """The services rows, a :class:`~.services.ServicesAPI`."""
        return self.db.services

    @property
    def claims(self):
        """The claims rows, a :class:`~.claims.ClaimsAPI`."""
        return self.db.claims

    @property
    def masked_connection(self):
        """The database URL, password hidden, for messages."""
        return self.db.masked_connection

    @property
    def dialect(self):
        """The database dialect's name, e.g. ``sqlite``."""
        return self.db.dialect

    @property
    def stats(self):
        """The database's statement counters."""
        return self.db.stats

    def ensure_schema(self, upgrade=True):
        """Check the schema, upgrading an embedded SQLite database.

        :param upgrade: False only checks.
        :returns: the schema revision.
        :raises: see :meth:`ironic_partition.db.api.Connection.
            ensure_schema`.
        """
        return self.db.ensure_schema(upgrade=upgrade)

    def dispose(self):
        """Close the database's pooled connections.

        :returns: None
        """
        self.db.dispose()
