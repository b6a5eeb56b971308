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

"""The standalone partition agent that ``ironic-partition serve`` runs.

The agent runs the code path of the nova driver
(:class:`~ironic_partition.virt.mixin.PartitionMixin` and its
:class:`~ironic_partition.partition.partitioner.Partitioner`) without nova: it
joins the membership (the database backend heartbeats from a thread), refreshes
the partition every ``[ironic_partition] refresh_interval`` seconds and
logs the nodes gained and lost at each refresh. Use it beside
ironic-conductor, or for any consumer that is not nova.

How it runs (oslo.service's launcher, the signals) is
:mod:`ironic_partition.cmd.agent`'s business.

The report file (``--report-file PATH``)
========================================

After every refresh, successful or not, at start and stop, when the
lease timer renews the claims (the same nodes, with the new ``valid_for``,
so a listing slower than the lease never lets the report's validity run
out) and when it finds them fenced, the agent replaces ``PATH``
atomically (a temporary file in the same directory, then ``os.replace``),
so a reader never sees a partial document. It is JSON:

``format``
    ``1``, the version of this layout.
``host``, ``role``, ``pid``
    who writes it.
``state``
    ``starting`` (before the first refresh), ``running`` or ``stopped``.
``ready``, ``reason``
    whether the last refresh succeeded; if not, why (``reason`` is null
    when ready). While not ready, ``managed`` is the last good node set,
    which the service keeps but does not act on.
``partition_key``, ``peer_list``, ``shard``
    the settings in force (after a SIGHUP, the new ones once applied; a
    SIGHUP never changes ``shard``).
``peers``
    ``live``, ``dead``, ``never_seen`` (sorted host names) and ``stale``
    (the membership source was unreachable) of the last good refresh.
``ring_members``
    the live members the ring was built from.
``managed``, ``managed_count``
    the node UUIDs this agent may report at the instant of the write
    (sorted) and their number: the instance-less nodes the ring gives it
    and the nodes whose instance this host owns, each only while this
    process holds a valid claim on it. Once fenced, and after
    ``stopped``, none: not even the instance nodes.
``by_instance``
    the nodes the last good refresh kept because this host owns their
    instance (and this process holds their claims).
``waiting``, ``fenced``
    nodes (ring or instance) withheld at the last good refresh: another
    process still holds their claim (after a takeover, the previous
    process of this host name, until its lease runs out), or no valid
    claim could be proven.
``claims``
    the state of this agent's ownership claims (``enabled``, ``held``,
    ``fenced``, ``valid_for`` seconds...), ``{"enabled": false}`` when
    ``[ironic_partition] claims`` is off.
``change_feed_problem``
    why Ironic's change feed could not be used at the last refresh that
    tried it (every refresh then lists the partition in full), or null.
``listed``
    how many nodes Ironic listed for the group.
``gained``, ``lost``
    UUIDs gained and lost at the last good refresh.
``refresh_counter``
    refresh attempts so far, successful or not; it only grows, by one per
    attempt, so an observer can wait for "a refresh after time T".
``refresh_ok_counter``
    successful refreshes so far.
``settings_generation``
    how many times new settings were applied (SIGHUP); 0 at start.
``started_at``, ``updated_at``, ``last_ok_at``
    ISO 8601 UTC times: process start, this write, last good refresh.
``monotonic``
    ``time.monotonic()`` of this write (comparable between processes of
    one boot).
``refresh_seconds``
    how long the last attempt took.
"""

import datetime
import json
import os
import tempfile
import threading
import time

from oslo_log import log as logging
from oslo_service import backend as service_backend
from oslo_service.backend import base as service_base

from ironic_partition import __version__
from ironic_partition._i18n import _
from ironic_partition import exception
from ironic_partition.membership import base as membership_base
from ironic_partition.partition import instance_owners
from ironic_partition.virt import mixin

LOG = logging.getLogger(__name__)

#: The version of the report file layout.
REPORT_FORMAT = 1

#: How many gained/lost UUIDs one log line lists.
LOG_UUIDS = 10

