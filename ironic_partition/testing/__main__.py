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

"""``python -m ironic_partition.testing``: run by hand.

``start`` brings Ironic up, prints its description as one JSON document
on stdout and stays up until SIGTERM, SIGINT or SIGHUP, then tears
everything down (also on any error, and at interpreter exit).
``enroll`` adds nodes to a running harness; ``cleanup`` removes what a
killed harness left behind.
"""

import argparse
import atexit
import collections
import json
import logging
import os
import shutil
import signal
import sys
import threading

from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import db as harness_db
from ironic_partition.testing.services import enroll
from ironic_partition.testing.services import ironic

LOG = logging.getLogger(__name__)

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _Interrupted(BaseException):
    """Raised by the signal handler while Ironic is still starting."""


def parse_groups(value):
    """Parse ``rack1,rack1,rack2,`` into a list (``''`` is the default).

    :param value: the comma-separated groups.
    :returns: a list of lower-case group names.
    """
    groups = value.split(',')
    for group in groups:
        if group != group.strip() or group != group.lower():
            raise argparse.ArgumentTypeError(
                'conductor groups are lower case without spaces: %r' % group)
    return groups


def parse_setting(value):
    """Parse ``section.option=value``.

    :param value: the setting.
    :returns: a ``(section, option, value)`` tuple.
    """
    key, sep, val = value.partition('=')
    section, dot, option = key.rpartition('.')
    if not sep or not dot or not option:
        raise argparse.ArgumentTypeError(
            'expected SECTION.OPTION=VALUE, got %r' % value)
    return section, option, val


def _extra_config(settings):
    config = {}
    for section, option, value in settings or ():
        config.setdefault(section, {})[option] = value
    return config


def _load_state(path):
    with open(path) as stream:
        return json.load(stream)


def _write_state(path, state):
    tmp = path + '.tmp'
    with open(tmp, 'w') as stream:
        json.dump(state, stream, indent=2, sort_keys=True)
    os.replace(tmp, path)


def cmd_start(args):
    """Start Ironic, print the JSON description, wait for a signal.

    :param args: the parsed arguments.
    :returns: the exit code.
    """
    fixture = ironic.IronicFixture(
        db_backend=args.db_backend,
        conductor_groups=args.groups,
        mode='single' if args.single else 'multi',
        workdir=args.workdir,
        extra_config=_extra_config(args.set),
        start_timeout=args.start_timeout,
        keep_workdir=args.keep_workdir,
        debug=args.debug)
    stop = threading.Event()
    state = {'raise': True, 'cleaned': False}

    def handler(signum, frame):
        LOG.info('Got %s, tearing down', signal.Signals(signum).name)
        stop.set()
        if state['raise']:
            # NOTE(harness): only once, and never during the teardown.
            state['raise'] = False
            raise _Interrupted()

    def cleanup():
        state['raise'] = False
        if state['cleaned']:
            return
        state['cleaned'] = True
        fixture.cleanUp()
        if args.state_file:
            try:
                os.unlink(args.state_file)
            except FileNotFoundError:
                pass

    for signum in _STOP_SIGNALS:
        signal.signal(signum, handler)
    # NOTE(harness): the safety net for an exception we did not expect;
    # fixture.setUp() already cleans up after its own failures.
    atexit.register(cleanup)
    try:
        fixture.setUp()
    except _Interrupted:
        state.update({'raise': False, 'cleaned': True})
        LOG.error('Interrupted while starting; torn down')
        return 1
    except Exception as exc:
        state.update({'raise': False, 'cleaned': True})
        LOG.error('Ironic did not start: %s', _short(exc))
        return 1
    try:
        description = fixture.describe()
        if args.nodes:
            nodes = enroll.bulk_enroll(
                fixture.config_file, args.nodes, fixture.conductor_groups,
                resource_class=args.resource_class,
                provision_state=args.node_state)
            description['nodes'] = _node_summary(nodes)
        state['raise'] = False
        if args.state_file:
            _write_state(args.state_file, description)
        sys.stdout.write(json.dumps(description, sort_keys=True) + '\n')
        sys.stdout.flush()
        while not stop.wait(1):
            pass
    finally:
        cleanup()
    return 0


def _node_summary(nodes):
    return {'count': len(nodes),
            'by_conductor_group': dict(collections.Counter(
                n['conductor_group'] for n in nodes))}


def _short(exc):
    text = str(exc)
    return text if len(text) < 4000 else text[:4000] + '...'


def cmd_enroll(args):
    """Add nodes to a running harness and print a JSON summary.

    :param args: the parsed arguments.
    :returns: the exit code.
    """
    state = _load_state(args.state_file)
    groups = args.groups
    if groups is None:
        groups = sorted({c['conductor_group'] for c in state['conductors']}
                        or {''})
    if args.api:
        conn = enroll.connect(state['endpoint'])
        nodes = enroll.enroll_api(conn, args.count, groups,
                                  resource_class=args.resource_class,
                                  name_prefix=args.name_prefix)
        if args.node_state == 'available':
            enroll.make_available(conn, nodes)
    else:
        nodes = enroll.bulk_enroll(state['config_file'], args.count, groups,
                                   resource_class=args.resource_class,
                                   name_prefix=args.name_prefix,
                                   provision_state=args.node_state)
    sys.stdout.write(json.dumps(_node_summary(nodes), sort_keys=True) + '\n')
    return 0


