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

"""``ironic-partition-status upgrade check``, on oslo.upgradecheck.

Run it before and after an upgrade, with the configuration files of the
service it is about, as ``nova-status upgrade check`` is run::

    ironic-partition-status --config-file /etc/nova/nova.conf upgrade check

It prints oslo.upgradecheck's table (``--json`` for a document) and
exits 0 (success), 1 (a warning), 2 (a failure) or 255 (the check itself
failed). The checks are those of ``ironic-partition check``
(:mod:`ironic_partition.cmd.check`), grouped, plus the claim timing
against the consumer's cadence, whether every conductor group and shard
with nodes is served (by a live service of the role, and by an alive
conductor for each hardware type), and whether Ironic's change feed can
be used; each reads only, and none joins the membership.
"""

import logging as std_logging
import sys

from oslo_config import cfg
from oslo_log import log as logging
from oslo_upgradecheck import upgradecheck

from ironic_partition._i18n import _
from ironic_partition.cmd import _args
from ironic_partition.cmd import checks
from ironic_partition import conf as ip_conf
from ironic_partition.conf import partition as partition_conf
from ironic_partition import exception
from ironic_partition.membership import base as membership_base
from ironic_partition import settings as settings_mod
from ironic_partition.settings import claims as claim_settings

LOG = logging.getLogger(__name__)

PROJECT = 'ironic-partition'

#: The rows of the table: a title and the ``check`` names behind it.
GROUPS = (
    ('config', _('Configuration'), ('config', 'case', 'peers')),
    ('database', _('Membership and claims database'),
     ('database', 'privileges', 'duplicates', 'schema')),
    ('ironic', _('Ironic and the conductor group'), ('ironic', 'group')),
    ('fleet', _('Conductor groups and shards served'),
     ('coverage', 'served')),
    ('shards', _('Shards'), ('shards',)),
    ('feed', _('Change feed'), ('feed',)),
)

_OPTS = [
    cfg.StrOpt('role', default=membership_base.ROLE_NOVA_COMPUTE,
               choices=membership_base.ROLES,
               help=_('The membership role of the service the configuration '
                      'files are for.')),
    cfg.BoolOpt('new-deployment', default=False,
                help=_('Check a deployment before its first service of the '
                       'role starts (the schema created, no service run '
                       'yet): peers that never heartbeated and conductor '
                       'groups no live service lists are expected, not '
                       'failures. Everything else is checked as usual.')),
    cfg.BoolOpt('adopting', default=False,
                help=_('Check a compute during a rolling switch from nova\'s '
                       'own ironic driver: peers of [ironic] peer_list that '
                       'never heartbeated are taken to still run nova\'s '
                       'driver (a warning), not failures.')),
]


def _any_partition(conf):
    """The partition settings, or a stand-in when they do not validate.

    The timing row reports on the claim options alone; the configuration
    row reports the partition options.
    """
    try:
        return ip_conf.get_settings(conf)
    except (exception.ConfigurationError, ValueError):
        return ip_conf.PartitionSettings(None, (), ip_conf.get_host(conf))


def consumer_cadence(conf, role):
    """The cadence the claims must fit, read from the configuration.

    :param conf: the parsed ``ConfigOpts``.
    :param role: the membership role.
    :returns: a :data:`~ironic_partition.settings.claims.Cadence`.
    """
    if role != membership_base.ROLE_NOVA_COMPUTE:
        return claim_settings.agent_cadence(
            conf[partition_conf.GROUP].refresh_interval)
    return claim_settings.nova_cadence(conf.update_resources_interval)