#: Seconds between replacing the report file and handing over the nodes
#: it no longer lists: more than a kernel clock tick (the resolution of
#: the file's ctime), so that a reader never sees the next owner report a
#: node before this report stopped listing it.
REPORT_TICK = 0.02


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def write_report(path, doc):
    """Replace a JSON file atomically.

    :param path: the file.
    :param doc: a JSON-serialisable dict.
    :returns: None
    :raises OSError: when it cannot be written.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path),
                               suffix='.tmp', dir=directory)
    try:
        with os.fdopen(fd, 'w') as stream:
            json.dump(doc, stream, indent=2, sort_keys=True)
            stream.write('\n')
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def init_threading_backend():
    """Select oslo.service's threading backend.

    :returns: None
    :raises: oslo.service's ``BackendAlreadySelected`` when another backend
        was selected first in this process.
    """
    service_backend.init_backend(service_backend.BackendType.THREADING)


def _short(uuids):
    uuids = sorted(uuids)
    text = ', '.join(uuids[:LOG_UUIDS])
    if len(uuids) > LOG_UUIDS:
        text += _(' and %d more') % (len(uuids) - LOG_UUIDS)
    return text


class PartitionAgent(mixin.PartitionMixin, service_base.ServiceBase):
    """The partition agent as an oslo.service service.

    :param conf: the ``ConfigOpts``.
    :param role: the membership role.
    :param report_file: where to write the report, or None.
    :param instance_hosts_file: the ``--instance-hosts`` file, re-read at
        every refresh, or None.
    """

    def __init__(self, conf, role=membership_base.ROLE_AGENT,
                 report_file=None, instance_hosts_file=None):
        self.partition_role = role
        self.conf = conf
        self.report_file = report_file
        self.instance_hosts_file = instance_hosts_file
        self.instance_hosts = None
        self.tg = service_backend.get_component('ThreadGroup')()
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._stopped = False
        self._started_at = _now()
        self.refresh_counter = 0
        self.refresh_ok_counter = 0
        self.settings_generation = 0
        self._last_ok_at = None
        self._last_error = _('starting')
        self._last_seconds = None
        self._last_settings = None

    # The service interface.

    def start(self):
        """Start refreshing every ``refresh_interval`` seconds.

        :returns: None
        """
        interval = self.partitioner.cadence.interval
        self.tg.add_timer_args(interval, self.refresh_once,
                               stop_on_exception=False)

    def stop(self):
        """Stop refreshing, write the last report, release and leave.

        :returns: None
        """
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self.tg.stop(graceful=True)
        # NOTE(ironic-partition): stop reporting first (the "stopped"
        # report lists no node), then hand the claims over and leave:
        # peers take the nodes at their next refresh instead of waiting
        # for the lease and service_down_time, and never while this agent
        # still reports them.
        self._write_report('stopped', ready=False,
                           reason=_('the agent stopped'))
        self.partition_stop()
        LOG.info('Partition agent %(host)s stopped after %(n)d refreshes',
                 {'host': self.partitioner.settings.host,
                  'n': self.refresh_counter})

    def wait(self):
        """Wait until the refresh timer has stopped.

        :returns: None
        """
        self.tg.wait()

    def reset(self):
        """After SIGHUP: refresh now rather than at the next tick.

        :returns: None
        """
        with self._lock:
            if self._stopped:
                return
        self.tg.add_thread(self.refresh_once)

    # Refreshing.

    def _read_instance_hosts(self):
        if self.instance_hosts_file is None:
            return
        try:
            self.instance_hosts = instance_owners.load(
                self.instance_hosts_file)
        except exception.InvalidCommandInput as e:
            LOG.error('%s; keeping the previous instance owners', e)

    def refresh_once(self):
        """Refresh this agent's nodes once; never raises.

        One refresh at a time (the timer's and a SIGHUP's may overlap):
        the report written and the claims handed over must both follow
        the same, latest claim round, or a node could be released while
        a report of an older round still lists it.

        :returns: the
            :class:`~ironic_partition.partition.refresh_result.RefreshResult`,
            or None when not ready.
        """
        with self._refresh_lock:
            return self._refresh_once()

    def _refresh_once(self):
        with self._lock:
            if self._stopped:
                return None
        start = time.monotonic()
        self._read_instance_hosts()
        settings = self.partitioner.settings
        mine = instance_owners.owned_by(self.instance_hosts, settings.host)
        result = None
        try:
            result = self.partition_refresh(
                my_instances=mine, instance_hosts=self.instance_hosts)
        except exception.IronicPartitionException as e:
            error = exception.one_line(e)
        except Exception as e:
            LOG.exception('Unexpected error during a refresh')
            error = exception.one_line('%s: %s' % (type(e).__name__, e))
        else:
            error = None
        with self._lock:
            if self._stopped:
                return result
            self.refresh_counter += 1
            self._last_seconds = time.monotonic() - start
            if result is not None:
                self.refresh_ok_counter += 1
                self._last_ok_at = _now()
                if (self._last_settings is not None
                        and result.settings != self._last_settings):
                    self.settings_generation += 1
                self._last_settings = result.settings
            self._last_error = error
            written = self._write_report('running', ready=result is not None,
                                         reason=error)
        if result is not None and written:
            # NOTE(ironic-partition): the report file is this agent's
            # consumer, and the one just written no longer lists the nodes
            # the ring took away: hand them over now rather than at the
            # next refresh (safety.rst, I2), so a joining member gets them
            # one refresh sooner. A reader learns of the replaced file
            # from its ctime, which the kernel keeps to a clock tick: let
            # that tick pass first, so no reader can see the next owner's
            # report before this one.
            time.sleep(REPORT_TICK)
            self.partitioner.release_unreported()
        if result is not None and (result.gained or result.lost):
            LOG.info('Gained %(ng)d nodes [%(gained)s]; lost %(nl)d nodes '
                     '[%(lost)s]',
                     {'ng': len(result.gained),
                      'gained': _short(result.gained),
                      'nl': len(result.lost), 'lost': _short(result.lost)})
        elif error is not None:
            LOG.error('Refresh %(n)d failed, reporting not ready: %(err)s',
                      {'n': self.refresh_counter, 'err': error})
        return result

    # The report.

    def report(self, state, ready, reason):
        """Build the report document.

        :param state: ``starting``, ``running`` or ``stopped``.
        :param ready: whether the last refresh succeeded.
        :param reason: why not, or None.
        :returns: a dict (see the module documentation).
        """
        last = self.partitioner.last_result
        settings = self.partitioner.settings
        doc = {
            'format': REPORT_FORMAT,
            'host': settings.host,
            'role': self.partition_role,
            'pid': os.getpid(),
            'version': __version__,
            'state': state,
            'ready': bool(ready),
            'reason': None if ready else reason,
            'partition_key': settings.partition_key,
            'shard': settings.shard,
            'peer_list': list(settings.peer_list),
            'refresh_counter': self.refresh_counter,
            'refresh_ok_counter': self.refresh_ok_counter,
            'settings_generation': self.settings_generation,
            'started_at': self._started_at,
            'updated_at': _now(),
            'last_ok_at': self._last_ok_at,
            'monotonic': time.monotonic(),
            'refresh_seconds': (round(self._last_seconds, 3)
                                if self._last_seconds is not None else None),
            'refresh_interval': self.partitioner.cadence.interval,
        }
        doc['claims'] = self.partitioner.status().get('claims')
        doc['change_feed_problem'] = self.partitioner.index.feed_problem
        if last is None:
            doc.update({'peers': None, 'ring_members': [], 'managed': [],
                        'managed_count': 0, 'by_instance': [],
                        'listed': None, 'gained': [], 'lost': [],
                        'waiting': [], 'fenced': []})
            return doc
        membership = last.membership
        # NOTE(ironic-partition): what the service may report at this
        # instant: a lease that ran out fences the claimed nodes.
        managed = (self.partitioner.reported_nodes()
                   if state != 'stopped' else {})
        doc.update({
            'peers': {'live': sorted(membership.live),
                      'dead': sorted(membership.dead),
                      'never_seen': sorted(membership.never_seen),
                      'stale': membership.stale},
            'ring_members': list(last.members),
            'managed': sorted(managed),
            'managed_count': len(managed),
            'by_instance': sorted(last.ownership.by_instance),
            'listed': last.metrics.listed,
            'gained': sorted(last.gained),
            'lost': sorted(last.lost),
            'waiting': sorted(last.waiting),
            'fenced': sorted(last.fenced),
        })
        return doc

    def on_fenced(self):
        """The lease timer saw the claims run out: say so at once.

        Rewrites the report without the fenced nodes and not ready, rather
        than leaving the last one until the next refresh.

        :returns: None
        """
        with self._lock:
            if self._stopped:
                return
            self._last_error = _('fenced: the claims could not be renewed '
                                 'before their lease ran out')
            self._write_report('running', ready=False,
                               reason=self._last_error)

    def on_renewed(self):
        """The lease timer renewed the claims: publish the new validity.

        Rewrites the report of the last refresh (same nodes, same
        readiness) with the claims' new ``valid_for``, so that a listing
        slower than the lease never lets a consumer that honours the
        report's validity see the nodes vanish and come back.

        :returns: None
        """
        with self._lock:
            if self._stopped or self.refresh_counter == 0:
                return
            self._write_report('running', ready=self._last_error is None,
                               reason=self._last_error)

    def _write_report(self, state, ready, reason):
        """Replace the report file.

        :returns: True when a consumer of the file now sees this report
            (or there is no file), False when it could not be written.
        """
        if self.report_file is None:
            return True
        try:
            write_report(self.report_file, self.report(state, ready, reason))
        except OSError as e:
            LOG.error('Cannot write the report file %(path)s: %(err)s',
                      {'path': self.report_file, 'err': e})
            return False
        return True
