"""ngshare, the course's exchange, started with the course's rules (the hub runs this).

    python -m grading.hub.ngshare_service --state DIR --socket PATH --course LM10
                                          --instructors NAME[,NAME] [--prefix /services/ngshare/]
                                          [--max-request-mib 16] [--quota-mib 128]
                                          [--max-files 500] [--auth-cache-seconds 5]
                                          [--mib-per-minute 64] [--connections-per-user 16]

ngshare (PyPI `ngshare`) keeps nbgrader's releases, submissions and feedback in a database and a
folder of its own and hands them out over a REST API to whoever JupyterHub says is calling, so
no student writes anywhere another student or the instructor reads. JupyterHub starts it as a
managed service under a system user of its own (grading/hub/jupyterhub_config.py). This module
runs ngshare's own application (`ngshare.ngshare.MyApplication`: its handlers, database and
permission checks unchanged) with what the course needs and ngshare 0.6.0's `python -m ngshare`
does not do:

- Who is calling is JupyterHub's answer, through JupyterHub's own `HubAuth`: a token in the
  Authorization header (never a cookie, which a page the instructor opens could make the browser
  send; never the URL, which logs keep), of a hub *user* (not a service), carrying the scope
  JupyterHub's services require, `access:services!service=<this service>` (the hub's `user` role
  grants it and every server's token carries it: jupyterhub_config.py). ngshare itself accepts
  any token of any audience (a token the student gave another service would do) and answers a
  request without a valid one with a 500 on half its endpoints; here every such request gets a
  403 before any handler runs. The hub's answer about a token is kept --auth-cache-seconds
  (HubAuth's cache_max_age; JupyterHub's default is 5 minutes), so a revoked or expired token
  stops working within seconds.
- Size: a request carries at most --max-request-mib MiB (tornado's default is 100 MB; a bigger
  one is cut off with "400 Bad Request" before it is read) and at most --max-files files, each
  name at most MAX_NAME_BYTES bytes of UTF-8 and free of control, format (bidi overrides,
  zero-width) and line or paragraph separator characters (refused with a 400 that shows the
  name escaped). A student's stored submissions, every lab together, cost at most --quota-mib
  MiB, where each file costs its content, its name and FILE_OVERHEAD bytes (what the file
  system and the database spend on it even when it is empty), and they are at most
  MAX_SUBMISSIONS (1,000): past either, a submission is refused with a 413 that says so
  (ngshare keeps every submission).
- Time: a request with a body is answered before any of it is read unless it carries a
  valid token as above (403) and its length (411: no chunked bodies), and the student's bodies
  of the last minute leave room for it under --mib-per-minute (429, with Retry-After; the
  instructors are not counted). Tornado reads and decodes a whole body before any handler
  runs: without this, anyone kept the exchange's one thread busy with bodies it decoded only
  to refuse (about 0.3 s per 16 MiB request).
- The course exists with exactly its instructors before the first request: created at start if
  missing, its instructors set to --instructors (the hub passes its instructors' group).
  ngshare creates courses only for its admins, and this service has none. Students are enrolled
  by an instructor (`python -m grading.hub.exchange add_students`).
- Its folder (database and stored files) must belong to the service's user and be closed to
  everyone else (mode 0700), or it does not start; nor does it start as root. New files get
  umask 077.
- New releases and submissions are stored. ngshare 0.6.0 relies on SQLAlchemy 1's backref
  cascade, which SQLAlchemy 2 removed (the course's environment has SQLAlchemy 2, as
  JupyterHub 5 and nbgrader 0.9 allow): an `Assignment` or a `Submission` it makes joins the
  database session only through its course or assignment, so under SQLAlchemy 2 ngshare answers
  a release or a submission with success and stores nothing ("Object of type <Assignment> not
  in session" in its log). `restore_backref_cascade` brings back exactly that step for those
  two attributes.
- On one machine it listens on the Unix socket --socket (mode 0666), whose folder must belong
  to this service's user and be writable by no one else: no TCP port, so no other user's
  process can take its address while it is down (ngshare itself listens on every interface).
  In a pod of its own (Kubernetes), on --listen HOST:PORT, behind a Service no user pod can
  take. No debug mode
  (ngshare's debug pages print its environment, hub token included) and no autoreload.
- Connections: on the Unix socket, at most --connections-per-user open at once for each Unix
  user (the kernel's SO_PEERCRED says whose), the rest closed as they arrive; a connection
  idle for 30 s is closed. One student holding thousands of connections once took every file
  descriptor the exchange had, and no one else's request got in. In a pod (TCP) every
  connection comes from a pod's address, not a user: the cap does not apply there.
"""