def cmd_cleanup(args):
    """Kill the services of a dead harness and drop leftover databases.

    :param args: the parsed arguments.
    :returns: the exit code.
    """
    if args.state_file and os.path.exists(args.state_file):
        state = _load_state(args.state_file)
        pids = [state['api']['pid']] + [c['pid'] for c in state['conductors']]
        for pid in harness_process.pids_alive(pids):
            LOG.info('Killing process group %s', pid)
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        harness_process.wait_for(
            lambda: not any(harness_process.group_members(pid)
                            for pid in pids),
            30, 'the process groups %s to vanish' % pids)
        workdir = state.get('workdir') or ''
        if (os.path.basename(workdir).startswith(ironic.WORKDIR_PREFIX)
                and os.path.isfile(os.path.join(workdir, 'ironic.conf'))):
            LOG.info('Removing %s', workdir)
            shutil.rmtree(workdir, ignore_errors=True)
        database = state['database']
        if database['backend'] != 'sqlite':
            harness_db.drop_database(database['backend'], database['name'])
        os.unlink(args.state_file)
    for backend in args.db_backend:
        for name in harness_db.list_leftover_databases(backend):
            owner = _owner_pid(name)
            if owner and harness_process.pids_alive([owner]) and not args.all:
                LOG.info('Keeping %s: its harness (pid %s) still runs',
                         name, owner)
                continue
            harness_db.drop_database(backend, name)
    return 0


def _owner_pid(name):
    try:
        return int(name[len(harness_db.NAME_PREFIX):].split('_')[0])
    except ValueError:
        return None


def build_parser():
    """Build the argument parser of the command.

    :returns: an ``argparse.ArgumentParser``.
    """
    parser = argparse.ArgumentParser(
        prog='python -m ironic_partition.testing',
        description=__doc__.strip().splitlines()[0])
    parser.add_argument('-v', '--verbose', action='store_true',
                        help='log the harness at DEBUG level')
    sub = parser.add_subparsers(dest='command', required=True)

    start = sub.add_parser('start', help='start Ironic and wait for a '
                           'signal')
    start.add_argument('--db-backend',
                       choices=harness_db.BACKENDS,
                       help='database (default: postgresql; sqlite with '
                       '--single)')
    start.add_argument('--groups', type=parse_groups,
                       default=list(ironic.DEFAULT_CONDUCTOR_GROUPS),
                       help='one conductor per comma-separated group; an '
                       'empty item is the default group (default: '
                       '"rack1,rack1,rack2,")')
    start.add_argument('--single', action='store_true',
                       help='run the all-in-one "ironic" command')
    start.add_argument('--nodes', type=int, default=0,
                       help='bulk-enroll this many nodes across the groups')
    start.add_argument('--node-state', default='enroll',
                       choices=('enroll', 'manageable', 'available'))
    start.add_argument('--resource-class',
                       default=enroll.DEFAULT_RESOURCE_CLASS)
    start.add_argument('--workdir', help='parent of the run directory')
    start.add_argument('--keep-workdir', action='store_true',
                       help='keep configuration and logs after teardown')
    start.add_argument('--state-file',
                       help='also write the JSON description here (removed '
                       'at teardown)')
    start.add_argument('--start-timeout', type=float, default=180)
    start.add_argument('--set', action='append', type=parse_setting,
                       metavar='SECTION.OPTION=VALUE',
                       help='extra Ironic configuration (repeatable)')
    start.add_argument('--debug', action='store_true',
                       help='run the services with debug logging')
    start.set_defaults(func=cmd_start)

    add = sub.add_parser('enroll', help='add nodes to a running harness')
    add.add_argument('--state-file', required=True)
    add.add_argument('--count', type=int, required=True)
    add.add_argument('--groups', type=parse_groups,
                     help='groups, round robin (default: the conductors\')')
    add.add_argument('--api', action='store_true',
                     help='through the API instead of the database')
    add.add_argument('--node-state', default='enroll',
                     choices=('enroll', 'manageable', 'available'))
    add.add_argument('--resource-class',
                     default=enroll.DEFAULT_RESOURCE_CLASS)
    add.add_argument('--name-prefix', default='extra-node')
    add.set_defaults(func=cmd_enroll)

    clean = sub.add_parser('cleanup', help='remove what a killed harness '
                           'left behind')
    clean.add_argument('--state-file')
    clean.add_argument('--db-backend', action='append',
                       choices=('postgresql', 'mysql'),
                       help='look for leftover databases here (repeatable; '
                       'default: both)')
    clean.add_argument('--all', action='store_true',
                       help='also drop databases of harnesses still running')
    clean.set_defaults(func=cmd_cleanup)
    return parser


def main(argv=None):
    """Run the command.

    :param argv: the arguments; ``sys.argv[1:]`` by default.
    :returns: the exit code.
    """
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        stream=sys.stderr,
        format='%(asctime)s %(levelname)s %(name)s %(message)s')
    if args.command == 'cleanup' and not args.db_backend:
        args.db_backend = ['postgresql', 'mysql']
    if args.command == 'start' and args.single:
        args.groups = ['']
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
