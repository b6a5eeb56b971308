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

"""The one place that talks to Ironic.

Everything goes through an openstacksdk ``Connection`` and its baremetal
proxy (the same session, authentication, endpoint discovery and
microversion handling as the rest of OpenStack). Node lists are read as
JSON pages through that proxy and kept as slim :class:`Node` records:
building a full SDK ``Node`` resource per node costs about 1 ms, which is
most of the time nova spends listing a large fleet.

Every SDK, keystoneauth and transport error is turned into
:class:`~ironic_partition.exception.IronicUnavailable` or
:class:`~ironic_partition.exception.IronicRequestError`: callers never see
a raw keystoneauth exception, and never get an empty or partial list
instead of an error.
"""

from concurrent import futures
import datetime
import email.utils
import operator
import sys
import threading
import time
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from openstack import exceptions as sdk_exc
from oslo_log import log as logging
import requests

from ironic_partition.common import executor as executor_mod
from ironic_partition.common import prefetch
from ironic_partition import exception

LOG = logging.getLogger(__name__)

#: Conductor groups: the ``conductor_group`` filter and field.
MIN_MICROVERSION = '1.46'
#: The ``conductor`` field of a node.
CONDUCTOR_MICROVERSION = '1.49'
#: Shards: the ``shard`` filter and field.
SHARD_MICROVERSION = '1.82'

#: The fields every refresh asks for: what the ownership rules need plus
#: what nova's resource tracker reads from its node cache.
NODE_FIELDS = ('uuid', 'instance_uuid', 'conductor_group', 'driver',
               'power_state', 'target_power_state', 'provision_state',
               'target_provision_state', 'last_error', 'maintenance',
               'properties', 'traits', 'resource_class')

DEFAULT_PAGE_SIZE = 1000

#: The most ``GET /v1/nodes?instance_uuid=`` look-ups run at once.
LOOKUP_WORKERS = 8

#: Workers of a client's executor (:attr:`IronicClient.executor`). A
#: refresh needs at most four at once (two concurrent reads of the change
#: feed, or a listing with its page prefetch and the watermark read), a
#: look-up of instances :data:`LOOKUP_WORKERS`: the rest is headroom for a
#: reservation listing at the same time. Workers start on demand.
EXECUTOR_WORKERS = 16

# API name -> attribute name, following openstacksdk's renames so that code
# written against SDK ``Node`` objects (nova's driver) can read a record.
_RENAMES = {'uuid': 'id', 'instance_uuid': 'instance_id',
            'maintenance': 'is_maintenance'}
_SHARED_STRINGS = ('conductor_group', 'driver', 'power_state',
                   'target_power_state', 'provision_state',
                   'target_provision_state', 'resource_class', 'shard')


