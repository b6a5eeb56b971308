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

"""What a reservation may ask for, checked before anything reaches Ironic.

The resource class, the traits, the allocation's name and the instance
UUID of :meth:`ironic_partition.ironic.allocations.Reserver.reserve`, with
Ironic's own rules, so that a bad request is refused with a message naming
the value and what is allowed, and nothing is created.
"""

import re
import uuid

from oslo_utils import importutils
from oslo_utils import uuidutils

from ironic_partition._i18n import _
from ironic_partition import exception

# NOTE(ironic-partition): Ironic validates standard traits against the
# os-traits library; nova and Ironic both depend on it, so it is present
# wherever a reservation is made for real. Without it only the format of
# a standard trait can be checked here, and Ironic has the last word.
os_traits = importutils.try_import('os_traits')

#: Ironic stores a resource class in a VARCHAR(80).
MAX_RESOURCE_CLASS_LENGTH = 80
#: Ironic's maximum trait length.
MAX_TRAIT_LENGTH = 255
#: Ironic's maximum length of a logical name.
MAX_NAME_LENGTH = 255

_CUSTOM_TRAIT_RE = re.compile(r'CUSTOM_[A-Z0-9_]+\Z')
_STANDARD_TRAIT_FORMAT_RE = re.compile(r'[A-Z][A-Z0-9_]*\Z')
_NAME_RE = re.compile(r'[A-Za-z0-9._~-]+\Z')

_standard_traits = None


def _known_standard_traits():
    global _standard_traits
    if _standard_traits is None and os_traits is not None:
        _standard_traits = frozenset(os_traits.get_traits())
    return _standard_traits


def check_resource_class(value):
    """Check a resource class the way Ironic stores it.

    Ironic accepts any string of up to 80 characters. Non-printable
    characters (newlines, NUL...) are refused here as well: no node can
    usefully carry them, and PostgreSQL cannot store a NUL.

    :param value: the resource class.
    :returns: the value, unchanged.
    :raises InvalidResourceClass: naming the value and what is allowed.
    """
    max_len = MAX_RESOURCE_CLASS_LENGTH
    if not isinstance(value, str):
        raise exception.InvalidResourceClass(
            value=value, reason=_('it is not a string'), max=max_len)
    if not value:
        raise exception.InvalidResourceClass(
            value=value, reason=_('it is empty'), max=max_len)
    if len(value) > max_len:
        raise exception.InvalidResourceClass(
            value=value, max=max_len,
            reason=_('it is %d characters long') % len(value))
    if not value.isprintable():
        raise exception.InvalidResourceClass(
            value=value, max=max_len,
            reason=_('it contains non-printable characters'))
    return value


def check_trait(value):
    """Check one trait the way Ironic does.

    :param value: the trait.
    :returns: the value, unchanged.
    :raises InvalidTrait: naming the value and what is allowed.
    """
    max_len = MAX_TRAIT_LENGTH
    if not isinstance(value, str) or not value:
        raise exception.InvalidTrait(
            value=value, reason=_('it is empty or not a string'),
            max=max_len)
    if len(value) > max_len:
        raise exception.InvalidTrait(
            value=value, max=max_len,
            reason=_('it is %d characters long') % len(value))
    if value.startswith('CUSTOM_'):
        if not _CUSTOM_TRAIT_RE.match(value):
            raise exception.InvalidTrait(
                value=value, max=max_len,
                reason=_('a custom trait may only contain A-Z, 0-9 and '
                         '"_" after CUSTOM_'))
        return value
    known = _known_standard_traits()
    if known is not None:
        if value not in known:
            raise exception.InvalidTrait(
                value=value, max=max_len,
                reason=_('it does not start with CUSTOM_ and is not a '
                         'standard trait known to os-traits'))
    elif not _STANDARD_TRAIT_FORMAT_RE.match(value):
        raise exception.InvalidTrait(
            value=value, max=max_len,
            reason=_('it does not start with CUSTOM_, and a standard trait '
                     'is made of A-Z, 0-9 and "_"'))
    return value


def check_traits(values):
    """Check traits and drop duplicates, keeping the order given.

    :param values: an iterable of traits, or None.
    :returns: a tuple of traits.
    :raises InvalidTrait: for the first invalid trait.
    """
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    seen = {}
    for value in values:
        seen.setdefault(check_trait(value), None)
    return tuple(seen)


def check_name(value):
    """Check an allocation name the way Ironic does (a logical name).

    :param value: the name.
    :returns: the value, unchanged.
    :raises InvalidAllocationName: naming the value and what is allowed.
    """
    if (not isinstance(value, str) or len(value) > MAX_NAME_LENGTH
            or not _NAME_RE.match(value)):
        raise exception.InvalidAllocationName(value=value,
                                              max=MAX_NAME_LENGTH)
    return value


def check_instance_uuid(value):
    """Check an instance UUID.

    :param value: the UUID.
    :returns: the UUID in its canonical lower-case, dashed form.
    :raises InvalidInstanceUUID: it is not a UUID.
    """
    if not isinstance(value, str) or not uuidutils.is_uuid_like(value):
        raise exception.InvalidInstanceUUID(value=value)
    return str(uuid.UUID(value))


def describe_partition(key):
    """Name a partition for messages.

    :param key: the partition key: None (partitioning off), ``""`` (the
        default conductor group) or a group name.
    :returns: a string.
    """
    if key is None:
        return _('the fleet (partitioning is off: [ironic] partition_key is '
                 'unset)')
    if key == '':
        return _('conductor group "" (the default group)')
    return _('conductor group %r') % key


def show_traits(traits):
    """Traits for messages."""
    return '[%s]' % ', '.join(traits) if traits else _('(none)')