import argparse
import base64
import binascii
import contextlib
import json
import math
import os
import re
import resource
import socket
import stat
import struct
import sys
import time
import unicodedata
from collections import Counter, deque, namedtuple
from pathlib import Path

from jupyterhub.services.auth import HubAuth
from ngshare import dbutil
from ngshare.database import Assignment, Course, File, Submission, User
from ngshare.ngshare import MyApplication, MyRequestHandler, SubmitAssignment
from sqlalchemy import LargeBinary, cast, event, func
from sqlalchemy.orm import configure_mappers, object_session
from tornado import httputil
from tornado.httpserver import HTTPServer
from tornado.ioloop import IOLoop
from tornado.iostream import StreamClosedError
from tornado.log import enable_pretty_logging
from tornado.netutil import bind_unix_socket

MIB = 1 << 20
FILE_OVERHEAD = 4096  # what one stored file costs beyond its content and name: a block
MAX_NAME_BYTES = 255  # the longest file name (its whole path in the submission), UTF-8
REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}  # control, format (bidi), separators
# a student's stored submissions, every lab together: ngshare reads each of them, row by row,
# wherever it lists them (her list, the instructor's collect): with 32,000 one-file submissions
# of hers (within the quota in bytes), each such list cost the exchange's one thread 0.55 s, a
# request without a body that no budget counts (the fifty-first tester's table in JUPYTERHUB.md)
MAX_SUBMISSIONS = 1000


def shown(name):
    """`name` as it may be printed to a terminal or a log: every character outside printable
    ASCII escaped, so control and bidi characters show as what they are."""
    return ascii(name)


def name_problem(name):
    """Why `name` (a file's path in a submission) is refused, or None."""
    if not isinstance(name, str) or not name:
        return "a file without a name"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"a file name longer than {MAX_NAME_BYTES} bytes: {shown(name[:60])}..."
    bad = sorted({ch for ch in name if unicodedata.category(ch) in REFUSED_CATEGORIES})
    if bad:
        return (
            f"a file name with control or formatting characters "
            f"({', '.join(f'U+{ord(ch):04X}' for ch in bad)}): {shown(name)}"
        )
    return None


def request_files(handler):
    """The (name, size) of each file a request's `files` field carries, checked against the
    course's limits on count and names; None if it carries no `files` field (ngshare answers
    that itself)."""
    raw = handler.get_body_argument("files", None)
    if raw is None:
        return None
    try:
        listed = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        handler.json_error(400, "Files cannot be JSON decoded")
    if not isinstance(listed, list) or not all(isinstance(e, dict) for e in listed):
        handler.json_error(400, "Files must be a list of {path, content}")
    limit = handler.settings["lm10_max_files"]
    if len(listed) > limit:
        handler.json_error(
            400, f"Refused: {len(listed)} files; the exchange takes at most {limit} at once"
        )
    found = []
    for entry in listed:
        problem = name_problem(entry.get("path"))
        if problem:
            handler.json_error(400, f"Refused: {problem}")
        try:
            size = len(base64.b64decode(str(entry.get("content", "")).encode()))
        except (binascii.Error, ValueError):
            handler.json_error(400, "Content cannot be base64 decoded")
        found.append((entry["path"], size))
    return found


def cost(name, size):
    """What one stored file counts against a quota."""
    return size + len(name.encode("utf-8", "surrogatepass")) + FILE_OVERHEAD


