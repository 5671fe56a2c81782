"""The hub's access log, bounded (grading/hub/access_log.py, the forty-fifth tester's table in
grading/JUPYTERHUB.md): JupyterHub's own `log_request` on requests of a real tornado
application, with the log's own clock. A student's flood of requests with 30,000-character
addresses, to the hub's port without a credential, was 484 MB of the hub's log a second."""

import io
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
from unittest import mock

import pytest
from jupyterhub.log import CoroutineLogFormatter
from tornado.httputil import HTTPHeaders, HTTPServerRequest
from tornado.web import Application, RequestHandler

from grading.hub import access_log


class Answers(RequestHandler):
    pass


def handler(uri):
    request = HTTPServerRequest(
        method="GET",
        uri=uri,
        headers=HTTPHeaders({"Host": "127.0.0.1"}),
        connection=mock.Mock(),
    )
    request.remote_ip = "127.0.0.1"
    answered = Answers(Application(), request)
    answered.set_status(200)
    answered.current_user = None
    return answered


def test_a_flood_of_long_addresses_takes_the_hubs_log_a_bounded_amount(caplog):
    now = [0.0]
    bounded = access_log.Bounded(clock=lambda: now[0])
    long = "/hub/api/?x=" + "a" * 30_000
    with caplog.at_level(logging.INFO, logger="tornado.access"):
        for second in range(3):
            now[0] = second
            for _ in range(1000):
                bounded(handler(long))
    lines = [r.getMessage() for r in caplog.records]
    logged = [line for line in lines if "GET /hub/api/" in line]
    assert len(logged) == 3 * access_log.LINES_PER_SECOND, len(logged)
    assert max(map(len, lines)) < access_log.ADDRESS_CHARS + 100, max(map(len, lines))
    assert "...[30012 characters]" in logged[0], logged[0][-80:]
    counted = [line for line in lines if "requests not logged" in line]
    assert counted == ["950 requests not logged (more than 50 a second)"] * 2, counted


def test_a_short_address_is_logged_as_it_was(caplog):
    bounded = access_log.Bounded(clock=lambda: 0.0)
    with caplog.at_level(logging.INFO, logger="tornado.access"):
        answered = handler("/hub/api/user")
        bounded(answered)
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["200 GET /hub/api/user"]
    assert answered.request.uri == "/hub/api/user"


def test_every_line_of_the_hubs_log_is_cut_and_counted(monkeypatch):
    """The forty-fifth tester's: tornado's warning for each refused request and JupyterHub's
    "Not authorizing access to ..." carried a 30,000-character address whole, unbounded. (The
    bytes a second are bounded too: the next test; here the records alone.)"""
    monkeypatch.setattr(access_log, "BYTES_PER_SECOND", 1 << 30)
    now = [0.0]
    bounded = access_log.LinesPerSecond(clock=lambda: now[0])
    handler = logging.Handler()
    handler.addFilter(bounded)
    out = []
    handler.emit = lambda record: out.append(record.getMessage())
    log = logging.getLogger("lm10-test-hub")
    log.addHandler(handler)
    log.propagate = False
    address = "/hub/api/users/" + "a" * 30_000
    try:
        for second in range(2):
            now[0] = second
            for _ in range(1000):
                log.warning("%d GET %s (127.0.0.1): forbidden", 403, address)
    finally:
        log.removeHandler(handler)
    assert len(out) == 2 * access_log.RECORDS_PER_SECOND, len(out)
    assert max(map(len, out)) < access_log.MESSAGE_CHARS + 100, max(map(len, out))
    assert out[access_log.RECORDS_PER_SECOND].startswith("(900 lines not logged"), out[100][:60]


def test_long_lines_of_the_hubs_log_are_bounded_in_bytes_too():
    """The forty-eighth tester's: 100 records a second of 2,000 characters each were 17 GiB of
    the hub's log a day; a student's four connections without a credential asking
    `/hub/api/users/<30,000 characters>` wrote 10.5 GiB a day (tornado's 403 warning and the
    access line). Past BYTES_PER_SECOND in a second, each record is now cut to SHORT_CHARS;
    a classmate's short line in the flood stays whole."""
    now = [0.0]
    bounded = access_log.LinesPerSecond(clock=lambda: now[0])
    handler = logging.Handler()
    handler.addFilter(bounded)
    out = []
    handler.emit = lambda record: out.append((now[0], record.getMessage()))
    log = logging.getLogger("lm10-test-hub-bytes")
    log.addHandler(handler)
    log.propagate = False
    address = "/hub/api/users/" + "a" * 30_000
    try:
        for second in range(3):
            now[0] = second
            for i in range(1000):
                log.warning("%d GET %s (127.0.0.1): forbidden", 403, address)
                if i == 50:
                    log.warning("Failed login for 'lm10-bob'")
    finally:
        log.removeHandler(handler)
    most = (
        access_log.BYTES_PER_SECOND
        + access_log.RECORD_PREFIX_BYTES
        + access_log.MESSAGE_CHARS
        + 100
        + access_log.RECORDS_PER_SECOND
        * (access_log.RECORD_PREFIX_BYTES + access_log.SHORT_CHARS + 100)
    )
    for second in range(3):
        logged = [message for at, message in out if at == second]
        size = sum(access_log.RECORD_PREFIX_BYTES + len(m.encode()) for m in logged)
        assert len(logged) == access_log.RECORDS_PER_SECOND, (second, len(logged))
        assert size <= most, (second, size, most)
        assert "Failed login for 'lm10-bob'" in logged, second
    assert most < 48_000, most  # 4 GB a day at most, was 100 * 2,064 a second (17 GiB a day)


