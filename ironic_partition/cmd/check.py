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

"""``ironic-partition check``: validate a configuration against the system.

One row per problem, warning, passed or skipped check (the checks are
listed in :mod:`ironic_partition.cmd.checks`); exit code 1 when there is
a problem, 0 otherwise. Peers that heartbeated but are dead now are
warnings: they do not change the exit code.
"""

from ironic_partition._i18n import _
from ironic_partition.cmd import _errors
from ironic_partition.cmd import _output
from ironic_partition.cmd import base as base_cmd
from ironic_partition.cmd import checks
from ironic_partition.membership import base as membership_base


def finding_rows(doc):
    """One row per finding, then per passed and skipped check.

    :param doc: what :func:`~ironic_partition.cmd.checks.run_checks`
        returned.
    :returns: a list of dicts with ``check``, ``result`` and ``message``.
    """
    rows = [dict(p, result=p['severity']) for p in doc['problems']]
    rows += [dict(w, result=w['severity']) for w in doc['warnings']]
    rows += [{'check': name, 'result': 'passed', 'message': None}
             for name in doc['passed']]
    rows += [{'check': name, 'result': 'skipped', 'message': None}
             for name in doc['skipped']]
    return rows


class Check(base_cmd.Lister):
    """Validate the configuration against Ironic and the database.

    One row per problem, warning, passed or skipped check.

    Exits 1 when a check found a problem. Read-only.
    """

    default_role = membership_base.ROLE_NOVA_COMPUTE

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--inspection-config', metavar='IRONIC_CONF',
            help=_('Also audit every node against the inspection hook\'s '
                   'map, read from [ironic_partition_inspection] of this '
                   'ironic-conductor configuration file: nodes whose group '
                   'or shard differs from the map (warnings), and nodes in '
                   'a group where no alive conductor serves their hardware '
                   'type (problems). Read-only.'))
        parser.add_argument(
            '--compare-feed', action='store_true',
            help=_('Also check Ironic\'s change feed: list the partition '
                   'in full, read the feed as a refresh does, list in full '
                   'again, and report any node on which they disagree (a '
                   'problem), or why the feed cannot be used (a warning: '
                   'every refresh then lists in full). Costs two full '
                   'listings. Read-only.'))
        parser.add_argument(
            '--adopting', action='store_true',
            help=_('During a rolling switch from nova\'s own ironic driver: '
                   'peers of [ironic] peer_list that never heartbeated are '
                   'taken to still run nova\'s driver (a warning), not '
                   'problems.'))
        return parser

    def take_action(self, parsed_args):
        conf = self.load_conf(parsed_args)
        client = None
        if getattr(self.app, 'client_manager', None) is not None:
            client = self.ironic_client(conf)
        with _output.Progress().task(_('Checking')):
            doc = checks.run_checks(
                conf, parsed_args.role,
                inspection_config=parsed_args.inspection_config,
                compare_feed=parsed_args.compare_feed, client=client,
                adopting=parsed_args.adopting)
        if doc['problems']:
            self.exit_code = _errors.EXIT_PROBLEMS
        return base_cmd.rows(finding_rows(doc),
                             ('check', 'result', 'message'))
