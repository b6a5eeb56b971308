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

"""The OpenStack client plugin: ``openstack baremetal partition ...``.

Registered in the ``openstack.cli.extension`` entry point namespace, the
way python-ironic-inspector-client adds ``openstack baremetal
introspection``. Its commands are the ``openstack.baremetal_partition.v1``
entry points: the same classes as ``ironic-partition``'s.

osc-lib authenticates (``--os-cloud`` and clouds.yaml, ``OS_*``, or
``--os-auth-type none --os-endpoint URL`` for a noauth Ironic) and
:func:`make_client` builds the Ironic client on its session. The
partition settings and the membership database still come from the
service's configuration files (``--config-file``).
"""

from ironic_partition._i18n import _

#: The name osc-lib keeps this plugin's client under
#: (``client_manager.baremetal_partition``).
API_NAME = 'baremetal_partition'
#: The option (and its default) choosing the command group's version.
API_VERSION_OPTION = 'os_baremetal_partition_api_version'
DEFAULT_API_VERSION = '1'
#: The command groups, by version: ``openstack.baremetal_partition.v1``.
API_VERSIONS = {'1': 'ironic_partition.cmd.osc_plugin.Clients'}


class Clients(object):
    """What the commands need from the OpenStack client.

    :param instance: osc-lib's ``ClientManager``.
    """

    def __init__(self, instance):
        self.instance = instance

    def ironic_client(self, **kwargs):
        """An Ironic client on the session osc-lib authenticated.

        :param kwargs: more
            :class:`~ironic_partition.ironic.baremetal.IronicClient` arguments.
        :returns: an :class:`~ironic_partition.ironic.baremetal.IronicClient`.
        """
        # NOTE(ironic-partition): imported here: the OpenStack client
        # loads every plugin module for its help.
        from ironic_partition import exception
        from ironic_partition.ironic import baremetal

        instance = self.instance
        try:
            endpoint = instance.get_endpoint_for_service_type(
                'baremetal', region_name=instance.region_name,
                interface=instance.interface)
        except Exception as e:
            raise exception.IronicUnavailable(
                endpoint=_('(the baremetal endpoint of the catalog)'),
                reason=e)

        def connect():
            # NOTE(ironic-partition): the connection osc-lib built from the
            # cloud's configuration, on its authenticated session.
            return instance.sdk_connection

        return baremetal.IronicClient(connect=connect, endpoint=endpoint,
                                      **kwargs)


def make_client(instance):
    """Build this plugin's client (osc-lib's plugin interface).

    :param instance: osc-lib's ``ClientManager``.
    :returns: a :class:`Clients`.
    """
    return Clients(instance)


def build_option_parser(parser):
    """Add this plugin's global options (osc-lib's plugin interface).

    :param parser: the ``openstack`` argparse parser.
    :returns: the parser.
    """
    parser.add_argument(
        '--os-baremetal-partition-api-version',
        metavar='<baremetal-partition-api-version>',
        default=DEFAULT_API_VERSION,
        help=_('The version of the "baremetal partition" commands '
               '(default: %s).') % DEFAULT_API_VERSION)
    return parser
