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

"""Options of the ``[ironic_partition_database]`` group.

The group holds the same options as oslo.db's ``[database]`` group, so
operators know them already, but it is a separate group: inside
nova-compute ``[database]`` belongs to nova and must not be touched.

The default ``connection`` is an SQLite file below
``[ironic_partition] state_path``, so one host (or a demo) needs no
configuration at all.
"""

import copy

from oslo_config import cfg
from oslo_db import options as db_options

from ironic_partition._i18n import _

GROUP = 'ironic_partition_database'

#: The default connection: an SQLite file below the state directory.
DEFAULT_CONNECTION = ('sqlite:///$ironic_partition.state_path/'
                      'ironic_partition.sqlite')


def _build_opts():
    """Copy oslo.db's database options for our own group.

    The copies lose their deprecated names: those point at nova's (or any
    other project's) ``[DEFAULT] sql_*`` and ``[DATABASE]`` options, which
    must never configure the partition database by accident.

    :returns: a list of new ``oslo_config.cfg.Opt`` objects.
    """
    result = []
    for opt in db_options.database_opts:
        new = copy.deepcopy(opt)
        new.deprecated_opts = []
        if new.dest == 'connection':
            new.default = DEFAULT_CONNECTION
            new.help = _(
                'The SQLAlchemy URL of the membership database, e.g. '
                'postgresql+psycopg2://user:pass@host/ironic_partition or '
                'mysql+pymysql://user:pass@host/ironic_partition. All '
                'services of a deployment must share it. The default is '
                'an SQLite file below [ironic_partition] state_path, '
                'which suits a single host only; its schema is created '
                'and upgraded automatically. A server database must be '
                'prepared with "ironic-partition-dbsync upgrade".')
        result.append(new)
    return result


opts = _build_opts()


def register_opts(conf):
    """Register the ``[ironic_partition_database]`` options.

    :param conf: an ``oslo_config.cfg.ConfigOpts`` instance.
    :returns: None
    """
    conf.register_group(cfg.OptGroup(
        GROUP, title=_('ironic-partition membership database'),
        help=_('Where the services of ironic-partition heartbeat when '
               '[ironic_partition] membership_backend is "database". Same '
               'options as oslo.db\'s [database] group.')))
    conf.register_opts(opts, group=GROUP)


def list_opts():
    """Return the options for oslo-config-generator.

    :returns: ``[('ironic_partition_database', opts)]``.
    """
    return [(GROUP, copy.deepcopy(opts))]
