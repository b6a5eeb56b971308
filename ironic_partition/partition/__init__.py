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

"""The partition: which nodes this service manages, refresh by refresh.

``rules`` is seed 003 as one pure function; ``partitioner`` runs one
refresh (node index, membership, ring, rules, claims) and gates what may
be reported between refreshes; ``refresh_result`` holds what a refresh
found and cost; ``instance_owners`` reads who owns each instance; and
``readonly`` opens the membership and the claims without joining (the
command line's view).
"""