async def hub_user(auth, headers):
    """(the hub's model of the caller, None) when the Authorization header in `headers` holds
    a token of a hub *user* with this service's access scope; else (None, why not)."""
    found = auth.auth_header_pat.fullmatch(headers.get("Authorization", "").strip())
    model = await auth.user_for_token(found[1], sync=False) if found else None
    if not model:
        return None, "Permission denied: a JupyterHub token in the Authorization header"
    if model.get("kind") != "user":
        return None, "Permission denied: only JupyterHub users use the exchange"
    if not auth.check_scopes(auth.access_scopes, model):
        return None, f"Permission denied: the token lacks {' or '.join(sorted(auth.access_scopes))}"
    return model, None


class CourseRules:
    """Mixed in front of every ngshare handler: the caller is a hub user, through a token with
    this service's access scope, or the request ends with 403; a submission past the student's
    quota ends with 413. Replaces ngshare's own `prepare`, which asks the hub about any token."""

    async def prepare(self):
        self.db = self.application.db_session()  # ngshare's handlers use these two
        self.user = None
        model, refused = await hub_user(self.settings["lm10_hub_auth"], self.request.headers)
        if refused:
            self.json_error(403, refused)
        self.current_user = model
        self.user = User.from_jupyterhub_user(model, self.db)
        if self.request.method == "POST":
            files = request_files(self)
            if files is not None and isinstance(self, SubmitAssignment):
                self.check_quota(files)

    def check_quota(self, files):
        kept = (
            self.db.query(func.count(Submission._id))
            .filter(Submission.student == self.user)
            .scalar()
        )
        if kept >= MAX_SUBMISSIONS:
            self.json_error(
                413,
                f"Submission refused: the exchange keeps {kept} submissions of yours, at most "
                f"{MAX_SUBMISSIONS} per student. Ask your instructor.",
            )
        quota = self.settings["lm10_quota"]
        stored = stored_cost(self.db, self.user)
        new = sum(cost(name, size) for name, size in files)
        if stored + new > quota:
            self.json_error(
                413,
                f"Submission refused: your submissions take {stored / MIB:.1f} MiB and this one "
                f"{new / MIB:.1f} MiB ({len(files)} files; each file counts its content, its "
                f"name and {FILE_OVERHEAD} bytes); the exchange keeps at most "
                f"{quota / MIB:.0f} MiB per student. Ask your instructor.",
            )


def stored_cost(db, user):
    """What `user`'s stored submissions count against her quota (`cost` of each file), in one
    query the database sums. Loaded object by object (each submission's files a query of its
    own), her 32,000 one-file submissions made each 72-byte submission of hers cost the
    exchange's one thread 4 s, and her bodies' budget (bytes a minute) never refused them (the
    fifty-first tester's table in JUPYTERHUB.md)."""
    name = func.coalesce(func.length(cast(File.filename, LargeBinary)), 0)  # UTF-8 bytes
    total = (
        db.query(func.sum(func.coalesce(File.size, 0) + name + FILE_OVERHEAD))
        .select_from(Submission)
        .join(Submission.files)
        .filter(Submission.student == user)
        .scalar()
    )
    return int(total or 0)


PEER_CREDENTIALS = struct.Struct("3i")  # SO_PEERCRED: pid, uid, gid


def peer_uid(sock):
    """The Unix user at the other end of a Unix socket's connection (SO_PEERCRED, which the
    kernel fills in: the caller cannot choose it), or None for another kind of socket."""
    if sock.family != socket.AF_UNIX:
        return None
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, PEER_CREDENTIALS.size)
    return PEER_CREDENTIALS.unpack(raw)[1]


