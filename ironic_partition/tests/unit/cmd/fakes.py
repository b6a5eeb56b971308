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

"""Fault-injecting fakes of Ironic and the membership for CLI unit tests."""

import uuid

from cliff import columns

from ironic_partition.ironic import baremetal
from ironic_partition.membership import base as mbase
from ironic_partition.tests.unit import baremetal_fakes

CONDUCTORS = [
    {'hostname': 'c1', 'conductor_group': 'rack1', 'alive': True,
     'drivers': ['fake-hardware']},
    {'hostname': 'c2', 'conductor_group': 'rack2', 'alive': False,
     'drivers': ['fake-hardware']},
]


def nodes(count, group='rack1', instances=None, start=0):
    """Slim node records with predictable UUIDs.

    :param count: how many.
    :param group: their conductor group.
    :param instances: index -> instance UUID.
    :param start: the first index (UUIDs are derived from it).
    :returns: a list of :class:`~ironic_partition.ironic.baremetal.Node`.
    """
    instances = instances or {}
    return [baremetal.Node(id=str(uuid.UUID(int=i + 1)),
                           conductor_group=group, driver='fake-hardware',
                           instance_id=instances.get(i),
                           provision_state='available',
                           power_state='power off', is_maintenance=False)
            for i in range(start, start + count)]


class Client(baremetal_fakes.FullListingMixin):
    """An IronicClient serving fixed lists, or failing as told."""

    endpoint = 'http://ironic.test'
    page_size = 1000

    def __init__(self, node_list=(), conductors=CONDUCTORS):
        self.nodes = list(node_list)
        self.conductors = conductors
        self.fault = None

    def list_nodes(self, conductor_group=None, fields=None, **filters):
        if self.fault is not None:
            raise self.fault
        result = [n for n in self.nodes if conductor_group is None
                  or n.conductor_group == conductor_group]
        if filters.get('associated'):
            result = [n for n in result if n.instance_id is not None]
        if filters.get('shard') is not None:
            result = [n for n in result if n.shard is not None
                      and n.shard.lower() == filters['shard']]
        return result

    def list_conductors(self):
        if self.fault is not None:
            raise self.fault
        return list(self.conductors)

    def reset(self):
        pass


class Membership(object):
    """A membership backend with fixed live/dead/never-seen hosts."""

    store = None
    name = 'fake'

    def __init__(self, live, dead=(), never_seen=()):
        self.live = frozenset(live)
        self.dead = frozenset(dead)
        self.never_seen = frozenset(never_seen)
        #: What the live computes count from nova's service group.
        self.counted_by = ()
        self.partition_key = None
        self.started = 0
        self.stopped = 0
        self.fault = None

    def set_partition_key(self, partition_key):
        self.partition_key = partition_key

    def start(self):
        self.started += 1

    def stop(self, leave=True):
        self.stopped += 1
        self.left = leave

    def members(self, partition_key=None, peer_list=None):
        if self.fault is not None:
            raise self.fault
        outside = frozenset(peer for peer, _by in self.counted_by)
        return mbase.Membership(live=self.live | outside,
                                dead=self.dead - outside,
                                never_seen=self.never_seen - outside,
                                outside=outside, counted_by=self.counted_by)

    def status(self):
        return {'backend': self.name, 'connection': None}


def human(values):
    """What a table shows of each value of a record or a row.

    :param values: a sequence of values, some ``FormattableColumn``.
    :returns: a list of strings.
    """
    return [str(v.human_readable() if isinstance(v, columns.FormattableColumn)
                else v) for v in values]


def human_record(record):
    """The text of a ``ShowOne`` record, as its table shows it.

    :param record: ``(columns, values)``.
    :returns: one string, ``name: value`` per line.
    """
    names, values = record
    return '\n'.join('%s: %s' % pair for pair in zip(names, human(values)))
