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

"""What the fake Ironic clients of the unit tests share."""

from concurrent import futures

from ironic_partition.ironic import change_feed


class SynchronousExecutor(object):
    """Runs what is submitted at once, in the caller."""

    @staticmethod
    def submit(fn, *args, **kwargs):
        future = futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as e:
            future.set_exception(e)
        return future


class FullListingMixin(object):
    """Serves ``list_nodes()`` as one page of a full listing.

    The fake has no change feed, so a
    :class:`~ironic_partition.ironic.node_index.NodeIndex` lists in full at
    every refresh, as before the change feed existed.
    """

    page_size = 1000

    #: The calls a real client runs on its executor run in the caller.
    executor = SynchronousExecutor()

    def close(self):
        pass

    def get_json(self, path, params, microversion=None, meter=None):
        # Only the change feed reads the API directly.
        raise change_feed.ChangeFeedUnavailable('no change feed in this fake')

    def node_pages(self, conductor_group=None, fields=None, shard=None,
                   meter=None):
        if meter is not None:
            meter.add(0.0)
        kwargs = {'shard': shard} if shard is not None else {}
        yield list(self.list_nodes(conductor_group, **kwargs))
