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

"""How the deployers' tools layer a service's configuration files.

The install guide's pages for kolla-ansible, OpenStack-Ansible and
openstack-helm print the files an operator writes; each tool then builds
the service's configuration from them in its own way. This module does
the same, so that the tests load the printed files exactly as the tool
would hand them to nova-compute or ironic-conductor:

* **kolla-ansible** (``merge_configs``): every source rendered with the
  deployment's variables, then merged in order, a missing file skipped;
  an option given again in a later file replaces all its values, and an
  option repeated within one file keeps every value (a multi-valued
  option). :func:`kolla_compute_ironic` writes the part of kolla's own
  ``nova.conf`` template that a nova-compute-ironic instance gets (its
  host name, ``[ironic] conductor_group``, ``shard`` and a ``peer_list``
  of its own host).
* **OpenStack-Ansible** (``config_template``): a dictionary of overrides
  merged over the role's file; a YAML list is written comma-separated,
  a YAML set (``? value``) one line per value.
* **openstack-helm** (``helm-toolkit.utils.to_oslo_conf``): a values
  dictionary written as a file; a list comma-separated, a
  ``{type: multistring, values: [...]}`` one line per value, a null
  skipped. nova-compute then reads the chart's files with
  ``--config-file`` and ``--config-dir``.

Variables are written ``{{ name }}``; a name not given is an error, as
Ansible's is. Filters and expressions are not supported: the printed
files use none.
"""

import collections
import io
import os
import re

from oslo_config import iniparser
import yaml

_VARIABLE = re.compile(r'\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}')


class UndefinedVariable(KeyError):
    """A printed file names a variable the deployment does not define."""


def render(text, variables):
    """Substitute ``{{ name }}`` with the deployment's variables.

    :param text: a file's text.
    :param variables: ``{name: value}``.
    :raises UndefinedVariable: a name not in ``variables``.
    :returns: the text.
    """
    def value(match):
        name = match.group(1)
        if name not in variables:
            raise UndefinedVariable(name)
        return str(variables[name])
    return _VARIABLE.sub(value, text)


def read(path, variables=None):
    """A file's text, rendered when ``variables`` are given."""
    with open(path) as stream:
        text = stream.read()
    return render(text, variables) if variables is not None else text


def load_yaml(path, variables=None):
    """A YAML file, rendered first, as Ansible reads its variables."""
    return yaml.safe_load(read(path, variables))


class _Ini(iniparser.BaseParser):
    """One file's sections: ``{section: {option: [values]}}``."""

    def __init__(self):
        super().__init__()
        self.sections = collections.OrderedDict()
        self._section = None

    def new_section(self, section):
        self._section = self.sections.setdefault(
            section, collections.OrderedDict())

    def assignment(self, key, value):
        if self._section is None:
            self.error_no_section()
        self._section.setdefault(key, []).append('\n'.join(value))

    def parse_exc(self, msg, lineno, line=None):
        return ValueError('line %d: %s: %r' % (lineno, msg, line))


def parse_ini(text):
    """Parse INI text into ``{section: {option: [values]}}``."""
    parser = _Ini()
    parser.parse(io.StringIO(text))
    return parser.sections


def merge(base, override):
    """Merge ``override`` over ``base``, option by option.

    An option in ``override`` replaces all of its values in ``base``.

    :returns: ``base``, changed.
    """
    for section, options in override.items():
        base.setdefault(section, collections.OrderedDict()).update(options)
    return base


def write_ini(path, sections):
    """Write ``{section: {option: [values]}}``, one line per value."""
    lines = []
    for section, options in sections.items():
        lines.append('[%s]' % section)
        for option, values in options.items():
            lines.extend('%s = %s' % (option, value) for value in values)
        lines.append('')
    with open(path, 'w') as stream:
        stream.write('\n'.join(lines))
    return path


# -- kolla-ansible -------------------------------------------------------

def kolla_merge(sources, variables):
    """kolla's merge_configs: render each file present, merge in order.

    :param sources: paths, in kolla's order; missing ones are skipped.
    :param variables: the deployment's variables.
    :returns: ``{section: {option: [values]}}``.
    """
    merged = collections.OrderedDict()
    for path in sources:
        if os.path.exists(path):
            merge(merged, parse_ini(read(path, variables)))
    return merged


def kolla_host(instance):
    """The ``[DEFAULT] host`` kolla gives a nova-compute-ironic instance.

    :param instance: one item of ``nova_multi_compute_ironic_config``.
    """
    if instance.get('custom_host'):
        return '%s-ironic' % instance['custom_host']
    return '%s-%s-ironic' % (instance.get('conductor_group', 'default'),
                             instance.get('shard_key', 'default'))


def kolla_compute_ironic(instance, ironic_endpoint):
    """What kolla's nova.conf template writes for that instance.

    Only the options that matter here: the host name, the driver, the
    Ironic endpoint (no authentication in the tests), the conductor
    group and shard, and the one-host ``peer_list`` kolla writes when a
    group is set without a shard.

    :returns: ``{section: {option: [values]}}``.
    """
    host = kolla_host(instance)
    group = instance.get('conductor_group', 'default')
    shard = instance.get('shard_key', 'default')
    ironic = collections.OrderedDict([
        ('auth_type', ['none']), ('endpoint_override', [ironic_endpoint])])
    if shard not in ('default', ''):
        ironic['shard'] = [shard]
    if group not in ('default', ''):
        ironic['conductor_group'] = [group]
        if shard in ('default', ''):
            ironic['peer_list'] = [host]
    return collections.OrderedDict([
        ('DEFAULT', collections.OrderedDict([
            ('host', [host]), ('compute_driver', ['ironic.IronicDriver'])])),
        ('ironic', ironic)])


# -- OpenStack-Ansible ---------------------------------------------------

def _template_values(value):
    if isinstance(value, dict):
        # NOTE(ironic-partition): a YAML set, ``? a``, loads as {a: None}.
        return [str(v) for v in value]
    if isinstance(value, (list, tuple)):
        return [','.join(str(v) for v in value)]
    return [str(value)]


def osa_merge(base, overrides):
    """config_template: ``overrides`` merged over the role's sections.

    :param base: ``{section: {option: [values]}}``, the role's file.
    :param overrides: the ``*_conf_overrides`` dictionary.
    :returns: ``base``, changed.
    """
    return merge(base, {
        section: collections.OrderedDict(
            (option, _template_values(value))
            for option, value in options.items())
        for section, options in overrides.items()})


# -- openstack-helm ------------------------------------------------------

def to_oslo_conf(values):
    """helm-toolkit's ``to_oslo_conf``: a values dictionary as a file.

    :returns: ``{section: {option: [values]}}``.
    """
    sections = collections.OrderedDict()
    for section, options in values.items():
        out = sections.setdefault(section, collections.OrderedDict())
        for option, value in options.items():
            if value is None:
                continue
            if isinstance(value, list):
                out[option] = [','.join(str(v) for v in value)]
            elif isinstance(value, dict):
                if value.get('type') == 'multistring':
                    out[option] = [str(v) for v in value['values']]
                else:
                    out[option] = [','.join(str(v)
                                            for v in value['values'])]
            else:
                out[option] = [str(value)]
    return sections