class Checks(upgradecheck.UpgradeCommands):
    """The upgrade checks of ironic-partition.

    :param conf: the parsed ``ConfigOpts``, ironic-partition's options
        registered.
    """

    def __init__(self, conf):
        self.conf = conf
        self._doc = None

    def _run(self):
        if self._doc is None:
            self._doc = checks.run_checks(
                self.conf, self.conf.role, feed_usable=True, fleet=True,
                new_deployment=self.conf.new_deployment,
                adopting=self.conf.adopting)
        return self._doc

    def _group(self, names):
        doc = self._run()
        problems = [p['message'] for p in doc['problems']
                    if p['check'] in names]
        warnings = [w['message'] for w in doc['warnings']
                    if w['check'] in names]
        if problems:
            return upgradecheck.Result(upgradecheck.Code.FAILURE,
                                       ' '.join(problems + warnings))
        if warnings:
            return upgradecheck.Result(upgradecheck.Code.WARNING,
                                       ' '.join(warnings))
        if not any(n in doc['passed'] for n in names):
            return upgradecheck.Result(
                upgradecheck.Code.WARNING,
                _('Not checked: it needs what failed above.'))
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)

    def _check_timing(self):
        cadence = consumer_cadence(self.conf, self.conf.role)
        try:
            resolved = settings_mod.from_conf(
                self.conf, cadence, partition=_any_partition(self.conf))
            settings = resolved.claims()
        except (exception.ConfigurationError, ValueError) as e:
            return upgradecheck.Result(upgradecheck.Code.FAILURE, str(e))
        details = (
            _('lease_time %(lease)s s, fencing_margin %(margin)s s, '
              'renewed every %(renew).1f s; %(option)s is %(interval)s s')
            % {'lease': settings.lease_time,
               'margin': settings.fencing_margin,
               'renew': settings.renew_interval,
               'option': cadence.interval_option,
               'interval': cadence.interval})
        warning = claim_settings.slow_return_warning(resolved, settings)
        if warning is not None:
            # NOTE(ironic-partition): the warning every start logs is a
            # row too, so that the table and --json carry it.
            return upgradecheck.Result(upgradecheck.Code.WARNING,
                                       '%s. %s' % (warning, details))
        return upgradecheck.Result(upgradecheck.Code.SUCCESS, details)


def _group_check(names):
    return lambda self: self._group(names)


# NOTE(ironic-partition): the table's rows, in order: the configuration,
# the claim timing, then the rest of GROUPS.
Checks._upgrade_checks = (
    ((GROUPS[0][1], _group_check(GROUPS[0][2])),
     (_('Claim timing'), Checks._check_timing)) +
    tuple((title, _group_check(names)) for _key, title, names in GROUPS[1:]))


#: The exit code of a check that could not run (oslo.upgradecheck's own
#: code for an error).
UPGRADE_CHECK_ERROR = 255


def register_opts(conf):
    """Register every option the upgrade check reads.

    :param conf: an ``oslo_config.cfg.ConfigOpts``.
    :returns: None
    """
    logging.register_options(conf)
    ip_conf.register_opts(conf)
    conf.register_cli_opts(_OPTS)
    if 'update_resources_interval' not in conf:
        # NOTE(ironic-partition): nova's option, read to check the claims
        # against its cadence; registered here as nova defines it.
        conf.register_opt(cfg.IntOpt('update_resources_interval',
                                     default=0))


def main(argv=None, conf=None):
    """Run ``ironic-partition-status``.

    :param argv: the arguments, ``sys.argv[1:]`` by default.
    :param conf: the ``ConfigOpts`` to use, a new one by default.
    :returns: the exit code.
    """
    conf = conf if conf is not None else cfg.ConfigOpts()
    commands = Checks(conf)
    register_opts(conf)
    upgradecheck.register_cli_options(conf, commands)
    # NOTE(ironic-partition): a file that is missing or does not parse, or
    # a bad argument: one line and 255 ("the check could not run"), as the
    # page says; 1 would read as "warnings only" to a script.
    error = _args.parse_script_args(
        conf, sys.argv[1:] if argv is None else argv,
        'ironic-partition-status', PROJECT, UPGRADE_CHECK_ERROR)
    if error is not None:
        return error
    if conf.role == membership_base.ROLE_NOVA_COMPUTE:
        # NOTE(ironic-partition): nova.conf's [DEFAULT] host names the
        # service, as nova-compute reads it.
        ip_conf.register_nova_host_opt(conf)
    # NOTE(ironic-partition): what upgradecheck.main() sets; check()
    # reads --json from it.
    upgradecheck.CONF = conf
    # NOTE(ironic-partition): the table is the output; what the checks
    # log goes to stderr, warnings and above unless --debug.
    _args.log_to_stderr(conf, PROJECT)
    if not conf.debug:
        std_logging.getLogger().setLevel(std_logging.WARNING)
        std_logging.getLogger('stevedore').setLevel(std_logging.ERROR)
    return upgradecheck.run(conf)


if __name__ == '__main__':
    sys.exit(main())
