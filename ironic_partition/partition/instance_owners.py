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

"""Which host owns each instance (the ``--instance-hosts`` file).

Outside nova, nothing tells a service which instances it owns. The agent
and the CLI read it from a JSON file, and :func:`owned_by` picks a host's
instances out of it (nova-compute asks nova's database instead). The
mapping also tells stranded nodes (their instance's owner is not alive)
from merely foreign ones; see
:func:`ironic_partition.partition.rules.partition`.
"""

import json

from ironic_partition._i18n import _
from ironic_partition import exception

#: The command-line option that names the file, for error messages.
OPTION = '--instance-hosts'


def load(path, option=OPTION):
    """Read which host owns each instance.

    Accepts a JSON object ``{"<instance uuid>": "<host>"}``, or the list
    that ``openstack server list --all-projects --long -f json -c ID -c
    Host`` prints (``[{"ID": ..., "Host": ...}]``).

    :param path: the file, or None.
    :param option: the option that named the file, for errors.
    :returns: a dict of instance UUID to lower-cased host, or None when
        ``path`` is None.
    :raises InvalidCommandInput: naming the option and the file.
    """
    if path is None:
        return None
    try:
        with open(path) as stream:
            data = json.load(stream)
    except OSError as e:
        raise exception.InvalidCommandInput(
            option=option, value=path, reason=e.strerror or e)
    except ValueError as e:
        raise exception.InvalidCommandInput(
            option=option, value=path,
            reason=_('not JSON (%s)') % exception.one_line(e))
    result = {}
    if isinstance(data, dict):
        items = data.items()
    elif isinstance(data, list):
        try:
            items = [((row.get('ID') or row.get('id')),
                      (row.get('Host') or row.get('host')))
                     for row in data]
        except AttributeError:
            items = [(None, None)]
    else:
        items = [(None, None)]
    for instance, host in items:
        if not isinstance(instance, str) or not instance:
            raise exception.InvalidCommandInput(
                option=option, value=path,
                reason=_('expected {"<instance uuid>": "<host>"} or the '
                         'JSON list of "openstack server list --long -c ID '
                         '-c Host -f json"'))
        if isinstance(host, str) and host.strip():
            result[instance] = host.strip().lower()
    return result


def owned_by(instance_hosts, host):
    """The instances a host owns.

    :param instance_hosts: instance UUID to host, or None.
    :param host: the lower-cased host.
    :returns: a frozenset of instance UUIDs.
    """
    if not instance_hosts:
        return frozenset()
    return frozenset(i for i, h in instance_hosts.items() if h == host)
