"""The exchange's server in front of a request's body (grading/hub/ngshare_service.py,
`PerUserServer` and `BodyAfterToken`), without a hub: a real tornado server on a Unix socket of
this test, in front of a handler that reads what it is sent, with JupyterHub's real HubAuth,
which a request without a token never reaches. tests/test_jupyterhub.py plays the rest (a
student's own token and her budget of bodies a minute) on a real hub."""

import asyncio
import contextlib
import socket
import threading
import time

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


class TokenIsName:
    """HubAuth's part that `admit` uses, without a hub: every token is the hub user it names."""

    auth_header_pat = HubAuth.auth_header_pat
    access_scopes = {"access:services!service=ngshare"}

    async def user_for_token(self, token, sync=True):
        return {"kind": "user", "name": token}

    def check_scopes(self, scopes, model):
        return set(scopes)


def test_many_small_bodies_cost_admit_no_more_than_few(tmp_path):
    # the thirty-seventh tester: one entry a body made each of her requests sum all her
    # bodies of the last minute (Content-Length: 1, some hundreds a second on her 16
    # connections): 20,000 admits took 4.5 s here, each later one longer than the one before
    server = PerUserServer(Application([], lm10_hub_auth=TokenIsName()), max_body_size=MAX_BODY)
    server.bytes_per_minute = 4 * MAX_BODY
    clock = [1000.0]
    mallory = {"Content-Length": "1", "Authorization": "token mallory"}

    async def play():
        started = time.perf_counter()
        for _ in range(20000):  # one a millisecond: 20 s of them
            clock[0] += 0.001
            assert await server.admit(mallory, now=lambda: clock[0]) is None
        spent = time.perf_counter() - started
        assert len(server.read_of["mallory"]) <= 61
        assert spent < 2, spent
        # her budget still counts every byte for a whole minute (and at most a second more)
        clock[0] += 61
        whole = {"Content-Length": str(MAX_BODY), "Authorization": "token mallory"}
        for _ in range(4):
            assert await server.admit(whole, now=lambda: clock[0]) is None
        assert (await server.admit(whole, now=lambda: clock[0]))[0] == 429
        clock[0] += 59.9
        assert (await server.admit(whole, now=lambda: clock[0]))[0] == 429
        clock[0] += 1.1
        assert await server.admit(whole, now=lambda: clock[0]) is None

    asyncio.run(play())


def test_her_stored_submissions_cost_the_quota_check_one_query(tmp_path):
    # the fifty-first tester: the quota's check loaded her stored submissions object by object
    # (each submission's files a query of its own); with 32,000 one-file submissions stored,
    # each 72-byte submission of hers cost the exchange's one thread 4 s (0.006 s for a
    # student with none), and her budget of bodies (bytes a minute) never refused them
    from ngshare.database.database import Assignment, Base, Course, File, Submission, User
    from sqlalchemy import create_engine, event
    from sqlalchemy.orm import sessionmaker
    from tornado.web import HTTPError

    from grading.hub import ngshare_service
    from grading.hub.ngshare_service import FILE_OVERHEAD, CourseRules

    engine = create_engine(f"sqlite:///{tmp_path / 'ngshare.db'}")
    Base.metadata.create_all(engine)
    db = sessionmaker(bind=engine)()
    course = Course("LM10")
    lab = Assignment("LM10-L2", course)
    mallory, alice = User("mallory"), User("alice")
    db.add_all([course, lab, mallory, alice])
    names = ["a.ipynb", "é/ü.ipynb", "x"]  # a name counts its UTF-8 bytes
    for i in range(300):
        submission = Submission(mallory, lab)
        db.add(submission)
        submission.files.append(File(names[i % 3], b"z" * i))
    theirs = Submission(alice, lab)
    db.add(theirs)
    theirs.files.append(File("a.ipynb", b"z" * 10**6))  # a classmate's counts for no one else
    db.commit()
    expected = sum(
        i + len(names[i % 3].encode()) + FILE_OVERHEAD for i in range(300)
    )  # what `cost` gives each of her files

    class Handler(CourseRules):
        settings = {"lm10_quota": expected + FILE_OVERHEAD + 1}

        def json_error(self, status, message):
            raise HTTPError(status, message)

    handler = Handler()
    handler.db, handler.user = db, mallory
    statements = []
    event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    handler.check_quota([("y", 0)])  # fits, to the byte
    assert len(statements) <= 3, len(statements)  # her count of submissions, then the sum
    with pytest.raises(HTTPError) as refused:
        handler.check_quota([("yz", 0)])  # one byte past the quota
    assert refused.value.status_code == 413
    assert ngshare_service.stored_cost(db, mallory) == expected
    assert ngshare_service.stored_cost(db, User("nobody")) == 0


def test_her_submissions_are_counted_too(tmp_path, monkeypatch):
    # the fifty-first tester: within the quota in bytes, 32,000 one-file submissions of hers
    # made ngshare's lists of them (hers, the instructor's collect) cost the exchange's one
    # thread 0.55 s each, requests without a body that no budget counts
    from ngshare.database.database import Assignment, Base, Course, File, Submission, User
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker
    from tornado.web import HTTPError

    from grading.hub import ngshare_service
    from grading.hub.ngshare_service import CourseRules

    monkeypatch.setattr(ngshare_service, "MAX_SUBMISSIONS", 20)
    engine = create_engine(f"sqlite:///{tmp_path / 'ngshare.db'}")
    Base.metadata.create_all(engine)
    db = sessionmaker(bind=engine)()
    course = Course("LM10")
    labs = [Assignment("LM10-L1", course), Assignment("LM10-L2", course)]
    mallory, alice = User("mallory"), User("alice")
    db.add_all([course, *labs, mallory, alice])
    for i in range(19):  # every lab together
        submission = Submission(mallory, labs[i % 2])
        db.add(submission)
        submission.files.append(File("a.ipynb", b""))
    for _ in range(30):  # a classmate's count for no one else
        db.add(Submission(alice, labs[0]))
    db.commit()

    class Handler(CourseRules):
        settings = {"lm10_quota": 1 << 30}

        def json_error(self, status, message):
            raise HTTPError(status, message)

    handler = Handler()
    handler.db, handler.user = db, mallory
    handler.check_quota([("a.ipynb", 10)])  # her twentieth
    db.add(Submission(mallory, labs[1]))
    db.commit()
    with pytest.raises(HTTPError) as refused:
        handler.check_quota([("a.ipynb", 10)])
    assert refused.value.status_code == 413
    assert "keeps 20 submissions of yours, at most 20" in refused.value.log_message
