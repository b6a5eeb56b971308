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

"""The partition map: where a node is, and which group serves it there.

Pure: no Ironic import, no I/O. The inspection hook, the unit tests and
``ironic-partition check`` share it. The map comes from the
``[ironic_partition_inspection] map`` option, one entry per value::

    cidr=10.0.1.0/24,group=rack1,shard=rack1
    cidr=2001:db8:2::/64,group=rack2
    switch=tor-r3,group=rack3

The BMC address is the primary key. Switch entries (the LLDP system name
or chassis ID that the ``parse-lldp`` hook stores in
``plugin_data['parsed_lldp']``) are tried only when no BMC address matches
a network. Networks never overlap and a switch appears once, so a node
matches at most one entry whatever the order of the entries.
"""

import collections
import ipaddress
import urllib.parse

from oslo_log import log as logging

from ironic_partition._i18n import _
from ironic_partition.conf import inspection as inspection_conf
from ironic_partition import exception
from ironic_partition import names

LOG = logging.getLogger(__name__)

OPTION = 'map'

KIND_CIDR = 'cidr'
KIND_SWITCH = 'switch'

#: The keys an entry may have.
KEYS = (KIND_CIDR, KIND_SWITCH, 'group', 'shard')

#: The LLDP fields of ``parse-lldp`` a switch entry is compared with.
LLDP_FIELDS = ('switch_system_name', 'switch_chassis_id')

#: The longest switch name of an entry.
MAX_NAME = names.MAX_LENGTH

#: One entry: ``kind`` is ``cidr`` or ``switch``; ``key`` an
#: ``ipaddress`` network or a lower-cased switch name; ``group`` and
#: ``shard`` lower-cased (:func:`ironic_partition.names.key`); ``text`` the
#: entry as written.
Entry = collections.namedtuple('Entry',
                               ['kind', 'key', 'group', 'shard', 'text'])

#: The result of a look-up: the ``entry`` matched, from which ``source``
#: (e.g. ``inventory.bmc_address``) and ``value``.
Match = collections.namedtuple('Match', ['entry', 'source', 'value'])


def _invalid(value, reason):
    return exception.InvalidPartitionMap(
        value=value, group=inspection_conf.GROUP, option=OPTION,
        reason=reason)


def validate_group(group, value=None):
    """Check a conductor group name of the map, with nova's rules.

    :param group: the name.
    :param value: the whole entry, for the error message.
    :returns: the lower-cased name (Ironic lower-cases a node's group).
    :raises: InvalidPartitionMap naming the entry and what is allowed.
    """
    return _checked(names.check_conductor_group, group, value)


def validate_shard(shard, value=None):
    """Check a shard name of the map, with nova's rules.

    :param shard: the name.
    :param value: the whole entry, for the error message.
    :returns: the lower-cased name: the hook writes it so, which every
        Ironic database's shard filter matches (see
        :mod:`ironic_partition.names`).
    :raises: InvalidPartitionMap naming the entry and what is allowed.
    """
    return _checked(names.check_shard, shard, value)


def _checked(check, name, value):
    try:
        return names.key(check(name))
    except ValueError as e:
        raise _invalid(value if value is not None else name, str(e))


def parse_entry(text):
    """Parse one map entry.

    :param text: e.g. ``cidr=10.0.1.0/24,group=rack1,shard=s1``.
    :returns: an :data:`Entry`.
    :raises: InvalidPartitionMap naming the entry and the fault.
    """
    fields = {}
    for part in text.split(','):
        part = part.strip()
        if not part:
            continue
        name, sep, val = part.partition('=')
        name = name.strip().lower()
        if not sep:
            raise _invalid(text, _('%r is not key=value') % part)
        if name not in KEYS:
            raise _invalid(text, _('unknown key %(key)r; the keys are '
                                   '%(keys)s') % {'key': name,
                                                  'keys': ', '.join(KEYS)})
        if name in fields:
            raise _invalid(text, _('key %r given twice') % name)
        fields[name] = val.strip()
    kinds = [k for k in (KIND_CIDR, KIND_SWITCH) if k in fields]
    if len(kinds) != 1:
        raise _invalid(text, _('an entry needs exactly one of "cidr" and '
                               '"switch"'))
    if 'group' not in fields:
        raise _invalid(text, _('"group" is missing'))
    kind = kinds[0]
    if kind == KIND_CIDR:
        try:
            key = ipaddress.ip_network(fields[KIND_CIDR], strict=True)
        except ValueError as e:
            raise _invalid(text, _('invalid network %(cidr)r: %(err)s') % {
                'cidr': fields[KIND_CIDR], 'err': e})
    else:
        key = fields[KIND_SWITCH].lower()
        if not key or len(key) > MAX_NAME:
            raise _invalid(text, _('a switch is 1 to %d characters')
                           % MAX_NAME)
    group = validate_group(fields['group'], text)
    shard = fields.get('shard') or None
    if 'shard' in fields:
        shard = validate_shard(fields['shard'], text)
    return Entry(kind, key, group, shard, text.strip())