class Record(object):
    """A slim, read-only record with ``__slots__`` and an ``id``.

    Subclasses list their fields in ``__slots__``; fields not given are
    ``None``. Records compare equal field by field and hash by ``id``.
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # NOTE(ironic-partition): every field at once, as a tuple: a full
        # listing compares each node with the one it holds.
        cls._values = (operator.attrgetter(*cls.__slots__) if cls.__slots__
                       else lambda record: ())

    def __init__(self, **fields):
        for name in self.__slots__:
            object.__setattr__(self, name, fields.get(name))

    @property
    def uuid(self):
        """The UUID (API name of ``id``)."""
        return self.id

    def __setattr__(self, name, value):
        raise AttributeError('%s records are read-only'
                             % type(self).__name__)

    def __eq__(self, other):
        return self is other or (isinstance(other, type(self)) and
                                 self._values(self) == self._values(other))

    def __hash__(self):
        return hash(self.id)


_SHARED_VALUES = ('properties', 'traits')
#: Distinct properties and traits values kept for sharing; past it, new
#: values are no longer shared (memory stays bounded on a fleet where
#: every node differs).
_SHARED_MAX = 4096
_shared = {}


def _share(value):
    """One copy of equal ``properties`` dicts or ``traits`` lists.

    The records are read-only, so equal values can be one object.

    :param value: a dict or list decoded from JSON.
    :returns: an equal value, possibly one seen before.
    """
    try:
        if isinstance(value, dict):
            key = (dict, tuple(sorted(value.items())))
        else:
            key = (list, tuple(value))
        found = _shared.get(key)
    except TypeError:
        # NOTE(ironic-partition): a nested dict or list (root device
        # hints): not hashable, not shared.
        return value
    if found is not None:
        return found
    if len(_shared) < _SHARED_MAX:
        _shared[key] = value
    return value


class Node(Record):
    """A slim, read-only view of one Ironic node.

    Attribute names follow openstacksdk's ``Node`` (``id``,
    ``instance_id``, ``is_maintenance``...), so nova's code reads it as it
    reads an SDK node. Fields that were not requested are ``None``.
    """

    __slots__ = ('id', 'instance_id', 'conductor_group', 'driver',
                 'power_state', 'target_power_state', 'provision_state',
                 'target_provision_state', 'last_error', 'is_maintenance',
                 'properties', 'traits', 'resource_class', 'shard')

    @classmethod
    def from_api(cls, body):
        """Build a record from one node of an Ironic API node list.

        Only the fields of the record are kept, whatever the answer holds
        (the change feed reads the detailed view). Equal ``properties``
        and ``traits`` are shared between records, as are the strings of
        states and groups: a fleet has a few hardware profiles, not one
        per node.

        :param body: the node's JSON object, with API field names.
        :returns: a :class:`Node`.
        """
        fields = {}
        for key, name in _API_FIELDS:
            value = body.get(key)
            if value is None:
                continue
            if name in _SHARED_STRINGS:
                if isinstance(value, str):
                    value = sys.intern(value)
            elif name in _SHARED_VALUES:
                value = _share(value)
            fields[name] = value
        return cls(**fields)

    @property
    def instance_uuid(self):
        """The node's instance UUID (API name), or ``None``."""
        return self.instance_id

    def __repr__(self):
        return '<Node %s instance=%s group=%r>' % (
            self.id, self.instance_id, self.conductor_group)


#: (API field, record attribute) for every field of a :class:`Node`.
_API_FIELDS = tuple((api, _RENAMES.get(api, api))
                    for api in NODE_FIELDS + ('shard',))


class Meter(object):
    """The Ironic API calls of one listing, and the time spent in them.

    Each listing gets its own, returned with its result, so that callers
    sharing one client (the partitioner and the reserver) never read each
    other's figures.
    """

    __slots__ = ('calls', 'http_seconds', 'server_date',
                 'first_server_date', '_lock')

    def __init__(self):
        self.calls = 0
        self.http_seconds = 0.0
        #: The latest ``Date`` an answer carried (Ironic API's clock), or
        #: None.
        self.server_date = None
        #: The earliest such ``Date``, or None.
        self.first_server_date = None
        self._lock = threading.Lock()

    def add(self, seconds, server_date=None):
        """Count one call of ``seconds``, answered at ``server_date``."""
        with self._lock:
            self.calls += 1
            self.http_seconds += seconds
            if server_date is None:
                return
            if self.server_date is None or server_date > self.server_date:
                self.server_date = server_date
            if (self.first_server_date is None or
                    server_date < self.first_server_date):
                self.first_server_date = server_date


class Listing(list):
    """A complete list of nodes, with the :class:`Meter` of its calls.

    :ivar calls: the Ironic API calls made.
    :ivar http_seconds: the seconds spent in them.
    """

    def __init__(self, items=(), meter=None):
        super().__init__(items)
        meter = meter or Meter()
        self.calls = meter.calls
        self.http_seconds = meter.http_seconds


def _http_date(value):
    """An HTTP ``Date`` header as an aware datetime, or None."""
    if not value:
        return None
    try:
        date = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if date.tzinfo is None:
        date = date.replace(tzinfo=datetime.timezone.utc)
    return date


