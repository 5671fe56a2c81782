"""The exchange's server in front of a request's body (grading/hub/ngshare_service.py,
`PerUserServer` and `BodyAfterToken`), without a hub: a real tornado server on a Unix socket of
this test, in front of a handler that reads what it is sent, with JupyterHub's real HubAuth,
which a request without a token never reaches. tests/test_jupyterhub.py plays the rest (a
student's own token and her budget of bodies a minute) on a real hub."""

import asyncio
import contextlib
import socket
import threading

import pytest
from jupyterhub.services.auth import HubAuth
from tornado.netutil import bind_unix_socket
from tornado.web import Application, RequestHandler

from grading.hub.ngshare_service import PerUserServer

MAX_BODY = 1 << 20


class Reads(RequestHandler):
    """What the exchange's handlers stand for here: it reads the whole body, then answers."""

    def get(self):
        self.write({"read": 0})

    def post(self):
        self.write({"read": len(self.request.body)})


@pytest.fixture(scope="module")
def exchange(tmp_path_factory):
    """The path of the server's socket; the server runs in a thread of its own."""
    path = str(tmp_path_factory.mktemp("exchange") / "exchange.sock")
    started, loop = threading.Event(), asyncio.new_event_loop()

    def serve():
        asyncio.set_event_loop(loop)
        # not contacted by any request of this module: none carries a token
        auth = HubAuth(api_url="http://127.0.0.1:9/hub/api", api_token="unused")
        app = Application([(r"/.*", Reads)], lm10_hub_auth=auth)
        server = PerUserServer(app, max_body_size=MAX_BODY)
        server.add_socket(bind_unix_socket(path, mode=0o600))
        started.set()
        loop.run_forever()

    threading.Thread(target=serve, daemon=True).start()
    assert started.wait(10)
    yield path
    loop.call_soon_threadsafe(loop.stop)


def ask(path, head, body=b""):
    """The status line of the answer to a request of `head` (its lines) and `body`, or
    "no answer" when none comes within 5 s."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(path)
        with contextlib.suppress(OSError):  # it answered and closed before the whole body went
            s.sendall("\r\n".join([*head, "", ""]).encode() + body)
        try:
            return s.recv(4096).split(b"\r\n", 1)[0].decode()
        except TimeoutError:
            return "no answer"


def post(length, *more):
    return ["POST /submission/LM10/LM10-L1 HTTP/1.1", "Host: x", f"Content-Length: {length}", *more]


def test_a_body_without_a_token_is_refused_before_it_is_sent(exchange):
    # the headers alone: without BodyAfterToken, tornado waits for the body ("no answer")
    assert ask(exchange, post(MAX_BODY)) == "HTTP/1.1 403 Forbidden"
    assert ask(exchange, post(10, "Authorization: bearer"), b"files=[]xx") == (
        "HTTP/1.1 403 Forbidden"
    )


def test_a_body_of_unsaid_length_is_refused(exchange):
    head = post(0, "Transfer-Encoding: chunked")[:2] + ["Transfer-Encoding: chunked"]
    assert ask(exchange, head) == "HTTP/1.1 411 Length Required"


def test_what_tornado_refuses_unread_and_what_has_no_body_go_on_as_before(exchange):
    # past max_body_size: tornado's own 400, before any token is asked for
    assert ask(exchange, post(MAX_BODY + 1)) == "HTTP/1.1 400 Bad Request"
    assert ask(exchange, post("many")) == "HTTP/1.1 400 Bad Request"
    # no body: the handler's (in the service, CourseRules judges the token there)
    assert ask(exchange, ["GET /submissions HTTP/1.1", "Host: x"]) == "HTTP/1.1 200 OK"
    assert ask(exchange, post(0)) == "HTTP/1.1 200 OK"
