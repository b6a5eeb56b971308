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

"""The logs of nova-compute, placement and ironic-api, read for the nova
benchmarks.

One resource-tracker pass of a compute (:class:`Pass`, from
:func:`read_passes`), placement's and ironic-api's request logs
(:func:`placement_requests`, :func:`ironic_requests`), as
:mod:`nova_scale_bench` and :mod:`nova_long_pass_bench` measure them;
:func:`keep_logs` copies a deployment's logs before its teardown.
"""

import os
import re
import shutil

from ironic_partition.testing.lanes import novalane
REQ_RE = re.compile(r'\[(\S+) (req-[0-9a-f-]+)')
RUN_RE = re.compile(
    r'Running periodic task ComputeManager\.update_available_resource')
FINAL_RE = re.compile(r'Final resource view: name=(\S+) ')
NOT_READY_RE = re.compile(r'Virt driver is not ready\.')
UPDATED_RE = re.compile(r'Compute_service record updated for |'
                        r'Error updating resources for node ')
MARK_RE = re.compile(r'^--- harness: (\w+).* at (\d+\.\d+)$')
PLACEMENT_RE = re.compile(
    r'placement\.requestlog \[(\S+) \S+ .*?\] \S+ "(\w+) (\S+)" '
    r'status: (\d+)')
IRONIC_RE = re.compile(
    r'INFO ironic\.api \[.*?\] \S+ - (GET|POST|PUT|PATCH|DELETE|HEAD) '
    r'(\S+) - (\d+)')
UUID_RE = re.compile(
    r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}')


class Pass(object):
    """One resource-tracker pass of one compute, read from its log."""

    def __init__(self, begin, kind, request_id=None):
        self.begin = begin
        self.kind = kind            # 'startup' or 'periodic'
        self.request_id = request_id
        self.end = None
        self.nodes = set()
        self.updated = 0
        self.not_ready = False

    def complete(self, share):
        """Tell whether the pass reported and saved at least ``share``."""
        return self.nodes >= share and self.updated >= len(self.nodes)

    def as_dict(self):
        return {'begin': self.begin, 'end': self.end, 'kind': self.kind,
                'nodes': len(self.nodes), 'not_ready': self.not_ready,
                'duration_s': (None if self.end is None
                               else self.end - self.begin)}


def read_passes(path):
    """Split a nova-compute log into resource-tracker passes.

    A start-up pass begins at the fixture's ``start`` mark (nova runs it
    in ``pre_start_hook``, without the periodic task's line); a periodic
    one at oslo.service's "Running periodic task
    ComputeManager.update_available_resource". A pass ends at its last
    "Final resource view" or "Compute_service record updated" line (the
    latter follows the node's placement update).

    :param path: the compute's log.
    :returns: a list of :class:`Pass`.
    """
    passes = []
    current = None
    with open(path, 'rb') as stream:
        for raw in stream:
            line = raw.decode('utf-8', 'replace').rstrip('\n')
            mark = MARK_RE.match(line)
            if mark:
                if mark.group(1) == 'start':
                    current = Pass(float(mark.group(2)), 'startup')
                    passes.append(current)
                elif mark.group(1) in ('kill', 'stop', 'pause'):
                    current = None
                continue
            when = novalane.line_time(line)
            if when is None:
                continue
            if RUN_RE.search(line):
                req = REQ_RE.search(line)
                current = Pass(when, 'periodic',
                               req.group(2) if req else None)
                passes.append(current)
                continue
            if current is None:
                continue
            final = FINAL_RE.search(line)
            if final:
                current.nodes.add(final.group(1))
                current.end = when
                if current.request_id is None:
                    req = REQ_RE.search(line)
                    current.request_id = req.group(2) if req else None
            elif UPDATED_RE.search(line):
                current.updated += 1
                current.end = when
            elif NOT_READY_RE.search(line):
                current.not_ready = True
    return passes


def path_key(path):
    """A request path with its UUIDs and query values left out.

    :param path: e.g. ``/resource_providers/UUID/inventories?x=1``.
    :returns: e.g. ``/resource_providers/{uuid}/inventories?x``.
    """
    path = UUID_RE.sub('{uuid}', path)
    base, _sep, query = path.partition('?')
    keys = sorted(set(kv.split('=')[0] for kv in query.split('&') if kv))
    return base + ('?' + ','.join(keys) if keys else '')


def placement_requests(path):
    """Read placement's request log.

    :param path: placement's log.
    :returns: a list of ``(time, global_request_id, method, path_key,
        uuids in the path)``; requests without a global request id (the
        harness's) are left out.
    """
    result = []
    with open(path, 'rb') as stream:
        for raw in stream:
            line = raw.decode('utf-8', 'replace')
            match = PLACEMENT_RE.search(line)
            if not match or match.group(1) == 'None':
                continue
            result.append((novalane.line_time(line), match.group(1),
                           match.group(2), path_key(match.group(3)),
                           set(UUID_RE.findall(match.group(3)))))
    return result


def ironic_requests(path):
    """Read ironic-api's request log.

    :param path: ironic-api's log.
    :returns: a list of ``(time, method, path_key)``.
    """
    result = []
    with open(path, 'rb') as stream:
        for raw in stream:
            line = raw.decode('utf-8', 'replace')
            match = IRONIC_RE.search(line)
            if match:
                result.append((novalane.line_time(line), match.group(1),
                               path_key(match.group(2))))
    return result


def keep_logs(target, nova, ironic=None, extra=()):
    """Copy the logs of a nova deployment (and ironic-api's) to a folder.

    :param target: the folder, made if missing.
    :param nova: the :class:`~ironic_partition.testing.services.nova.
        NovaFixture`, before its teardown.
    :param ironic: the :class:`~ironic_partition.testing.IronicFixture`
        whose API log to copy too, or None.
    :param extra: more log paths (nova-scheduler's).
    :returns: the folder.
    """
    os.makedirs(target, exist_ok=True)
    paths = [service.log_path for service in nova.services] + list(extra)
    if ironic is not None:
        paths.append(ironic.api.log_path)
    for path in paths:
        if os.path.exists(path):
            shutil.copy(path, target)
    return target