class PartitionMap(object):
    """A validated map.

    :param entries: the option's values (strings).
    :raises: InvalidPartitionMap on the first invalid entry, and when two
        networks overlap or a switch appears twice.
    """

    def __init__(self, entries):
        self.entries = [parse_entry(text) for text in entries or ()
                        if text and text.strip()]
        self.networks = [e for e in self.entries if e.kind == KIND_CIDR]
        self.switches = {}
        for entry in self.entries:
            if entry.kind != KIND_SWITCH:
                continue
            if entry.key in self.switches:
                raise _invalid(entry.text, _(
                    'switch %(sw)r is already mapped by %(other)r') % {
                        'sw': entry.key,
                        'other': self.switches[entry.key].text})
            self.switches[entry.key] = entry
        # NOTE(ironic-partition): quadratic, but maps have a few hundred
        # entries at most and this runs once, at conductor start.
        for i, one in enumerate(self.networks):
            for other in self.networks[i + 1:]:
                if (one.key.version == other.key.version
                        and one.key.overlaps(other.key)):
                    raise _invalid(other.text, _(
                        'network %(net)s overlaps %(other)s of entry '
                        '%(entry)r; a node must match one entry only') % {
                            'net': other.key, 'other': one.key,
                            'entry': one.text})

    def __bool__(self):
        return bool(self.entries)

    def __len__(self):
        return len(self.entries)

    @property
    def uses_lldp(self):
        """Whether any entry is keyed by switch."""
        return bool(self.switches)

    def match_address(self, address):
        """The network entry containing an address.

        :param address: an IP address string (IPv4 or IPv6).
        :returns: the :data:`Entry`, or None.
        """
        ip = parse_ip(address)
        if ip is None:
            return None
        for entry in self.networks:
            if ip.version == entry.key.version and ip in entry.key:
                return entry
        return None

    def lookup(self, addresses=(), switches=()):
        """Find the entry of a node.

        :param addresses: ``(source, address)`` pairs, most trusted first
            (see :func:`inventory_addresses`, :func:`driver_info_addresses`).
        :param switches: ``(source, switch)`` pairs (see
            :func:`lldp_switches`).
        :returns: ``(match, reason)``: a :data:`Match` and None, or None
            and why nothing matched.
        """
        for source, address in addresses:
            entry = self.match_address(address)
            if entry is not None:
                return Match(entry, source, address), None
        found = {}
        for source, switch in switches:
            entry = self.switches.get((switch or '').lower())
            if entry is not None:
                found.setdefault(entry.text, Match(entry, source, switch))
        if len(found) > 1:
            return None, _('the node\'s NICs see switches of different '
                           'entries: %s') % '; '.join(
                '%s=%s (%s)' % (m.source, m.value, m.entry.text)
                for m in found.values())
        if found:
            return list(found.values())[0], None
        return None, _('no entry matches BMC addresses [%(addr)s] or '
                       'switches [%(sw)s]') % {
            'addr': ', '.join(a for _s, a in addresses),
            'sw': ', '.join(s for _s, s in switches)}


def parse_ip(address):
    """Parse an address as Ironic and IPA write them.

    :param address: e.g. ``10.0.0.5``, ``[2001:db8::5]`` or
        ``fe80::1%eth0``.
    :returns: an ``ipaddress`` address, or None when it is not one, or is
        unspecified (``0.0.0.0``, ``::``, what IPA reports without a BMC).
    """
    if not isinstance(address, str):
        return None
    text = address.strip().strip('[]').split('%', 1)[0]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if ip.is_unspecified:
        return None
    return ip


def inventory_addresses(inventory):
    """The BMC addresses the ramdisk reported.

    :param inventory: the inventory of the inspection (may be None).
    :returns: a list of ``(source, address)`` pairs.
    """
    result = []
    for field in ('bmc_address', 'bmc_v6address'):
        value = (inventory or {}).get(field)
        if parse_ip(value) is not None:
            result.append(('inventory.%s' % field, value))
    return result


def address_host(value):
    """The host part of a ``driver_info`` address field.

    :param value: e.g. ``10.0.0.5``, ``https://10.0.0.5:8000/redfish`` or
        ``[2001:db8::5]:443``.
    :returns: the host (address or name), or None.
    """
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip()
    if parse_ip(value) is not None:
        return value.strip('[]')
    try:
        parsed = urllib.parse.urlsplit(
            value if '//' in value else '//' + value)
        return parsed.hostname
    except ValueError:
        return None


def driver_info_addresses(driver_info):
    """The BMC addresses in a node's ``driver_info`` (out-of-band).

    Every ``*_address`` field (``ipmi_address``, ``redfish_address``...),
    in name order; host names are skipped: they are not resolved.

    :param driver_info: the node's ``driver_info`` (may be None).
    :returns: a list of ``(source, address)`` pairs.
    """
    result = []
    for name in sorted(driver_info or {}):
        if not name.endswith('_address'):
            continue
        host = address_host(driver_info[name])
        if host is not None and parse_ip(host) is not None:
            result.append(('driver_info.%s' % name, host))
    return result


def lldp_switches(plugin_data):
    """The switches seen over LLDP, as ``parse-lldp`` stored them.

    :param plugin_data: the inspection's plugin data (may be None).
    :returns: a list of ``(source, switch)`` pairs, e.g.
        ``('eth0.switch_system_name', 'tor-r2')``.
    """
    result = []
    parsed = (plugin_data or {}).get('parsed_lldp') or {}
    if not isinstance(parsed, dict):
        return result
    for iface in sorted(parsed):
        fields = parsed[iface] or {}
        if not isinstance(fields, dict):
            continue
        for field in LLDP_FIELDS:
            value = fields.get(field)
            if isinstance(value, str) and value.strip():
                result.append(('%s.%s' % (iface, field), value.strip()))
    return result