class IronicClient(object):
    """Lists nodes and conductors through openstacksdk's baremetal proxy.

    :param connection: an ``openstack.connection.Connection``.
    :param connect: a callable building the connection on first use
        (:func:`ironic_partition.settings.ironic_connector`), when
        ``connection`` is not given.
    :param endpoint: describes the endpoint in messages (password
        masked).
    :param page_size: nodes per API page (Ironic's maximum is usually
        1000).
    """

    def __init__(self, connection=None, connect=None, endpoint=None,
                 page_size=DEFAULT_PAGE_SIZE):
        if connect is None and connection is None:
            raise ValueError('IronicClient needs connect or connection')
        self._connect = connect
        self._connection = connection
        self._own_connection = connection is None
        self._endpoint = endpoint
        self.page_size = page_size
        self._executor = None
        self._executor_lock = threading.Lock()

    @property
    def endpoint(self):
        """The configured Ironic endpoint, for messages (password masked)."""
        return (self._endpoint or
                'the baremetal endpoint of the service catalog')

    @property
    def connection(self):
        """The openstacksdk connection, built on first use and cached.

        :raises IronicUnavailable: when it cannot be built.
        """
        if self._connection is None:
            self._connection = self._connect()
        return self._connection

    @property
    def executor(self):
        """The one executor of this client's concurrent calls.

        A :class:`~ironic_partition.common.executor.DaemonExecutor` of at most
        :data:`EXECUTOR_WORKERS` daemon workers, started on first use and
        kept for the life of the client: page prefetching, look-ups of
        instances, and the two reads of a refresh that run at once
        (:mod:`ironic_partition.ironic.node_index`,
        :mod:`ironic_partition.ironic.change_feed`) all run on it, instead of a
        pool built at every refresh.
        """
        with self._executor_lock:
            if self._executor is None:
                # NOTE(ironic-partition): daemon workers, neither the
                # standard library's pool nor futurist's: see
                # ironic_partition.common.executor.
                self._executor = executor_mod.DaemonExecutor(
                    EXECUTOR_WORKERS, name='ironic-partition')
            return self._executor

    def close(self):
        """Let the executor's workers go; a later call starts a new one.

        Does not wait: calls under way finish on their own (each is
        bounded by the session's timeout), then their workers end.
        """
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False)

    def reset(self):
        """Drop a connection built from configuration (SIGHUP)."""
        if self._own_connection:
            self._connection = None

    def get_json(self, path, params, microversion, meter=None):
        """GET one API path through the SDK's session; its JSON body.

        :param path: e.g. ``/nodes/detail`` (below ``/v1``).
        :param params: the query.
        :param microversion: the API microversion to ask for.
        :param meter: a :class:`Meter` counting the call, or None.
        :returns: the decoded body.
        :raises IronicUnavailable: Ironic cannot be reached, failed, or
            answered 401, 403, 404, 408 or 409.
        :raises IronicRequestError: Ironic refused the request as invalid.
        """
        start = time.monotonic()
        date = None
        try:
            # NOTE(ironic-partition): the proxy discovers the endpoint's
            # versions on first use; a DiscoveryFailure there must be
            # wrapped too (nova 34 leaks it when a group filter is set).
            proxy = self.connection.baremetal
            resp = proxy.get(path, params=params, microversion=microversion)
            sdk_exc.raise_from_response(resp)
            body = resp.json()
            date = _http_date(resp.headers.get('Date'))
        except sdk_exc.HttpException as e:
            status = e.status_code or 0
            if status >= 500 or status in (401, 403, 404, 408, 409):
                raise exception.IronicUnavailable(
                    endpoint=self.endpoint, reason=e)
            raise exception.IronicRequestError(
                path=path, params=params, reason=e)
        except (ks_exc.ClientException, sdk_exc.SDKException,
                requests.RequestException, ValueError) as e:
            # ValueError: a body that is not JSON (a proxy's error page).
            raise exception.IronicUnavailable(endpoint=self.endpoint,
                                              reason=e)
        finally:
            if meter is not None:
                meter.add(time.monotonic() - start, date)
        return body

    def _node_query(self, conductor_group, fields, shard, filters):
        params = dict(filters)
        params['limit'] = self.page_size
        if fields:
            params['fields'] = ','.join(fields)
        if conductor_group is not None:
            params['conductor_group'] = conductor_group.lower()
        microversion = MIN_MICROVERSION
        if shard is not None:
            # NOTE(ironic-partition): Ironic splits the filter on "," and
            # lower-cases each name; send the one name it will use.
            params['shard'] = shard.lower()
            microversion = SHARD_MICROVERSION
        if fields and 'shard' in fields:
            microversion = SHARD_MICROVERSION
        return params, microversion

    def list_nodes(self, conductor_group=None, fields=NODE_FIELDS,
                   shard=None, **filters):
        """List nodes, page by page, as slim records.

        :param conductor_group: ``None`` for every node, else only this
            group's nodes (filtered by Ironic; ``""`` is the default
            group).
        :param fields: the API fields to ask for; asking for ``shard``
            needs API 1.82.
        :param shard: ``None`` for every shard, else only this shard's
            nodes (filtered by Ironic, API 1.82; combined with
            ``conductor_group``). An Ironic older than 1.82 refuses the
            query: the call raises rather than list more nodes.
        :param filters: further API query parameters (e.g.
            ``associated=True``).
        :returns: a :class:`Listing` of :class:`Node`, complete or not at
            all.
        :raises IronicUnavailable: Ironic cannot be reached or failed.
        :raises IronicRequestError: Ironic refused the query.
        """
        meter = Meter()
        nodes = []
        for page in self.node_pages(conductor_group, fields, shard, meter,
                                    **filters):
            nodes.extend(page)
        LOG.debug('Listed %(count)d nodes of group %(group)r shard '
                  '%(shard)r in %(calls)d calls (%(http).3f s in HTTP)',
                  {'count': len(nodes), 'group': conductor_group,
                   'shard': shard, 'calls': meter.calls,
                   'http': meter.http_seconds})
        return Listing(nodes, meter)

    def node_pages(self, conductor_group=None, fields=NODE_FIELDS,
                   shard=None, meter=None, **filters):
        """Yield the nodes of a listing page by page, fetching ahead.

        While the caller processes one page, the next one is being fetched
        (and its JSON decoded) by a thread of this call: a full listing
        costs about what Ironic takes to serve the pages, and no page is
        held longer than it takes to process it.

        :param conductor_group: as :meth:`list_nodes`.
        :param fields: as :meth:`list_nodes`.
        :param shard: as :meth:`list_nodes`.
        :param meter: a :class:`Meter` counting the calls, or None.
        :param filters: as :meth:`list_nodes`.
        :returns: a generator of lists of :class:`Node`. Closing it early
            stops the fetching.
        :raises IronicUnavailable: Ironic cannot be reached or failed (the
            pages already yielded must then be treated as incomplete).
        :raises IronicRequestError: Ironic refused the query.
        """
        params, microversion = self._node_query(conductor_group, fields,
                                                shard, filters)
        bodies = prefetch.Prefetcher(
            self.page_bodies('/nodes', 'nodes', params, microversion, meter),
            self.executor)
        try:
            for page in bodies:
                yield [Node.from_api(n) for n in page]
        finally:
            bodies.close()

    def nodes_for_instances(self, instance_ids, fields=NODE_FIELDS,
                            meter=None):
        """Find the nodes of a few instances, whatever their group.

        One targeted ``GET /v1/nodes?instance_uuid=...`` per instance: for
        the handful of this service's instances that its group listing
        did not show (their node moved to another conductor group or
        shard), never an unfiltered listing of the fleet.

        :param instance_ids: instance UUIDs.
        :param fields: the API fields to ask for.
        :param meter: a :class:`Meter` counting the calls, or None.
        :returns: a list of :class:`Node`, one per instance that has a
            node.
        :raises IronicUnavailable: Ironic cannot be reached or failed.
        :raises IronicRequestError: Ironic refused the query.
        """
        params = {}
        microversion = MIN_MICROVERSION
        if fields:
            params['fields'] = ','.join(fields)
            if 'shard' in fields:
                microversion = SHARD_MICROVERSION

        def look_up(instance):
            query = dict(params, instance_uuid=instance)
            body = self.get_json('/nodes', query, microversion, meter)
            return [Node.from_api(n) for n in body.get('nodes') or ()]

        ids = sorted(instance_ids)
        if len(ids) <= 1:
            return [n for i in ids for n in look_up(i)]
        # NOTE(ironic-partition): bounded: a compute with thousands of
        # servers outside its listing must not open thousands of
        # connections, nor wait for the answers one by one.
        found = []
        for start in range(0, len(ids), LOOKUP_WORKERS):
            batch = [self.executor.submit(look_up, i)
                     for i in ids[start:start + LOOKUP_WORKERS]]
            futures.wait(batch)
            for future in batch:
                found.extend(future.result())
        return found

    def page_bodies(self, path, key, params, microversion, meter=None,
                    with_next=False, first_limit=None):
        """Yield the items of each page of a paginated Ironic list.

        :param path: the collection's path, e.g. ``/nodes``.
        :param key: the collection's key in each answer, e.g. ``nodes``.
        :param params: the query; ``marker`` is set as pages go by.
        :param microversion: the API microversion to ask for.
        :param meter: a :class:`Meter` counting the calls, or None.
        :param with_next: yield ``(items, more)`` instead, ``more`` telling
            whether Ironic linked a next page.
        :param first_limit: a smaller ``limit`` for the first page only,
            for a read that usually stops early; the next pages ask for
            ``params['limit']``.
        :returns: a generator of lists of the items' JSON objects.
        :raises IronicUnavailable: an answer without ``key``, or any
            failure of :meth:`_get`.
        """
        params = dict(params)
        limit = params.get('limit')
        if first_limit is not None and limit is not None:
            params['limit'] = min(first_limit, limit)
        while True:
            body = self.get_json(path, params, microversion, meter)
            if limit is not None:
                params['limit'] = limit
            page = body.get(key)
            if page is None:
                raise exception.IronicUnavailable(
                    endpoint=self.endpoint,
                    reason='a %s list answer without "%s"' % (path, key))
            marker = self._next_marker(body)
            del body
            yield (page, marker is not None) if with_next else page
            if not page or marker is None:
                return
            params['marker'] = marker

    def _pages(self, path, key, params, microversion, meter=None):
        for page in self.page_bodies(path, key, params, microversion,
                                     meter):
            yield from page

    @staticmethod
    def _next_marker(body):
        next_url = body.get('next')
        if not next_url:
            return None
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(next_url).query)
        markers = query.get('marker')
        return markers[0] if markers else None

    def list_conductors(self):
        """List Ironic's conductors with their groups and hardware types.

        :returns: a list of dicts with ``hostname``, ``conductor_group``,
            ``alive`` and ``drivers``.
        :raises IronicUnavailable: Ironic cannot be reached or failed.
        """
        params = {'detail': 'True', 'limit': self.page_size}
        return [{'hostname': c['hostname'],
                 'conductor_group': (c.get('conductor_group') or '').lower(),
                 'alive': bool(c.get('alive')),
                 'drivers': list(c.get('drivers') or ())}
                for c in self._pages('/conductors', 'conductors', params,
                                     CONDUCTOR_MICROVERSION)]

    def list_node_dicts(self, fields, microversion=MIN_MICROVERSION,
                        **filters):
        """List nodes, page by page, as the API's JSON objects.

        For fields the slim :class:`Node` record does not keep (``shard``,
        ``driver_info``...), read by ``ironic-partition check``'s audits.

        :param fields: the API fields to ask for.
        :param microversion: the API microversion (``shard`` needs 1.82).
        :param filters: further API query parameters.
        :returns: a list of dicts, complete or not at all.
        :raises IronicUnavailable: Ironic cannot be reached or failed.
        :raises IronicRequestError: Ironic refused the query.
        """
        params = dict(filters)
        params['limit'] = self.page_size
        params['fields'] = ','.join(fields)
        return [{k: v for k, v in node.items() if k != 'links'}
                for node in self._pages('/nodes', 'nodes', params,
                                        microversion)]
