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

"""Ironic's allocations (API 1.52+), through the client's connection.

The calls :class:`~ironic_partition.ironic.allocations.Reserver` makes to
reserve a node in Ironic (seed 002), on the openstacksdk connection of an
:class:`~ironic_partition.ironic.baremetal.IronicClient`, with its errors
turned into ours like every other call to Ironic.
"""

from keystoneauth1 import exceptions as ks_exc
from openstack import exceptions as sdk_exc
from openstack import utils as sdk_utils
import requests

from ironic_partition import exception
from ironic_partition.ironic import baremetal

#: The first API version with allocations (Ironic 12.1, Stein).
ALLOCATION_MICROVERSION = '1.52'

#: The states of an allocation.
ALLOCATION_ALLOCATING = 'allocating'
ALLOCATION_ACTIVE = 'active'
ALLOCATION_ERROR = 'error'


class Allocation(baremetal.Record):
    """A read-only view of one Ironic allocation.

    Attribute names follow openstacksdk's ``Allocation``: ``id`` is the
    allocation's UUID and ``node_id`` the UUID of the node it holds.
    """

    __slots__ = ('id', 'name', 'state', 'node_id', 'resource_class',
                 'traits', 'candidate_nodes', 'last_error', 'extra')

    @classmethod
    def from_sdk(cls, res):
        """Build a record from an SDK ``Allocation`` resource.

        :param res: an ``openstack.baremetal.v1.allocation.Allocation``.
        :returns: an :class:`Allocation`.
        """
        return cls(id=res.id, name=res.name, state=res.state,
                   node_id=res.node_id, resource_class=res.resource_class,
                   traits=tuple(res.traits or ()),
                   candidate_nodes=tuple(res.candidate_nodes or ()),
                   last_error=res.last_error, extra=dict(res.extra or {}))

    @property
    def node_uuid(self):
        """The allocated node's UUID (API name), or ``None``."""
        return self.node_id

    def __repr__(self):
        return '<Allocation %s state=%s node=%s>' % (
            self.id, self.state, self.node_id)


