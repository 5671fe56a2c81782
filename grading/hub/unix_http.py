"""HTTP over a Unix socket for requests: how servers reach the course's exchange on one machine
(grading/hub/exchange.py), without a TCP port another user's process could take."""

import socket

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool


class _SocketConnection(HTTPConnection):
    def __init__(self, path, **kwargs):
        super().__init__("localhost", **kwargs)
        self.socket_path = path

    def _new_conn(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout if isinstance(self.timeout, (int, float)) else None)
        sock.connect(self.socket_path)
        return sock


class _SocketPool(HTTPConnectionPool):
    def __init__(self, path):
        super().__init__("localhost")
        self.socket_path = path

    def _new_conn(self):
        return _SocketConnection(self.socket_path, timeout=self.timeout.connect_timeout)


class SocketAdapter(HTTPAdapter):
    """requests over the Unix socket `path`, whatever host the URL names."""

    def __init__(self, path):
        super().__init__()
        self.socket_path = path

    def get_connection_with_tls_context(self, request, verify, proxies=None, cert=None):
        return _SocketPool(self.socket_path)

    def get_connection(self, url, proxies=None):
        return _SocketPool(self.socket_path)
