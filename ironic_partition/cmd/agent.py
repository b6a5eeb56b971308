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
"""``ironic-partition serve``: run the standalone partition agent.

The agent (:class:`~ironic_partition.cmd.agent_service.PartitionAgent`,
whose module documents the report file) runs under oslo.service's
*threading* backend (never eventlet), a ``Launcher`` with
``restart_method='mutate'`` in the main process. The main thread waits for
signals synchronously (they are blocked in every thread and taken with
``sigwaitinfo``):

``SIGHUP``
    ``Launcher.restart()``: the configuration files are re-read
    (``mutate_config_files``) and the mutate hooks run; the mixin's hook
    applies a new ``[ironic] partition_key`` / ``peer_list`` at once
    (a refresh follows immediately). An invalid new value is rejected
    with one ERROR line and the old settings stay in force.
``SIGTERM``, ``SIGINT``
    graceful stop: the refresh in flight finishes, the agent leaves the
    membership (peers take its nodes over at their next refresh, without
    waiting for ``service_down_time``), the report file says
    ``"state": "stopped"``, exit status 0.

NOTE(ironic-partition): oslo.service's threading ``ServiceLauncher`` runs
the service in a cotyledon worker process whose SIGHUP handler restarts
the worker instead of calling the mutate hooks in it (and whose respawn
would fail on an invalid value), hence the plain ``Launcher`` here.
"""

import os
import signal

from oslo_log import log as logging
from oslo_service import backend as service_backend

from ironic_partition import __version__
from ironic_partition._i18n import _
from ironic_partition.cmd import _args
from ironic_partition.cmd import _errors
from ironic_partition.cmd import agent_service
from ironic_partition.cmd import base as base_cmd
from ironic_partition import exception
from ironic_partition.ironic import conductor_groups
from ironic_partition.membership import base as membership_base
from ironic_partition.partition import instance_owners

LOG = logging.getLogger(__name__)

#: The signals the main thread waits for.
SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM)


def _check_ironic(agent):
    """Check the conductor group once at start.

    :param agent: the
        :class:`~ironic_partition.cmd.agent_service.PartitionAgent`.
    :raises UnknownConductorGroup: the group does not exist.
    :returns: None
    """
    settings = agent.partitioner.settings
    try:
        conductor_groups.check(agent.partitioner.client,
                               settings.partition_key)
    except (exception.IronicUnavailable, exception.IronicRequestError) as e:
        LOG.warning('Cannot check the conductor group in Ironic now; the '
                    'agent reports "not ready" until Ironic answers: %s', e)


def _wait_for_signals(launcher, agent):
    """Serve signals until SIGTERM or SIGINT.

    :param launcher: the oslo.service launcher.
    :param agent: the
        :class:`~ironic_partition.cmd.agent_service.PartitionAgent`.
    :returns: None
    """
    while True:
        info = signal.sigwaitinfo(SIGNALS)
        signum = info.si_signo
        if signum != signal.SIGHUP:
            LOG.info('Caught %s, stopping', signal.Signals(signum).name)
            return
        old = agent.partitioner.settings
        LOG.info('Caught SIGHUP, reloading the configuration files')
        try:
            launcher.restart()
        except Exception as e:
            LOG.error('SIGHUP: rejected the configuration files, keeping '
                      'partition_key=%(key)r peer_list=%(peers)s: %(err)s',
                      {'key': old.partition_key,
                       'peers': ','.join(old.peer_list),
                       'err': _errors.describe_error(e, agent.conf)})


class Serve(base_cmd.Command):
    """Run the partition agent: heartbeat, refresh, reload on SIGHUP.

    The agent runs the nova driver's code path without nova and logs the
    nodes gained and lost at each refresh, where the configuration says.
    SIGHUP re-reads the configuration files; SIGTERM and SIGINT stop it
    gracefully (it leaves the membership first). A service, so only
    ``ironic-partition`` offers it, not the OpenStack client.
    """

    default_role = membership_base.ROLE_AGENT

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _args.add_instance_hosts_argument(parser)
        parser.add_argument(
            '--report-file', metavar='PATH',
            help=_('Write a JSON snapshot of this agent\'s nodes to PATH '
                   'after every refresh, atomically (see the CLI '
                   'reference for its format).'))
        parser.add_argument(
            '--takeover', action='store_true',
            help=_('If another live process holds this host name, replace '
                   'it instead of refusing to start: the old process can '
                   'no longer heartbeat, renew or take a claim, and its '
                   'nodes are taken over once their lease runs out. Fails '
                   'when no live process holds the name.'))
        return parser

    def take_action(self, parsed_args):
        """Run until SIGTERM or SIGINT.

        :param parsed_args: the parsed arguments.
        :returns: the exit code.
        """
        conf = self.load_conf(parsed_args)
        # NOTE(ironic-partition): block the signals before any thread
        # starts, so that every thread inherits the mask and only
        # sigwaitinfo() in the main thread takes them.
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        try:
            return _serve(conf, parsed_args)
        finally:
            # NOTE(ironic-partition): the agent has stopped and the process
            # is exiting (which takes a moment while thread pools shut
            # down). A SIGTERM sent now, pending or still to come, must
            # not turn a clean exit into death by signal: ignore these
            # signals from here on, then take what is pending and unblock.
            for signum in SIGNALS:
                signal.signal(signum, signal.SIG_IGN)
            while signal.sigtimedwait(SIGNALS, 0) is not None:
                pass
            signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)


def _serve(conf, args):
    agent_service.init_threading_backend()
    report_file = (os.path.abspath(args.report_file) if args.report_file
                   else None)
    if args.instance_hosts:
        instance_owners.load(args.instance_hosts)
    agent = agent_service.PartitionAgent(
        conf, role=args.role, report_file=report_file,
        instance_hosts_file=args.instance_hosts)
    agent.partition_setup(conf, version=__version__,
                          takeover=args.takeover)
    agent.partitioner.add_fence_listener(agent.on_fenced)
    agent.partitioner.add_renew_listener(agent.on_renewed)
    if report_file is not None:
        try:
            agent_service.write_report(report_file, agent.report(
                'starting', ready=False, reason=_('starting')))
        except OSError as e:
            raise exception.InvalidCommandInput(
                option='--report-file', value=args.report_file,
                reason=e.strerror or e)
    _check_ironic(agent)
    agent.partition_start()
    launcher = None
    try:
        launcher = service_backend.get_component('Launcher')(
            conf, restart_method='mutate')
        launcher.launch_service(agent)
        settings = agent.partitioner.settings
        LOG.info('Partition agent %(host)s (%(role)s) started: '
                 'partition_key %(key)r, shard %(shard)r, peers %(peers)s, '
                 'refresh every %(interval)d s, membership %(backend)s, '
                 'report file %(report)s',
                 {'host': settings.host, 'role': args.role,
                  'key': settings.partition_key, 'shard': settings.shard,
                  'peers': ','.join(settings.peer_list) or '-',
                  'interval': settings.cadence.interval,
                  'backend': settings.membership_backend,
                  'report': report_file or '-'})
        _wait_for_signals(launcher, agent)
    finally:
        if launcher is not None:
            launcher.stop()
            launcher.wait()
        else:
            agent.partition_stop()
    return _errors.EXIT_OK