class BodyAfterToken(httputil.HTTPMessageDelegate):
    """In front of the application for one request: a request with a body is answered, and
    its connection closed, before any of the body is read, unless its token is a hub user's
    with this service's scope (else 403), it gives its length (else 411) and its user's
    bodies of the last minute leave room for it (else 429; the server's `admit`).

    Tornado reads and form-decodes a request's whole body before a handler's `prepare`, where
    CourseRules reads the token: about 0.3 s of the exchange's one thread for a 16 MiB body,
    spent for anyone, token or not, 16 connections a Unix user at once (the thirty-sixth
    tester's). A request without a body goes on as before (CourseRules judges it)."""

    def __init__(self, server, delegate, connection):
        self.server, self.delegate, self.connection = server, delegate, connection

    async def headers_received(self, start_line, headers):
        refused = await self.server.admit(headers)
        if refused is None:
            passed = self.delegate.headers_received(start_line, headers)
            if passed is not None:
                await passed
            return
        status, message, extra = refused
        body = json.dumps({"success": False, "message": message}).encode()
        head = [f"HTTP/1.1 {status} {httputil.responses[status]}"]
        head += [f"{k}: {v}" for k, v in {**extra, "Content-Type": "application/json"}.items()]
        head += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
        stream = self.connection.detach()  # nothing more of this connection is read
        try:
            await stream.write("\r\n".join(head).encode("latin-1") + body)
        except StreamClosedError:
            pass
        finally:
            stream.close()

    def data_received(self, chunk):
        return self.delegate.data_received(chunk)

    def finish(self):
        self.delegate.finish()

    def on_connection_close(self):
        self.delegate.on_connection_close()


class PerUserServer(HTTPServer):
    """Tornado's HTTP server that keeps at most `per_user` connections of each Unix user open
    on its Unix socket; past that, a new connection of that user's is closed as soon as it is
    accepted. One student's thousands of connections then hold a bounded number of the
    exchange's file descriptors, and everyone else still gets in (without it, they held every
    descriptor the exchange may open, and no one else's request was answered).

    Every request with a body passes `admit` before tornado reads the body (BodyAfterToken):
    a hub user's token, and at most `bytes_per_minute` of request bodies from each user in
    any minute (instructors unbounded: `unbounded`, their release and feedback)."""

    per_user = 16
    bytes_per_minute = 64 * MIB
    unbounded = frozenset()

    def start_request(self, server_conn, request_conn):
        return BodyAfterToken(self, super().start_request(server_conn, request_conn), request_conn)

    async def admit(self, headers, now=time.monotonic):
        """None if a request with these headers may be read; else (status, message, headers)."""
        if "Transfer-Encoding" in headers:
            return 411, "Refused: the exchange reads a request only with its Content-Length", {}
        given = re.fullmatch(r"[0-9]+", headers.get("Content-Length", "0").split(",")[0].strip())
        length = int(given[0]) if given else 0  # not a number: tornado refuses it unread
        if length == 0 or length > self.conn_params.max_body_size:  # tornado reads neither
            return None
        model, refused = await hub_user(self.request_callback.settings["lm10_hub_auth"], headers)
        if refused:
            return 403, refused, {}
        if model["name"] in self.unbounded:
            return None
        if not hasattr(self, "read_of"):
            self.read_of = {}
        read = self.read_of.setdefault(model["name"], deque())
        at = now()
        minute_ago = at - 60
        while read and read[0][0] <= minute_ago:
            read.popleft()
        sent = sum(n for _, n in read)
        if sent + length > self.bytes_per_minute:
            wait, left = 0, sent
            for when, n in read:  # until enough of the last minute's bodies are a minute old
                left -= n
                wait = when - minute_ago
                if left + length <= self.bytes_per_minute:
                    break
            return (
                429,
                f"Refused: you sent the exchange {sent / MIB:.1f} MiB in the last minute and "
                f"this request is {length / MIB:.1f} MiB; it reads at most "
                f"{self.bytes_per_minute / MIB:.0f} MiB a minute from each student. Try again "
                f"in {wait:.0f} s.",
                {"Retry-After": str(max(1, round(wait + 0.5)))},
            )
        # the bodies of one second share one entry, dated that second's end: at most 61 entries
        # a user however many bodies she sends, each counted up to a second longer than its own
        # minute (one entry a body made her every admit sum tens of thousands of them)
        second = math.floor(at) + 1
        if read and read[-1][0] == second:
            read[-1] = (second, read[-1][1] + length)
        else:
            read.append((second, length))
        return None

    def handle_stream(self, stream, address):
        if not hasattr(self, "open_by_uid"):
            self.open_by_uid, self.uid_of = Counter(), {}
        try:
            uid = peer_uid(stream.socket)
        except OSError:
            stream.close()
            return
        if uid is not None:
            if self.open_by_uid[uid] >= self.per_user:
                stream.close()
                return
            self.open_by_uid[uid] += 1
            self.uid_of[stream] = uid
        super().handle_stream(stream, address)

    def on_close(self, server_conn):
        uid = self.uid_of.pop(server_conn.stream, None)
        if uid is not None:
            self.open_by_uid[uid] -= 1
            if not self.open_by_uid[uid]:
                del self.open_by_uid[uid]
        super().on_close(server_conn)


