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

"""Helpers shared by the services and the claims queries."""

import datetime

from oslo_db import api as oslo_db_api

#: How often a statement retries after a deadlock or a lost insert race.
MAX_RETRIES = 10

#: Every write retries deadlocks (and Galera certification failures, which
#: are reported as deadlocks) the same way.
retry = oslo_db_api.wrap_db_retry(max_retries=MAX_RETRIES,
                                  retry_interval=0.05, max_retry_interval=1,
                                  inc_retry_interval=True,
                                  retry_on_deadlock=True)

#: How many node UUIDs one claim statement carries at most. A
#: compare-and-swap chunk binds three parameters per node, so SQLite must
#: allow 32,766 of them (:data:`SQLITE_MIN_VERSION`).
CHUNK_SIZE = 2000

#: The oldest SQLite that allows :data:`CHUNK_SIZE` nodes per statement:
#: SQLITE_MAX_VARIABLE_NUMBER defaults to 32,766 since 3.32.0 (999
#: before).
SQLITE_MIN_VERSION = (3, 32, 0)


def chunks(items, size=None):
    """Split node UUIDs into sorted chunks.

    Sorting makes every writer lock rows in the same (primary key) order,
    which keeps bulk updates of overlapping node sets from deadlocking.

    :param items: an iterable of strings.
    :param size: the largest chunk, :data:`CHUNK_SIZE` by default (read at
        call time, so tests can lower it).
    :returns: an iterator of lists.
    """
    size = CHUNK_SIZE if size is None else size
    ordered = sorted(set(items))
    for start in range(0, len(ordered), size):
        yield ordered[start:start + size]


def microseconds(seconds):
    """Whole microseconds of a duration.

    :param seconds: a number of seconds.
    :returns: an int.
    """
    return int(round(seconds * 1000000))


def utc(value):
    """Attach UTC to a naive timestamp read back from the database.

    :param value: a naive ``datetime`` (UTC by construction), an ISO string
        (SQLite) or None.
    :returns: an aware ``datetime`` or None.
    """
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value
