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

"""nova-api and nova-scheduler next to a NovaFixture, booting servers.

With :class:`NovaAPIFixture` the nova lane is the whole of nova: the
compute API (nova 34's ``nova.wsgi.osapi_compute`` under gunicorn) and
nova-scheduler, on the :class:`~ironic_partition.testing.NovaFixture`'s
databases and message bus, with host discovery, one flavor per Ironic
resource class as Ironic's install guide sets it, and openstacksdk
helpers to boot and delete servers.

What differs from production, and why:

* no keystone: nova-api's pipeline is nova's own less ``authtoken``, and
  its ``keystonecontext`` filter builds the request context from the
  identity headers keystonemiddleware would set
  (:data:`~.apiservice.ADMIN_HEADERS`); policy is enforced as usual;
* servers are booted with ``networks: none`` (API 2.37+), and Ironic's
  nodes have the ``noop`` network interface: no port is ever created
  (neutron answers the delete path's port listing; see
  :mod:`.neutron`);
* the scheduler discovers new compute hosts every 2 s
  (``[scheduler] discover_hosts_in_cells_interval``) instead of an
  operator running ``nova-manage cell_v2 discover_hosts``;
* the scheduler handles one request at a time
  (``executor_thread_pool_size = 1``): placement over-allocated Ironic
  nodes under concurrent claims.

Usage::

    glance = self.useFixture(harness.GlanceFixture())
    neutron = self.useFixture(harness.NeutronFixture())
    nova = self.useFixture(harness.NovaFixture(
        ironic.endpoint, hosts, glance_endpoint=glance.endpoint,
        neutron_endpoint=neutron.endpoint))
    api = self.useFixture(harness.NovaAPIFixture(nova, glance))
    server = api.boot('vm-1')
"""

from concurrent import futures
import datetime
import os

from ironic_partition.testing.lanes import servers as harness_servers
from ironic_partition.testing import process as harness_process
from ironic_partition.testing.services import apiservice

#: nova's compute API pipeline without ``authtoken``.
PASTE = """
[composite:osapi_compute]
use = call:nova.api.openstack.urlmap:urlmap_factory
/: oscomputeversions
/v2.1: oscomputeversion_v2
/v2.1/+: openstack_compute_api_v21

[pipeline:openstack_compute_api_v21]
pipeline = compute_req_id faultwrap request_log sizelimit keystonecontext
    osapi_compute_app_v21

[pipeline:oscomputeversions]
pipeline = faultwrap request_log oscomputeversionapp

[pipeline:oscomputeversion_v2]
pipeline = compute_req_id faultwrap request_log oscomputeversionapp_v2

[filter:request_log]
paste.filter_factory = nova.api.openstack.requestlog:RequestLog.factory

[filter:compute_req_id]
paste.filter_factory = nova.api.compute_req_id:ComputeReqIdMiddleware.factory

[filter:faultwrap]
paste.filter_factory = nova.api.openstack:FaultWrapper.factory

[filter:sizelimit]
paste.filter_factory = oslo_middleware:RequestBodySizeLimiter.factory

[filter:keystonecontext]
paste.filter_factory = nova.api.auth:NovaKeystoneContext.factory

[app:osapi_compute_app_v21]
paste.app_factory = nova.api.openstack.compute:APIRouterV21.factory

[app:oscomputeversionapp]
paste.app_factory = nova.api.openstack.compute.versions:Versions.factory

[app:oscomputeversionapp_v2]
paste.app_factory = nova.api.openstack.compute.versions:VersionsV2.factory
"""

#: Seconds between the scheduler's host discoveries.
DISCOVER_INTERVAL = 2


def flavor_name(resource_class):
    """The harness's flavor for an Ironic resource class.

    :param resource_class: e.g. ``baremetal``.
    :returns: e.g. ``bm.baremetal``.
    """
    return 'bm.%s' % resource_class.lower()


def custom_class(resource_class):
    """placement's custom resource class of an Ironic resource class.

    :param resource_class: e.g. ``baremetal``.
    :returns: e.g. ``CUSTOM_BAREMETAL``.
    """
    return 'CUSTOM_' + ''.join(
        c if c.isalnum() else '_' for c in resource_class.upper())


