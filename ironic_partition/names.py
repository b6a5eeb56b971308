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

"""The one set of rules for conductor group, shard, host and database
node names.

The options (``[ironic] partition_key``, ``shard``, ``peer_list``), the
inspection hook's map and the node index all check names here, with
nova's rules, and compare them here, ignoring case:

* Ironic lower-cases a node's conductor group, and its ``shard`` list
  filter lower-cases every name; whether that filter matches a node whose
  shard was written in another case is its database's collation (yes on
  MySQL and MariaDB, no on PostgreSQL). A name is therefore always
  written and compared in lower case by this project.
* ``\\Z`` rather than ``$`` ends every pattern: nova's and Ironic's ``$``
  let a single trailing newline through.
"""

import re

from ironic_partition._i18n import _

#: Ironic's conductor-group and shard fields are VARCHAR(255).
MAX_LENGTH = 255

#: What a conductor group, a shard or a host name may contain (nova's
#: ``[ironic] partition_key``, ``shard`` and ``peer_list``).
ALPHABET = 'a-z, A-Z, 0-9, "_", "." and "-"'

_NAME_RE = re.compile(r'[a-zA-Z0-9_.-]*\Z')


def _bad(value):
    return ', '.join(repr(c) for c in sorted(
        {c for c in value if not _NAME_RE.match(c)}))


def _too_long(value, what):
    if len(value) > MAX_LENGTH:
        raise ValueError(
            _('%(value)r is %(len)d characters long; a %(what)s has at '
              'most %(max)d') % {'value': value[:40] + '...',
                                 'len': len(value), 'what': what,
                                 'max': MAX_LENGTH})


def check_conductor_group(value):
    """Check a conductor group name the way nova and Ironic define it.

    :param value: the raw string; ``""`` is the default group.
    :returns: the value, unchanged.
    :raises ValueError: with a message saying what is allowed.
    """
    _too_long(value, _('conductor group'))
    if not _NAME_RE.match(value):
        raise ValueError(
            _('%(value)r contains %(bad)s; a conductor group may only '
              'contain %(allowed)s ("" is the default group)') %
            {'value': value, 'bad': _bad(value), 'allowed': ALPHABET})
    return value


def check_shard(value):
    """Check an Ironic shard name the way nova's ``[ironic] shard`` does.

    :param value: the raw string.
    :returns: the value, unchanged.
    :raises ValueError: with a message saying what is allowed.
    """
    _too_long(value, _('shard'))
    if not value or not _NAME_RE.match(value):
        bad = _bad(value)
        raise ValueError(
            _('%(value)r is not a shard name%(bad)s; a shard is not empty '
              'and may only contain %(allowed)s (unset the option for no '
              'shard)') %
            {'value': value,
             'bad': (' (it contains %s)' % bad) if bad else '',
             'allowed': ALPHABET})
    return value


def check_host(value):
    """Check one host name of a peer list.

    :param value: the raw string, surrounding blanks allowed.
    :returns: the stripped value.
    :raises ValueError: with a message saying what is allowed.
    """
    value = value.strip()
    if not value or not _NAME_RE.match(value):
        raise ValueError(
            _('%(value)r is not a host name; a peer may only contain '
              '%(allowed)s and may not be empty') %
            {'value': value, 'allowed': ALPHABET})
    return value


_DATABASE_NODE_RE = re.compile(r'[^\s:]+:[0-9]{1,5}\Z')


def check_database_node(value):
    """Check a database node as the services name it (``host:port``).

    The name is MariaDB's or MySQL's ``@@hostname:@@port``, the one the
    services log and record for each heartbeat and claim round.

    :param value: the raw string.
    :returns: the lower-cased value.
    :raises ValueError: with a message saying what is allowed.
    """
    if not _DATABASE_NODE_RE.match(value):
        raise ValueError(
            _('%r is not a database node: a database node is "host:port", '
              'as the services name it in their logs (@@hostname:@@port of '
              'the MariaDB or MySQL server)') % value)
    return value.lower()


def key(value):
    """The form in which a group or shard name is written and compared.

    :param value: ``None`` or a valid name.
    :returns: ``None`` or the lower-cased name.
    """
    return None if value is None else value.lower()