def join_parent_session(target, value, oldvalue, initiator):
    """An object set to belong to one in a session joins that session, as SQLAlchemy 1's
    backref cascade did."""
    session = object_session(value) if value is not None else None
    if session is not None and target not in session:
        session.add(target)


def restore_backref_cascade():
    """A new release (Assignment, set to its course) and a new submission (Submission, set to
    its assignment) join the session of what they are set to, so ngshare's commit stores them."""
    configure_mappers()  # Assignment.course is the backref of Course.assignments
    for attribute in (Assignment.course, Submission.assignment):
        if not event.contains(attribute, "set", join_parent_session):
            event.listen(attribute, "set", join_parent_session)


def with_course_rules(app):
    """Put CourseRules in front of every ngshare handler of `app` (its health check stays open
    for Kubernetes' probes). Returns how many routes it changed."""
    changed = 0
    for rule in app.wildcard_router.rules:
        target = rule.target
        if isinstance(target, type) and issubclass(target, MyRequestHandler):
            rule.target = type(target.__name__, (CourseRules, target), {})
            changed += 1
    return changed


def private_folder(path, closed=0o077, mode="700"):
    """`path` (made if missing), refused unless a folder of this user whose mode has none of
    the bits `closed` (default: closed to everyone else)."""
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise SystemExit(f"ngshare: {path} is not a folder")
    if info.st_uid != os.geteuid() or info.st_mode & closed:
        raise SystemExit(
            f"ngshare: {path} must belong to this service's user (uid {os.geteuid()}) and be "
            f"mode {mode} or narrower; it is mode {stat.S_IMODE(info.st_mode):o}, owner uid "
            f"{info.st_uid}: chown it to the service's user and chmod {mode} it"
        )
    return path


def set_instructors(app, course_id, instructors):
    """The course `course_id` exists, and its instructors are exactly `instructors`."""
    db = app.db_session()
    try:
        course = db.query(Course).filter(Course.id == course_id).one_or_none()
        if course is None:
            course = Course(course_id)
            db.add(course)
        wanted = []
        for name in instructors:
            user = db.query(User).filter(User.id == name).one_or_none() or User(name)
            if user in course.students:
                course.students.remove(user)
            wanted.append(user)
        for user in [u for u in course.instructors if u not in wanted]:
            course.instructors.remove(user)
        for user in wanted:
            if user not in course.instructors:
                course.instructors.append(user)
        db.commit()
    finally:
        db.close()


