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

"""A real Prometheus server scraping the services' metrics, for tests.

Debian's ``prometheus`` package (``tools/test-setup.sh`` installs it),
started on a free loopback port with a data directory of its own, a
one-second scrape interval and the given targets; :meth:`query` asks its
HTTP API, as an operator's dashboard or alert would.
"""

import json
import os
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request

import fixtures

from ironic_partition.testing import process as harness_process

#: Seconds between two scrapes.
SCRAPE_INTERVAL = 1


class PrometheusFixture(fixtures.Fixture):
    """A Prometheus server scraping ``targets``, stopped at cleanup.

    :param targets: ``host:port`` of the ``/metrics`` endpoints.
    :param rule_files: alert rule files to load.
    :param job: the job label of the targets.
    """

    def __init__(self, targets, rule_files=(), job='ironic-partition'):
        super().__init__()
        self.targets = list(targets)
        self.rule_files = list(rule_files)
        self.job = job
        self.port = None
        self.service = None

    def _setUp(self):
        binary = shutil.which('prometheus')
        if binary is None:
            raise harness_process.HarnessError(
                'prometheus is not installed (tools/test-setup.sh installs '
                "Debian's prometheus package)")
        workdir = tempfile.mkdtemp(prefix='prometheus-harness-')
        self.addCleanup(shutil.rmtree, workdir, ignore_errors=True)
        config = os.path.join(workdir, 'prometheus.yml')
        with open(config, 'w') as stream:
            json.dump({
                'global': {'scrape_interval': '%ds' % SCRAPE_INTERVAL,
                           'evaluation_interval': '%ds' % SCRAPE_INTERVAL},
                'rule_files': self.rule_files,
                'scrape_configs': [{
                    'job_name': self.job,
                    'static_configs': [{'targets': self.targets}],
                }],
            }, stream)
        self.port = harness_process.free_port()
        self.service = harness_process.Service(
            'prometheus',
            [binary, '--config.file', config,
             '--storage.tsdb.path', os.path.join(workdir, 'data'),
             '--web.listen-address', '127.0.0.1:%d' % self.port],
            os.path.join(workdir, 'prometheus.log'))
        self.service.start()
        self.addCleanup(self.service.stop)
        harness_process.wait_for(self._ready, 60, 'Prometheus to be ready',
                                 check=self._check)

    def _check(self):
        if not self.service.running():
            raise harness_process.HarnessError(
                'prometheus exited: %s' % harness_process.tail(
                    self.service.log_path))

    def _get(self, path, params=None):
        url = 'http://127.0.0.1:%d%s' % (self.port, path)
        if params:
            url += '?' + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.read()

    def _ready(self):
        try:
            self._get('/-/ready')
        except (urllib.error.URLError, OSError):
            return False
        return True

    def query(self, expr):
        """Evaluate a PromQL expression now.

        :param expr: the expression.
        :returns: ``{frozenset(labels.items()): float value}``.
        :raises HarnessError: when Prometheus refuses the query.
        """
        doc = json.loads(self._get('/api/v1/query', {'query': expr}))
        if doc.get('status') != 'success':
            raise harness_process.HarnessError(
                'Prometheus refused %r: %s' % (expr, doc))
        return {frozenset(r['metric'].items()): float(r['value'][1])
                for r in doc['data']['result']}

    def values(self, expr, label):
        """A PromQL result as ``{value of label: value}``.

        :param expr: the expression.
        :param label: the label to key the result by (``host``).
        :returns: a dict.
        """
        return {dict(labels).get(label): value
                for labels, value in self.query(expr).items()}