JOURNAL_ENTRY = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
try:
    s.sendto(b"SYSLOG_IDENTIFIER=jupyterhub\nMESSAGE=[I JupyterHub] forged\n", sys.argv[1])
    print("sent")
except OSError as error:
    print(type(error).__name__)
"""


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("bwrap"), reason="the servers' sandbox is bubblewrap")
def test_no_server_writes_to_the_journal(tmp_path):
    """The forty-fifth tester's (open until the forty-eighth's): journald's socket, mode 0666,
    was in reach of every server (`--ro-bind / /` stops no `sendmsg` on a socket), and her
    entry showed as the hub's unit's. Played with the servers' bubblewrap options and a socket
    standing in for journald's: sent and received without `journal_hidden`, refused with it."""
    journal = tmp_path / "journal"
    journal.mkdir()
    socket_path = journal / "socket"
    received = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    received.bind(str(socket_path))
    os.chmod(socket_path, 0o666)
    received.settimeout(5)

    def entry(*hidden, path=socket_path):
        command = [shutil.which("bwrap"), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        command += [*hidden, "--unshare-pid", "--", sys.executable, "-c", JOURNAL_ENTRY]
        done = subprocess.run([*command, str(path)], capture_output=True, text=True)
        return done.stdout.strip() or done.stderr.strip()

    notify = tmp_path / "notify"
    notified = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notified.bind(str(notify))
    os.chmod(notify, 0o777)
    hidden = access_log.journal_hidden(str(journal), str(notify))
    try:
        assert entry() == "sent"  # her reach without it: the entry arrives
        assert b"forged" in received.recv(4096)
        assert entry(*hidden) == "FileNotFoundError"
        received.setblocking(False)
        with pytest.raises(BlockingIOError):
            received.recv(4096)
        # systemd's notification socket: reached without, /dev/null (refused) with
        assert entry(path=notify) == "sent"
        assert entry(*hidden, path=notify) == "ConnectionRefusedError"
    finally:
        received.close()
        notified.close()
    absent = [str(tmp_path / "absent"), str(tmp_path / "none"), str(tmp_path / "no bus")]
    assert access_log.journal_hidden(*absent) == ()
    assert access_log.JOURNAL == "/run/systemd/journal"
    assert access_log.NOTIFY == "/run/systemd/notify"


def test_tracebacks_in_the_hubs_log_are_bounded_in_bytes_too():
    """The fiftieth tester's: a request of hers the hub logs with a traceback (a body that is
    not JSON to her own token's API: "Couldn't parse JSON", `exc_info`) put 900 bytes after each
    record's message, which the bound did not count: 100 records a second were 90 KB of the log
    a second, 7.5 GB a day. The traceback is counted, and past BYTES_PER_SECOND only its last
    line is kept, cut."""
    bounded = access_log.LinesPerSecond(clock=lambda: 0)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(CoroutineLogFormatter())
    handler.addFilter(bounded)
    log = logging.getLogger("lm10-test-hub-tracebacks")
    log.addHandler(handler)
    log.propagate = False
    try:
        for _ in range(300):
            try:
                json.loads("{")
            except ValueError:
                log.error("Couldn't parse JSON", exc_info=True)
    finally:
        log.removeHandler(handler)
    logged = out.getvalue()
    assert logged.count("Couldn't parse JSON") == access_log.RECORDS_PER_SECOND
    assert logged.count("Traceback (most recent call last)") >= 1  # the first ones whole
    assert "JSONDecodeError" in logged.rstrip().rsplit("\n", 1)[-1]  # the last ones, cut
    most = access_log.BYTES_PER_SECOND + access_log.RECORDS_PER_SECOND * (
        access_log.RECORD_PREFIX_BYTES + 2 * access_log.SHORT_CHARS
    )
    assert len(logged.encode()) <= most, (len(logged.encode()), most)


BUS_CONNECT = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
    print("connected")
except OSError as error:
    print(type(error).__name__)
"""


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("bwrap"), reason="the servers' sandbox is bubblewrap")
def test_no_server_reaches_the_system_bus(tmp_path):
    """The fiftieth tester's: the system's D-Bus socket (`/run/dbus/system_bus_socket`, mode
    0666) was in reach of every server, and systemd answers anyone there with the hub's unit's
    processes and their command lines (each student's server), logind with who is logged in.
    Played with the servers' bubblewrap options and a listening socket standing in for the
    bus's: connected without `journal_hidden`'s `bus`, FileNotFoundError with it."""
    bus = tmp_path / "dbus"
    bus.mkdir()
    path = bus / "system_bus_socket"
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(str(path))
    listening.listen()
    os.chmod(path, 0o666)

    def connect(*hidden):
        command = [shutil.which("bwrap"), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        command += [*hidden, "--unshare-pid", "--", sys.executable, "-c", BUS_CONNECT, str(path)]
        done = subprocess.run(command, capture_output=True, text=True)
        return done.stdout.strip() or done.stderr.strip()

    absent = str(tmp_path / "absent")
    try:
        assert connect() == "connected"  # her reach without it
        assert connect(*access_log.journal_hidden(absent, absent, str(bus))) == "FileNotFoundError"
    finally:
        listening.close()
    assert access_log.DBUS == "/run/dbus"
