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

"""Threads the other packages share: executors and periodic calls.

``executor`` is the one bounded pool of daemon workers, ``periodic`` a
call repeated on a thread of its own, and ``prefetch`` a generator run one
item ahead of its consumer; ``heap`` gives the memory those threads freed
back to the system. Nothing here knows about Ironic, nova or the
database.
"""