def parse(argv):
    parser = argparse.ArgumentParser(
        prog="python -m grading.hub.ngshare_service", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--state", required=True, help="folder of its database and files (0700)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--socket", help="Unix socket to listen on (one machine); its folder written by it only"
    )
    where.add_argument(
        "--listen", help="HOST:PORT to listen on (a pod of its own, behind a Service)"
    )
    parser.add_argument(
        "--prefix",
        default=os.environ.get("JUPYTERHUB_SERVICE_PREFIX") or "/services/ngshare/",
        help="its URL path (default: $JUPYTERHUB_SERVICE_PREFIX or /services/ngshare/)",
    )
    parser.add_argument("--course", required=True, help="the course id (nbgrader's course_id)")
    parser.add_argument(
        "--instructors", required=True, help="comma-separated hub user names of the instructors"
    )
    parser.add_argument("--max-request-mib", type=float, default=16)
    parser.add_argument("--quota-mib", type=float, default=128)
    parser.add_argument("--max-files", type=int, default=500)
    parser.add_argument("--auth-cache-seconds", type=int, default=5)
    parser.add_argument(
        "--mib-per-minute",
        type=float,
        default=64,
        help="most MiB of request bodies the exchange reads from one student in any minute",
    )
    parser.add_argument(
        "--connections-per-user",
        type=int,
        default=16,
        help="most connections one Unix user keeps open on --socket",
    )
    args = parser.parse_args(argv)
    args.instructors = [n.strip() for n in args.instructors.split(",") if n.strip()]
    if not args.instructors:
        parser.error("--instructors: name at least one instructor")
    if (
        args.max_request_mib <= 0
        or args.quota_mib <= 0
        or args.max_files <= 0
        or args.connections_per_user <= 0
    ):
        parser.error(
            "--max-request-mib, --quota-mib, --max-files and --connections-per-user must be "
            "positive"
        )
    if args.mib_per_minute < args.max_request_mib:
        parser.error("--mib-per-minute must be at least --max-request-mib")
    if args.auth_cache_seconds < 0:
        parser.error("--auth-cache-seconds must not be negative")
    if not args.prefix.startswith("/") or not args.prefix.endswith("/"):
        parser.error("--prefix must begin and end with /")
    if args.listen:
        host, _, port = args.listen.rpartition(":")
        if not host or not port.isdigit():
            parser.error("--listen: HOST:PORT")
        args.listen = (host, int(port))
    for name in ("JUPYTERHUB_API_URL", "JUPYTERHUB_API_TOKEN"):
        if not os.environ.get(name):
            parser.error(f"${name} is not set: JupyterHub starts this as a service")
    return args


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    if os.geteuid() == 0:
        raise SystemExit("ngshare: refusing to run as root; give the service a user of its own")
    os.umask(0o077)
    state = private_folder(args.state)
    database = f"sqlite:///{state / 'ngshare.db'}"
    storage = str(state / "files")
    enable_pretty_logging()
    # ngshare's own migrations, as `python -m ngshare` runs them
    options = namedtuple("Options", ["x"])(["data=true", f"storage={storage}"])
    dbutil.upgrade(database, cmd_opts=options)
    if args.socket:
        socket_path = Path(args.socket)
        private_folder(socket_path.parent, closed=0o022, mode="755")
    # ngshare builds a HubOAuth (unused: it is never a browser's page) from this variable,
    # which the hub sets only for a service with a URL
    os.environ.setdefault("JUPYTERHUB_SERVICE_PREFIX", args.prefix)
    app = MyApplication(
        args.prefix,
        database,
        storage,
        debug=False,
        admin=(),
        autoreload=False,
    )
    restore_backref_cascade()
    if not with_course_rules(app):
        raise SystemExit("ngshare: found none of its handlers to guard (a new ngshare release?)")
    auth = HubAuth(allow_token_in_url=False, cache_max_age=args.auth_cache_seconds)
    if not auth.access_scopes:
        raise SystemExit("ngshare: no access scope ($JUPYTERHUB_SERVICE_NAME is not set)")
    app.settings.update(
        lm10_hub_auth=auth,
        lm10_quota=int(args.quota_mib * MIB),
        lm10_max_files=args.max_files,
    )
    set_instructors(app, args.course, args.instructors)
    # every descriptor the system lets it have; a connection that sends nothing for 30 s, or
    # a body that takes more than a minute, is closed
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    server = PerUserServer(
        app,
        max_body_size=int(args.max_request_mib * MIB),
        idle_connection_timeout=30,
        body_timeout=60,
    )
    server.per_user = args.connections_per_user
    server.bytes_per_minute = int(args.mib_per_minute * MIB)
    server.unbounded = frozenset(args.instructors)
    if args.socket:
        server.add_socket(bind_unix_socket(str(socket_path), mode=0o666))
    else:
        server.listen(args.listen[1], args.listen[0])
    with contextlib.suppress(KeyboardInterrupt):  # the hub stops its services with SIGINT
        IOLoop.current().start()


if __name__ == "__main__":
    main()