class NovaAPIFixture(apiservice.APIServiceFixture):
    """nova-api and nova-scheduler for a :class:`~.nova.NovaFixture`.

    :param nova: the set-up NovaFixture (its databases, message bus,
        placement, glance and neutron).
    :param glance: the :class:`~.glance.GlanceFixture` holding the image.
    :param resource_classes: Ironic resource classes to make flavors for.
    :param kwargs: see :class:`~.apiservice.APIServiceFixture`.
    """

    name = 'nova-api'
    app = 'nova.wsgi.osapi_compute:application'
    clear_argv = True
    own_database = False

    def __init__(self, nova, glance, resource_classes=('baremetal',),
                 **kwargs):
        kwargs.setdefault('workdir', nova.workdir)
        super().__init__(**kwargs)
        self.nova = nova
        self.glance = glance
        self.resource_classes = list(resource_classes)
        self.flavors = {}

    def configure(self):
        with open(os.path.join(self.confdir, 'api-paste.ini'), 'w') as f:
            f.write(PASTE)
        config = self.nova._common_config()
        config['api_database'] = {
            'connection': self.nova.databases['api'].url}
        config['database'] = {'connection': self.nova.cell_url}
        config['scheduler'].update({
            'discover_hosts_in_cells_interval': DISCOVER_INTERVAL})
        config['DEFAULT'].update(self.nova.extra_config.get('DEFAULT', {}))
        # NOTE(ironic-partition): nova-scheduler claims one request at a
        # time. placement 16 wrote two or three allocations on one Ironic
        # node's provider (total 1) under concurrent claims, on MariaDB
        # and PostgreSQL alike (see nova-lane.rst).
        config['DEFAULT']['executor_thread_pool_size'] = 1
        self.config_file = os.path.join(self.confdir, 'nova.conf')
        harness_process.write_config(self.config_file, config,
                                     join_lists=True)

    def migrate(self):
        """Nothing: the NovaFixture made nova's databases."""

    def environment(self):
        return {'OS_NOVA_CONFIG_DIR': self.confdir}

    def started(self):
        log = os.path.join(self.workdir, 'nova-scheduler.log')
        open(log, 'ab').close()
        self.scheduler = harness_process.Service(
            name='nova-scheduler', log_path=log, argv=[
                harness_process.bin_path('nova-scheduler'), '--config-file',
                self.config_file])
        self.addCleanup(self.scheduler.stop)
        self.scheduler.start()
        self.conn = self.connection()
        # NOTE(ironic-partition): a build asked for before the scheduler
        # consumes its queue is lost (MessagingTimeout after
        # rpc_response_timeout): wait until nova sees it up.
        harness_process.wait_for(self.scheduler_up, self.start_timeout,
                                 'nova-scheduler to be up', interval=0.5,
                                 check=self.check)
        for resource_class in self.resource_classes:
            self.flavors[resource_class] = self.make_flavor(resource_class)

    def check(self):
        super().check()
        scheduler = getattr(self, 'scheduler', None)
        if scheduler is not None and not scheduler.running():
            raise harness_process.HarnessError(
                'nova-scheduler exited with %s: %s' % (
                    scheduler.process.returncode,
                    harness_process.tail(scheduler.log_path)))

    def scheduler_up(self):
        """Tell whether nova lists nova-scheduler as up.

        :returns: True or False.
        """
        return any(s.binary == 'nova-scheduler' and s.state == 'up'
                   for s in self.conn.compute.services())

    def connection(self):
        """An openstacksdk connection to nova, glance and placement.

        :returns: an ``openstack.connection.Connection``.
        """
        import openstack
        # NOTE(ironic-partition): placement's gunicorn closes an idle
        # keep-alive connection after 2 s; a read racing that close is
        # reset ("Connection reset by peer", seen once in the servers
        # lane). The tests only read placement: retrying is safe there,
        # not for nova's POSTs, which keep no retry.
        return openstack.connection.Connection(
            session=apiservice.admin_session(),
            compute_endpoint_override=self.endpoint + '/v2.1',
            image_endpoint_override=self.glance.endpoint,
            placement_endpoint_override=self.nova.placement_endpoint,
            placement_connect_retries=3)

    def make_flavor(self, resource_class):
        """Create the flavor of a resource class, as Ironic's guide does.

        One unit of the node's custom class; VCPU, MEMORY_MB and DISK_GB
        zeroed, so that placement schedules on the class alone.

        :param resource_class: the Ironic resource class.
        :returns: the flavor ID.
        """
        flavor = self.conn.compute.create_flavor(
            name=flavor_name(resource_class), ram=1024, vcpus=1, disk=10)
        self.conn.compute.create_flavor_extra_specs(flavor, {
            'resources:%s' % custom_class(resource_class): '1',
            'resources:VCPU': '0',
            'resources:MEMORY_MB': '0',
            'resources:DISK_GB': '0',
        })
        return flavor.id

    def discover_hosts(self):
        """Map every compute host to the cell now, as an operator would.

        :returns: None
        """
        self.run(['nova-manage', '--config-file', self.config_file,
                  'cell_v2', 'discover_hosts', '--by-service'])

    def boot(self, name, resource_class='baremetal', **kwargs):
        """Ask nova for a server; it returns at once (BUILD).

        :param name: the server name.
        :param resource_class: which flavor.
        :param kwargs: more ``create_server`` arguments.
        :returns: the openstacksdk ``Server``.
        """
        return self.conn.compute.create_server(
            name=name, image_id=self.glance.image_id,
            flavor_id=self.flavors[resource_class], networks='none',
            **kwargs)

    def boot_many(self, count, prefix, clients=8, **kwargs):
        """Ask for ``count`` servers at once, from parallel clients.

        :param count: how many.
        :param prefix: names are ``<prefix>-<n>``.
        :param clients: parallel API clients.
        :param kwargs: passed to :meth:`boot`.
        :returns: their IDs, in order.
        """
        with futures.ThreadPoolExecutor(max_workers=clients) as pool:
            return [s.id for s in pool.map(
                lambda i: self.boot('%s-%d' % (prefix, i), **kwargs),
                range(count))]

    def servers(self, ids):
        """The servers API's view of some servers (absent once deleted).

        :param ids: server IDs.
        :returns: ``{id: openstacksdk Server}``.
        """
        wanted = set(ids)
        return {s.id: s for s in self.conn.compute.servers(
            details=True, all_projects=True) if s.id in wanted}

    def wait_final(self, ids, timeout):
        """Wait until none of the servers is in BUILD.

        :param ids: server IDs (none may be deleted).
        :param timeout: seconds.
        :returns: ``{id: Server}``.
        :raises: HarnessError naming each server's status on timeout.
        """
        last = {}

        def final():
            last.clear()
            last.update(self.servers(ids))
            if len(last) == len(ids) and all(
                    s.status in harness_servers.FINAL_STATES
                    for s in last.values()):
                return dict(last)
            return None
        try:
            return harness_process.wait_for(final, timeout,
                                            'servers to leave BUILD',
                                            interval=1, check=self.check)
        except harness_process.HarnessError as e:
            raise harness_process.HarnessError('%s: %s' % (e, {
                i: last[i].status if i in last else 'missing'
                for i in ids}))

    def action_events(self, server_id, action='create'):
        """When a server's ``action`` began, and its events, as nova saw it.

        From the instance actions (compute API 2.84): the action's start
        (the API's request) and each event's start and finish, in seconds
        since the epoch.

        :param server_id: the server.
        :param action: the action's name (``create``, ``rebuild``...).
        :returns: ``(start, [(event, start, finish, result), ...])``;
            ``(None, [])`` when nova recorded no such action.
        """
        def epoch(stamp):
            if not stamp:
                return None
            when = datetime.datetime.fromisoformat(stamp.rstrip('Z'))
            return when.replace(tzinfo=datetime.timezone.utc).timestamp()

        resp = self.conn.compute.get(
            '/servers/%s/os-instance-actions' % server_id,
            microversion='2.84')
        found = [a for a in resp.json().get('instanceActions', ())
                 if a['action'] == action]
        if resp.status_code != 200 or not found:
            return None, []
        resp = self.conn.compute.get(
            '/servers/%s/os-instance-actions/%s' % (
                server_id, found[-1]['request_id']), microversion='2.84')
        if resp.status_code != 200:
            return None, []
        record = resp.json()['instanceAction']
        return epoch(record.get('start_time')), [
            (e['event'], epoch(e.get('start_time')),
             epoch(e.get('finish_time')), e.get('result'))
            for e in record.get('events', ())]

    def delete_and_wait(self, ids, timeout):
        """Delete servers and wait until the API no longer lists them.

        :param ids: server IDs; missing ones are ignored.
        :param timeout: seconds.
        :returns: None
        """
        for server_id in ids:
            self.conn.compute.delete_server(server_id, ignore_missing=True)
        harness_process.wait_for(lambda: not self.servers(ids), timeout,
                                 'servers to be deleted', interval=1,
                                 check=self.check)


def faults(servers):
    """The servers that did not build, with their status and fault.

    A SHUTOFF server was built (nova's power sync stopped it).

    :param servers: ``{id: Server}``.
    :returns: ``{id: (status, message)}``.
    """
    return {s.id: (s.status, (s.fault or {}).get('message'))
            for s in servers.values()
            if s.status not in ('ACTIVE', 'SHUTOFF')}
