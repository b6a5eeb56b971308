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

"""``ironic-partition`` as a subprocess: its command line, environment and
configuration files, as the functional tests, the fault harness
(:mod:`ironic_partition.testing.commands.agents`) and the benchmarks run it.
"""

import configparser
import json
import os
import subprocess
import sys

#: Fast agent timings.
AGENT_OPTIONS = {'heartbeat_interval': 1, 'service_down_time': 4,
                 'refresh_interval': 1}


def cli_argv():
    """``ironic-partition`` as this interpreter runs it.

    :returns: the console script next to the interpreter, or
        ``python -m ironic_partition.cmd.cli`` where it is not installed.
    """
    script = os.path.join(os.path.dirname(os.path.abspath(sys.executable)),
                          'ironic-partition')
    if os.access(script, os.X_OK):
        return [script]
    return [sys.executable, '-m', 'ironic_partition.cmd.cli']


def osc_argv():
    """The OpenStack client (``openstack``) next to this interpreter.

    :returns: the argv prefix, or None where it is not installed.
    """
    script = os.path.join(os.path.dirname(os.path.abspath(sys.executable)),
                          'openstack')
    return [script] if os.access(script, os.X_OK) else None


def write_clouds_yaml(path, clouds):
    """Write a clouds.yaml for the OpenStack client.

    :param path: where.
    :param clouds: cloud name to its settings, e.g. ``{'auth_type':
        'none', 'auth': {'endpoint': URL}}``.
    :returns: the path.
    """
    with open(path, 'w') as stream:
        json.dump({'clouds': clouds}, stream, indent=2)
    return path


def run_osc(clouds_yaml, *args, timeout=120):
    """Run ``openstack`` with a clouds.yaml and wait for it.

    :param clouds_yaml: the file (``OS_CLIENT_CONFIG_FILE``).
    :param args: the arguments.
    :param timeout: seconds.
    :returns: a ``subprocess.CompletedProcess`` with text output.
    """
    env = cli_env()
    env = {k: v for k, v in env.items() if not k.startswith('OS_')}
    env['OS_CLIENT_CONFIG_FILE'] = clouds_yaml
    return subprocess.run(osc_argv() + list(args), capture_output=True,
                          text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)


def cli_env():
    """The environment of a CLI subprocess.

    :returns: a dict.
    """
    env = dict(os.environ)
    # NOTE(ironic-partition): tox turns DeprecationWarnings on for the
    # tests; an operator's shell does not, and they would add lines to the
    # one-line errors these tests count.
    env['PYTHONWARNINGS'] = 'ignore::DeprecationWarning'
    return env


def run_cli(*args, timeout=120):
    """Run ``ironic-partition`` and wait for it.

    :param args: the arguments.
    :param timeout: seconds.
    :returns: a ``subprocess.CompletedProcess`` with text output.
    """
    return subprocess.run(cli_argv() + list(args), capture_output=True,
                          text=True, timeout=timeout, env=cli_env(),
                          stdin=subprocess.DEVNULL)


def write_conf(path, sections):
    """Write an INI file.

    :param path: where.
    :param sections: ``{section: {option: value}}``.
    :returns: the path.
    """
    parser = configparser.ConfigParser(interpolation=None)
    for section, options in sections.items():
        if section != configparser.DEFAULTSECT:
            parser.add_section(section)
        for key, value in options.items():
            parser[section][key] = str(value)
    with open(path, 'w') as stream:
        parser.write(stream)
    return path


def agent_conf(path, endpoint, host, key, peers, state_path, shard=None,
               **extra):
    """Write an agent's configuration file.

    :param path: where.
    :param endpoint: Ironic's endpoint.
    :param host: the agent's host name.
    :param key: the partition key; None leaves it unset.
    :param peers: the peer list.
    :param state_path: the directory of the SQLite membership database.
    :param shard: ``[ironic] shard``; None leaves it unset.
    :param extra: more ``[ironic_partition]`` options; ``database`` sets
        ``[ironic_partition_database] connection``.
    :returns: the path.
    """
    database = extra.pop('database', None)
    options = dict(AGENT_OPTIONS, host=host, state_path=state_path)
    options.update(extra)
    ironic = {'auth_type': 'none', 'endpoint_override': endpoint,
              'partition_key': key, 'peer_list': ','.join(peers),
              'shard': shard}
    sections = {'ironic': {k: v for k, v in ironic.items()
                           if v is not None},
                'ironic_partition': options}
    if database:
        sections['ironic_partition_database'] = {'connection': database}
    return write_conf(path, sections)


def read_json(path):
    """Read a JSON file, None when missing or being replaced.

    :param path: the file.
    :returns: the document or None.
    """
    try:
        with open(path) as stream:
            return json.load(stream)
    except (OSError, ValueError):
        return None


def findings(rows):
    """The rows of ``check -f json`` grouped by result.

    :param rows: the decoded JSON list (``check``, ``result``,
        ``message``).
    :returns: a dict with ``problems`` and ``warnings`` (lists of
        ``{'check', 'message'}``), ``passed`` and ``skipped`` (check
        names), each in the order listed.
    """
    doc = {'problems': [], 'warnings': [], 'passed': [], 'skipped': []}
    for row in rows:
        result = row['result']
        if result in ('problem', 'warning'):
            doc[result + 's'].append({'check': row['check'],
                                      'message': row['message']})
        else:
            doc[result].append(row['check'])
    return doc
