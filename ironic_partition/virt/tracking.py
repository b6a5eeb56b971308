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

"""The claim check of nova's resource tracker, made again where it writes.

nova's resource tracker updates each node of its list in two steps:
``get_available_resource(node)`` outside its lock, then the locked
section (``COMPUTE_RESOURCE_SEMAPHORE``, fair) that reads and writes the
node's compute node row and resource provider. With nova 34's
``[compute] update_resources_max_workers`` above 1, several nodes are
checked at once and then queue for that one lock: a node checked first
may wait behind every other worker's section (and builds' claims), so the
time between the claim check and the writes grows with the workers and
with placement's latency, unbounded.

:class:`PassGate` bounds it. ``get_available_resource`` records, for its
own thread, the node it just checked (:meth:`PassGate.checked`); nova then
calls ``update_provider_tree`` for that node inside the lock, right before
its placement inventory writes and the compute node row's save (and
before a row moves to this host); there the driver asks
:meth:`PassGate.pending`, and checks the claim again at that instant. The
check then precedes the writes by the locked section's own calls, with any
number of workers, as with one. Only the resource tracker's pass is
gated: a build's claim already checks the node inside the lock
(``node_is_available``), and its writes are left as nova makes them.

A thread-local, not a dictionary: nova runs each node's update on one
worker thread (or greenthread, with eventlet: ``threading.local`` is then
per greenthread), and the same node is never updated twice at once by one
pass. A record a pass left behind (nova raised between the two calls) is
replaced by the thread's next check, and never gates another node.

Not covered, and the same with one worker: a node that has no compute
node row anywhere yet gets one created (``ComputeNode.create``) in the
locked section before ``update_provider_tree``. nova's unique constraint
on the row's UUID refuses a second row, so two services never hold two
rows of one node (nova logs "Duplicate compute node record").
"""

import threading
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class PassGate(object):
    """What each resource-tracker worker thread checked, and when.

    :param clock: a monotonic clock, ``time.monotonic`` by default.
    """

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._local = threading.local()
        self._lock = threading.Lock()
        #: The longest wait seen from a check to its gate, in seconds.
        self.longest_wait = 0.0
        #: Nodes whose writes the gate refused, since start.
        self.refused = 0

    def checked(self, node_id):
        """Record that this thread checked a node for the pass.

        :param node_id: the node UUID.
        :returns: None
        """
        self._local.pending = (node_id, self._clock())

    def pending(self, node_id):
        """Take this thread's record for a node, if it is the one checked.

        :param node_id: the node UUID nova is about to write.
        :returns: the seconds since its check, or None when this thread
            did not check that node for a pass (a build's write, a second
            call after a reshape, another node).
        """
        record = getattr(self._local, 'pending', None)
        if record is None or record[0] != node_id:
            return None
        self._local.pending = None
        waited = max(0.0, self._clock() - record[1])
        with self._lock:
            if waited > self.longest_wait:
                self.longest_wait = waited
        return waited

    def refusal(self, node_id, partitioner):
        """Check again the claim of the node this thread checked.

        :param node_id: the node UUID nova is about to write.
        :param partitioner: what answers ``may_report`` and
            ``claim_holder``.
        :returns: None when nova may write (the claim is still held, or
            this is not the pass's write of that node), else the message
            for nova's ``VirtDriverNotReady``, logged and counted.
        """
        waited = self.pending(node_id)
        if waited is None or partitioner.may_report(node_id):
            return None
        with self._lock:
            self.refused += 1
        LOG.warning('Not writing node %(node)s: its claim ran out in the '
                    '%(waited).1f s since the resource tracker checked it '
                    '(claim held by %(holder)s); nova writes nothing more '
                    'for it in this run',
                    {'node': node_id, 'waited': waited,
                     'holder': partitioner.claim_holder(node_id)})
        return ('Virt driver is not ready: node %s may not be written any '
                'more by this service (its claim ran out while it waited '
                '%.1f s for nova\'s resource lock)' % (node_id, waited))
