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

"""A compute-like service process, for the functional tests.

It runs ironic-partition's driver the way a real service does: under
oslo.service's threading backend with ``restart_method='mutate'`` (so a
SIGHUP re-reads its config files), refreshing every ``--interval``
seconds. After every refresh it writes a JSON report, atomically::

    {"pid": 123, "host": "cn1", "refresh": 7, "ready": true,
     "error": null, "partition_key": "rack1", "peer_list": ["cn1"],
     "nodes": ["<uuid>", ...], "time": 1700000000.0}

``--mode nova`` loads nova 34's own configuration (nova's ``[ironic]``
options, ``peer_list`` immutable) and our driver through nova's loader,
``nova.virt.driver.load_compute_driver``, with nova's main database from
``[database] connection``. ``--mode plain`` uses only our options and
the generic :class:`~ironic_partition.virt.mixin.PartitionMixin`.

Usage::

    python -m ironic_partition.testing.services.compute_worker \\
        --mode nova --report /tmp/r.json --interval 1 \\
        -- --config-file /tmp/nova.conf
"""

import argparse
import json
import os
import sys
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging
from oslo_service import backend

from ironic_partition import conf as ip_conf
from ironic_partition.virt import mixin

LOG = logging.getLogger('compute_worker')

DRIVER = 'ironic_partition.IronicPartitionDriver'


def write_report(path, report):
    """Write ``report`` as JSON to ``path`` atomically.

    :param path: the report file.
    :param report: a JSON-serialisable dict.
    :returns: None
    """
    tmp = '%s.%d.tmp' % (path, os.getpid())
    with open(tmp, 'w') as f:
        json.dump(report, f)
    os.replace(tmp, path)


def read_report(path):
    """Read a report written by :func:`write_report`.

    :param path: the report file.
    :returns: the dict, or None when there is none yet.
    """
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


class _PlainDriver(mixin.PartitionMixin):
    """The mixin alone, as a non-nova consumer uses it."""

    def __init__(self, conf):
        self.partition_setup(conf)

    def available_nodes(self):
        return sorted(self.partition_refresh().nodes)


def build_plain(argv):
    """Build a plain driver from our own options.

    :param argv: the oslo.config command line.
    :returns: (conf, refresh callable, driver, not-ready exception class)
    """
    conf = cfg.ConfigOpts()
    logging.register_options(conf)
    ip_conf.register_opts(conf)
    conf(argv, project='ironic-partition')
    logging.setup(conf, 'compute_worker')
    driver = _PlainDriver(conf)
    return conf, driver.available_nodes, driver, Exception


def build_nova(argv):
    """Build our nova driver from nova's configuration, as nova does.

    :param argv: the oslo.config command line.
    :returns: (conf, refresh callable, driver, not-ready exception class)
    """
    import nova.conf  # noqa: H306
    from nova import config
    from nova import exception as nova_exception
    from nova import objects
    from nova.virt import driver as virt_driver

    conf = nova.conf.CONF
    # What nova-compute does at start, but RPC: options, logging defaults,
    # the main database; then the driver through nova's own loader.
    config.parse_args(['nova-compute'] + list(argv), init_rpc=False)
    logging.setup(conf, 'nova')
    objects.register_all()
    driver = virt_driver.load_compute_driver(None, DRIVER)

    def refresh():
        return sorted(driver.get_available_nodes())

    return conf, refresh, driver, nova_exception.VirtDriverNotReady


class Worker(object):
    """Refreshes in a loop and reports; an oslo.service service body."""

    def __init__(self, refresh, driver, not_ready, report, interval):
        self._refresh = refresh
        self.driver = driver
        self._not_ready = not_ready
        self._report = report
        self._interval = interval
        self._stop = threading.Event()
        self._count = 0

    def run_once(self):
        """Refresh once and write the report.

        :returns: None
        """
        self._count += 1
        settings = self.driver.partitioner.settings
        report = {'pid': os.getpid(), 'host': settings.host,
                  'refresh': self._count, 'time': time.time(),
                  'partition_key': settings.partition_key,
                  'peer_list': list(settings.peer_list)}
        started = time.monotonic()
        try:
            nodes = self._refresh()
        except self._not_ready as e:
            report.update(ready=False, error='%s: %s' % (type(e).__name__,
                                                         e), nodes=None)
        else:
            report.update(ready=True, error=None, nodes=nodes)
        # NOTE(ironic-partition): how long the refresh took, for the
        # bounds that count refreshes (a loaded machine makes them long).
        report['seconds'] = time.monotonic() - started
        write_report(self._report, report)

    def loop(self):
        """Refresh until stopped.

        :returns: None
        """
        self.driver.partition_start()
        while not self._stop.is_set():
            self.run_once()
            self._stop.wait(self._interval)
        self.driver.partition_stop()

    def stop(self):
        """Ask the loop to end.

        :returns: None
        """
        self._stop.set()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--mode', choices=('nova', 'plain'), required=True)
    parser.add_argument('--report', required=True)
    parser.add_argument('--interval', type=float, default=1.0)
    parser.add_argument('oslo_args', nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    oslo_args = [a for a in args.oslo_args if a != '--']

    backend.init_backend(backend.BackendType.THREADING)
    from oslo_service import service  # noqa: H306

    build = build_nova if args.mode == 'nova' else build_plain
    conf, refresh, driver, not_ready = build(oslo_args)

    class _Service(service.Service):
        def start(self):
            self.worker = Worker(refresh, driver, not_ready, args.report,
                                 args.interval)
            self.tg.add_thread(self.worker.loop)

        def stop(self, graceful=False):
            self.worker.stop()
            super().stop(graceful=True)

    launcher = service.launch(conf, _Service(), restart_method='mutate')
    return launcher.wait()


if __name__ == '__main__':
    sys.exit(main())
