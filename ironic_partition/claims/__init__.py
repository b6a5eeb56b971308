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

"""Ownership claims: what this process may report, proven by the database.

A claim is a lease on one node in the claims table, renewed every claim
round and fenced by the local clock before the database could hand it to
another service. ``manager`` runs the rounds (:class:`~ironic_partition.
claims.manager.ClaimManager`); the settings package derives the lease,
the margin and the renewal timing (:mod:`ironic_partition.settings.
claims`; ``claim_settings`` here is its deprecated name); ``lease_timer``
renews between refreshes; ``db_clock`` and ``db_writers`` watch the
database (its clock, its writers); and ``write_guard`` proves a write to
a node under a claim. The process's identity (the incarnation holding
its host name) is the database's (:mod:`ironic_partition.db.identity`).
"""