class AllocationAPI(object):
    """Create, read, delete and list allocations.

    :param client: the :class:`~ironic_partition.ironic.baremetal.IronicClient`
        whose connection (and so session, endpoint and microversion
        discovery) the calls use.
    """

    def __init__(self, client):
        self._client = client
        self._checked = None

    # NOTE(ironic-partition): Ironic marks the node with the allocation
    # itself: when an allocation becomes active, the node's instance_uuid
    # is set to the allocation's UUID in the same database transaction
    # (and cleared when the allocation is deleted). Creating the
    # allocation with uuid=<instance UUID> therefore marks the node with
    # the instance atomically; no separate PATCH of instance_uuid is
    # needed, and none is offered here.

    def _call(self, method, path, func, *args, allow_missing=False,
              **kwargs):
        """Run one SDK allocation call, wrapping its errors.

        The mapping is the one of :meth:`~ironic_partition.ironic.baremetal.
        IronicClient.get_json`: 5xx, 401, 403, 408 and transport errors
        mean Ironic is unavailable; any other 4xx means it refused the
        request.

        :param method: the HTTP method, for messages.
        :param path: the API path, for messages.
        :param func: the SDK proxy method.
        :param allow_missing: return None on HTTP 404 (the object does
            not exist) instead of raising.
        :returns: what ``func`` returns.
        :raises IronicUnavailable: Ironic cannot be reached or failed.
        :raises AllocationRequestRefused: Ironic refused the request.
        """
        try:
            return func(*args, **kwargs)
        except sdk_exc.NotFoundException as e:
            if allow_missing:
                return None
            raise exception.IronicUnavailable(endpoint=self._client.endpoint,
                                              reason=e)
        except sdk_exc.HttpException as e:
            status = e.status_code or 0
            if status >= 500 or status in (401, 403, 404, 408):
                raise exception.IronicUnavailable(
                    endpoint=self._client.endpoint, reason=e)
            raise exception.AllocationRequestRefused(
                method=method, path=path, status=status,
                reason=e.details or e)
        except (ks_exc.ClientException, sdk_exc.SDKException,
                requests.RequestException, ValueError) as e:
            raise exception.IronicUnavailable(endpoint=self._client.endpoint,
                                              reason=e)

    def _proxy(self):
        """The baremetal proxy, once Ironic is known to offer allocations.

        :returns: the SDK baremetal proxy.
        :raises AllocationsNotSupported: Ironic is older than API 1.52.
        :raises IronicUnavailable: version discovery failed.
        """
        # NOTE(ironic-partition): the proxy discovers the endpoint on first
        # use, which fails like any other call when Ironic is down.
        proxy = self._call('GET', '/',
                           lambda: self._client.connection.baremetal)
        # NOTE(ironic-partition): checked once per proxy; reset() builds a
        # new connection (and so a new proxy) that is checked again.
        if self._checked is proxy:
            return proxy
        supported = self._call(
            'GET', '/', sdk_utils.supports_microversion, proxy,
            ALLOCATION_MICROVERSION)
        if not supported:
            data = self._call('GET', '/', proxy.get_endpoint_data)
            highest = getattr(data, 'max_microversion', None)
            raise exception.AllocationsNotSupported(
                endpoint=self._client.endpoint, needed=ALLOCATION_MICROVERSION,
                supported=('%d.%d' % tuple(highest[:2]) if highest
                           else 'no microversion at all'))
        self._checked = proxy
        return proxy

    def create_allocation(self, resource_class, candidate_nodes,
                          traits=None, name=None, uuid=None, extra=None):
        """Ask Ironic to reserve one of ``candidate_nodes``.

        Ironic answers at once with the allocation in the ``allocating``
        state and processes it in a conductor thread: poll
        :meth:`get_allocation` until it is ``active`` or ``error``.

        :param resource_class: the node resource class to match (required).
        :param candidate_nodes: node UUIDs the allocation may use; it must
            not be empty (Ironic reads an empty list as "any node").
        :param traits: traits every candidate must have.
        :param name: a unique name for the allocation.
        :param uuid: the allocation's UUID, which Ironic also sets as the
            node's ``instance_uuid``; Ironic generates one when None.
        :param extra: a dict of metadata stored with the allocation.
        :returns: an :class:`Allocation`.
        :raises ValueError: ``candidate_nodes`` is empty.
        :raises AllocationsNotSupported: Ironic is older than API 1.52.
        :raises IronicUnavailable: Ironic cannot be reached or failed.
        :raises AllocationRequestRefused: Ironic refused the request (400:
            invalid value or unknown candidate; 409: the UUID or name is
            taken).
        """
        if not candidate_nodes:
            raise ValueError('An allocation needs at least one candidate '
                             'node; Ironic would read an empty list as '
                             '"any node"')
        attrs = {'resource_class': resource_class,
                 'candidate_nodes': list(candidate_nodes)}
        if traits:
            attrs['traits'] = list(traits)
        if name is not None:
            attrs['name'] = name
        if uuid is not None:
            attrs['uuid'] = uuid
        if extra:
            attrs['extra'] = dict(extra)
        proxy = self._proxy()
        res = self._call('POST', '/allocations', proxy.create_allocation,
                         **attrs)
        return Allocation.from_sdk(res)

    def get_allocation(self, allocation):
        """Read one allocation.

        :param allocation: its UUID or name.
        :returns: an :class:`Allocation`, or None when it does not exist.
        :raises IronicUnavailable: Ironic cannot be reached or failed.
        :raises AllocationRequestRefused: Ironic refused the request.
        """
        proxy = self._proxy()
        res = self._call(
            'GET', '/allocations/%s' % allocation, proxy.get_allocation,
            allocation, allow_missing=True)
        if res is None:
            return None
        return Allocation.from_sdk(res)

    def delete_allocation(self, allocation):
        """Delete an allocation; a missing one is not an error.

        Ironic clears the node's ``instance_uuid`` (and ``allocation_uuid``)
        in the same transaction.

        :param allocation: its UUID or name.
        :returns: True when it was deleted, False when it did not exist.
        :raises IronicUnavailable: Ironic cannot be reached or failed.
        :raises AllocationRequestRefused: Ironic refused (409 when the node
            is deployed and not in maintenance).
        """
        proxy = self._proxy()
        res = self._call(
            'DELETE', '/allocations/%s' % allocation,
            proxy.delete_allocation, allocation, ignore_missing=True)
        return res is not None

    def list_allocations(self, **filters):
        """List allocations, every page.

        :param filters: API filters: ``node`` (UUID or name; Ironic
            answers 400 for an unknown node), ``resource_class``,
            ``state``, ``owner``.
        :returns: a list of :class:`Allocation`.
        :raises IronicUnavailable: Ironic cannot be reached or failed.
        :raises AllocationRequestRefused: Ironic refused the query.
        """
        proxy = self._proxy()
        query = dict(filters)
        query.setdefault('limit', self._client.page_size)
        return self._call(
            'GET', '/allocations',
            lambda: [Allocation.from_sdk(a)
                     for a in proxy.allocations(**query)])
