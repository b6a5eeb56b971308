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

"""A loopback TCP proxy whose link to the database a test can cut.

Placed between a backend and the real database server, it lets a test
simulate a database restart or a network cut without touching the shared
server: :meth:`TCPProxy.cut` closes every open connection and refuses new
ones, :meth:`TCPProxy.restore` accepts again on the same port.
"""

import select
import socket
import threading
import time

import fixtures
from oslo_log import log as logging

from ironic_partition.testing import process as harness_process

LOG = logging.getLogger(__name__)


class TCPProxy(fixtures.Fixture):
    """Forward 127.0.0.1:<port> to a target address.

    :param target_host: the host of the real server.
    :param target_port: its port.
    """

    def __init__(self, target_host, target_port):
        super().__init__()
        self.target = (target_host, target_port)
        self.port = None
        self._listener = None
        self._accepting = threading.Event()
        self._lock = threading.Lock()
        self._sockets = set()
        self._threads = []
        #: Seconds to hold the target's answer to each request before
        #: passing it on: a slow server (0 for none). Settable at any time.
        self.delay = 0.0

    @classmethod
    def for_url(cls, url):
        """A proxy to the server of a database URL.

        :param url: an SQLAlchemy URL (PostgreSQL or MySQL).
        :returns: a :class:`TCPProxy` (not set up).
        """
        from sqlalchemy.engine import url as sa_url
        parsed = sa_url.make_url(url)
        default = 5432 if parsed.get_backend_name() == 'postgresql' else 3306
        return cls(parsed.host or '127.0.0.1', parsed.port or default)

    def url_through(self, url):
        """The same database URL, through this (set up) proxy.

        :param url: an SQLAlchemy URL.
        :returns: the URL, its host and port this proxy's.
        """
        from sqlalchemy.engine import url as sa_url
        parsed = sa_url.make_url(url).set(host='127.0.0.1', port=self.port)
        return parsed.render_as_string(hide_password=False)

    def _setUp(self):
        self.restore()
        self.addCleanup(self.cut)

    def restore(self):
        """Accept connections (again) on the same port.

        :returns: None
        """
        if self.port is None:
            # Reserved below the ephemeral range: once cut, the port must
            # not become some outgoing connection's local port before the
            # proxy listens on it again.
            self.port = harness_process.free_port()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(('127.0.0.1', self.port))
        listener.listen(64)
        self._listener = listener
        self._accepting.set()
        thread = threading.Thread(target=self._accept, args=(listener,),
                                  daemon=True)
        thread.start()
        self._threads.append(thread)

    def cut(self):
        """Close every proxied connection and refuse new ones.

        :returns: None
        """
        self._accepting.clear()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def _accept(self, listener):
        while self._accepting.is_set():
            try:
                ready, _w, _x = select.select([listener], [], [], 0.05)
                if not ready:
                    continue
                client, _addr = listener.accept()
            except (OSError, ValueError):
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                if not self._accepting.is_set():
                    client.close()
                    upstream.close()
                    return
                self._sockets.update((client, upstream))
            asked = threading.Event()
            for src, dst, role in ((client, upstream, 'request'),
                                   (upstream, client, 'answer')):
                threading.Thread(target=self._pump,
                                 args=(src, dst, role, asked),
                                 daemon=True).start()

    def _pump(self, src, dst, role='request', asked=None):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if role == 'request' and asked is not None:
                    asked.set()
                elif asked is not None and asked.is_set():
                    # NOTE(ironic-partition): the first bytes of an answer:
                    # hold the whole answer once, not each chunk of it.
                    asked.clear()
                    if self.delay:
                        time.sleep(self.delay)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
