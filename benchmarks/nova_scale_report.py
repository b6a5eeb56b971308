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

"""The table and the profiles :mod:`nova_scale_bench` prints."""

import re
import sys

import nova_lane_bench
import pyspy_profile
#: The lane benchmark's cell format: 'never' for None, one decimal.
_fmt = nova_lane_bench._fmt


def _max(values):
    values = [v for v in values if v is not None]
    return max(values) if values else None


def table_rows(result, hosts):
    """The table's rows for one driver.

    :param result: the dict of :meth:`nova_scale_bench.Run.run`.
    :param hosts: the three computes, in order.
    :returns: a list of ``(measure, value string)``.
    """
    steps = result.get('steps', {})
    per = result.get('startup_per_compute', {})
    steady = result.get('steady', {})
    rss1 = result.get('rss_after_startup') or {}
    rss2 = result.get('rss_after_steady') or {}
    rows = [
        ('start-up to complete report (s)', steps.get('start-up')),
        ('start-up: slowest first full pass (s)', _max(
            p.get('first_full_pass_end_s') for p in per.values())),
        ('start-up: nodes in first pass %s' % '/'.join(hosts), '/'.join(
            str(per.get(h, {}).get('startup_pass', {}).get('nodes'))
            for h in hosts)),
        ('start-up: shares %s' % '/'.join(hosts), '/'.join(
            str(result.get('shares', {}).get(h)) for h in hosts)),
        ('start-up placement / Ironic calls', '%s / %s' % (
            result.get('startup_placement_calls'),
            result.get('startup_ironic_calls'))),
        ('double-held node-s, start-up', result.get(
            'double_held_by_step', {}).get('start-up')),
        ('start-up CPU s: placement / conductor / computes', ' / '.join(
            _fmt((result.get('startup_cpu_s') or {}).get(name))
            for name in ('placement', 'conductor', 'computes'))),
    ]
    for host in hosts:
        one = steady.get(host, {})
        rows.append(('steady pass %s (s)' % host, one.get('duration_s')))
        rows.append(('  placement calls %s' % host,
                     one.get('placement_calls')))
        rows.append(('  Ironic calls in window %s' % host,
                     one.get('ironic_calls_in_window')))
    per_node = [one['placement_calls'] / float(one['nodes'])
                for one in steady.values()
                if one.get('nodes') and 'placement_calls' in one]
    window = result.get('steady_window_s')
    rows += [
        ('placement calls per node per steady pass', (
            sum(per_node) / len(per_node)) if per_node else None),
        ('placement calls/min, 3 computes (%s s)' % _fmt(window),
         result.get('placement_calls_per_min')),
        ('Ironic calls/min, 3 computes (%s s)' % _fmt(window),
         result.get('ironic_calls_per_min')),
        ('failover after SIGKILL (s)', steps.get('SIGKILL')),
        ('takeover pass: begun after the kill / long (s), nodes (new)',
         ', '.join('%s %s / %s, %s (%s)' % (
             host, _fmt(one['began_after_kill_s']),
             _fmt(one['duration_s']), one['nodes'], one['taken'])
             for host, one in sorted(result.get(
                 'takeover_passes', {}).items()))),
        ('double-held node-s, SIGKILL', result.get(
            'double_held_by_step', {}).get('SIGKILL')),
        ('restart (s)', steps.get('restart')),
        ('double-held node-s, restart', result.get(
            'double_held_by_step', {}).get('restart')),
        ('moves at failover / restart', '%s / %s' % (
            result.get('failover_moves'), result.get('restart_moves'))),
        ('deleted / recreated rows, lost providers', '%s / %s / %s' % (
            result.get('deleted_rows'), result.get('recreated_rows'),
            result.get('providers_lost'))),
        ('double-held node-s, whole run', result.get(
            'double_held_node_seconds')),
    ]
    for label, rss in (('start-up', rss1), ('steady', rss2)):
        rows.append(('RSS computes after %s (MiB)' % label, '/'.join(
            _fmt(rss.get(h)) for h in hosts)))
        rows.append(('RSS placement after %s (MiB)' % label,
                     rss.get('placement')))
    rows.append(('load average start / end', '%s / %s' % (
        ' '.join('%.2f' % v for v in result.get('load_start', ())),
        ' '.join('%.2f' % v for v in result.get('load_end', ())))))
    rows.append(('wall time of the run (s)', result.get('wall_s')))
    return [(name, value if isinstance(value, str) else _fmt(value))
            for name, value in rows]


def print_table(results, hosts, out=sys.stdout):
    """Print the figures as an RST table, a column per driver.

    :param results: the dicts of :meth:`nova_scale_bench.Run.run`.
    :param hosts: the three computes, in order.
    :param out: the stream.
    :returns: None
    """
    columns = [dict(table_rows(r, hosts)) for r in results]
    names = [name for name, _v in table_rows(results[0], hosts)]
    names = [re.sub(r' \(\S+ s\)$', '', n) for n in names]
    columns = [dict((re.sub(r' \(\S+ s\)$', '', k), v)
                    for k, v in c.items()) for c in columns]
    if any(r.get('steady_window_s') for r in results):
        out.write('(calls/min: from the complete report to the SIGKILL: '
                  '%s s)\n' % ' / '.join(
                      _fmt(r.get('steady_window_s')) for r in results))
    header = ['measure'] + [r['driver'] for r in results]
    body = [[name] + [c[name] for c in columns] for name in names]
    nova_lane_bench.write_rst_table(header, body, out)


def print_profile(results, profiled, out=sys.stdout):
    """Print the grouped profiles.

    :param results: the dicts of :meth:`nova_scale_bench.Run.run`.
    :param profiled: the compute py-spy sampled.
    :param out: the stream.
    :returns: None
    """
    for result in results:
        for phase, kind in [(p, k) for p in ('startup', 'steady')
                            for k in ('wall', 'cpu')]:
            prof = result.get('profile_%s' % phase, {}).get(kind)
            if not prof:
                continue
            pyspy_profile.print_summary(
                '%s, %s, %s, %s' % (result['driver'], profiled, phase, kind),
                prof, out)
