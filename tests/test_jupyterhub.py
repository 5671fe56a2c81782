"""A class played through a real JupyterHub with one system user per student, as
grading/JUPYTERHUB.md sets it up, and every attack on the file exchange that JUPYTERHUB.md lists
tried in it.

It needs root (CI runs it as root): it makes system users and groups with the names
grading/hub/jupyterhub_config.py expects (students lm10-alice, lm10-bob and lm10-mallory, the
instructor lm10-instructor, the exchange's lm10-ngshare; each marked MARK in its comment field
and removed afterwards, whatever happens), a folder they can pass through with a home each,
open to all as Debian's useradd makes them (the hub must close them), and the instructor's course
(lab LM10-L2) in ~/LM10, then starts `jupyterhub` on
grading/hub/jupyterhub_config.py as it is, adding only free loopback ports, smaller exchange
limits and a driver service: the test's hands, with the scopes of an admin. PAM logins, servers
as each user (LocalProcessSpawner), ngshare as a hub service under its own user. Without root,
configurable-http-proxy, bubblewrap or ngshare the test skips, and fails instead where
LM10_REQUIRE_HUB=1 (.ci/run).

The honest round trip goes through the hub's REST API and the servers' own endpoints, as a
browser's panels call them: the instructor enrols the class with ngshare-course-management's
commands (`python -m grading.hub.exchange add_students`) in her shell, then her formgrader
generates and releases the lab; each student's Assignments
panel fetches it, the answer is written with the contents API and submitted; the formgrader
collects, autogrades (the course's sandbox, as the instructor's user), generates and releases
feedback; the students fetch it. alice hands in the solution, bob one mistake.

The attacker, mallory, plays every attack on the file exchange with what a student has: her
exchange token (the one her own server holds), her own server's endpoints, and a shell (processes
as her system user, with her server's environment, outside her sandbox: more than a student has).
Each must fail, and alice's and bob's grades and feedback arrive intact. Where an attack used to
work through something the course replaced (ngshare_exchange's own collect), the test shows that
too, so that it cannot pass by accident.

Then she plays the attacks of a stranger on one machine (JUPYTERHUB.md, "Strangers on one
machine") from her own kernel, inside her server's sandbox, as her terminal would: seeing other
users' processes, subscribing to every other user's loopback listener while alice runs cells,
planting torch.compile's cache folder and other files in shared temporary folders for alice,
taking the exchange's address, using the instructor's exchange credential elsewhere, tokens
after revocation and expiry, names and empty files that cost the exchange, names that write to a
terminal, and a process of hers that outlives her server. And a second tester's (issue 39):
filling her sandbox's temporary folders (memory), a thread bomb while alice starts threads,
holding thousands of the exchange's connections while alice asks it something, a page her own
server serves to anyone that the instructor opens in Chromium (reaching for the instructor's
server with the instructor's cookies), and listening on the port of alice's stopped server for
its next start. And a third's: listening on alice's port the moment her server ends on its own
(before the hub notices), a user namespace of her own, the hub's REST API with a token that
carries all she may do, the proxy's API, the exchange's administration, and a file list nested
deeper than the exchange's parser goes. And a fourth's: another server's listening socket
(who holds each, read from the host's /proc), and an "Open on the hub" link (nbgitpuller) of
hers that alice opens, pulling a repository mallory serves from her kernel into alice's kernel
specifications; the lessons' link into a hidden folder and into the instructor's server. And a
seventh's: her submission carrying the modules a kernel starts from (`ipykernel_launcher.py`,
`grading/hub/kernel.py`) and a notebook that leaves a mark,
which the instructor opens in JupyterLab and validates (nothing of hers may run as the
instructor), a notebook whose stored Vega-Lite chart reads the solutions and sends them to her
address when the instructor looks at it in Chromium, and her `nbgrader_config.py`, which
collect leaves out. And an eighth's: her `codeop.py` and nbconvert template in that folder, where
the instructor converts her notebook to HTML in her terminal and from JupyterLab. And a
ninth's: a grade id of escape sequences in her notebook, which nbgrader's autograde writes into
its log (the instructor's terminal, the formgrader's answer), and her outputs in the autograded
notebooks, which must open untrusted in the instructor's JupyterLab. And a tenth's: her
server's standard streams, which were the hub's (what the administrator types in the hub's
terminal, her bytes in it, a flood of lines), a message pushed into the output of alice's
running cell through ipykernel's IOPub pipe, alice's debugger attached to once alice has turned
it on and off, and `nbgrader autograde` in a terminal that does not name the instructor's
configuration. And an eleventh's: her answer, autograded by the instructor, making a user
namespace of its own in the grading sandbox, her text in the hub's own log (the scopes and roles
she asks a token for, C1 controls in a request line sent to the hub's own port), and every
loopback listener of the hub asked without a credential, past the proxy. And a twelfth's: the
kernel's keyrings, which belong to uids, not to sandboxes (a key left under her uid, read from
her kernel; the instructor's keys, read by her answer while autograded), and the tokens of an
account removed from the machine. And a fourteenth's: bubblewrap's /dev, a tmpfs of half the
machine's memory, hers to fill, and empty files beyond her folders' caps (flagged); what she
leaves a classmate graded next in a warm sandbox is tests/test_warm_sandbox_neighbours.py's.
Every server has a host
of its own under DOMAIN, which this process and the browser resolve to the loopback. The hub's
log must flag what one machine does not bound (memory, disk, the shared ports and file table),
and cookies over plain http.
"""

import ast
import asyncio
import base64
import contextlib
import copy
import ctypes
import fcntl
import http.server
import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote, urlencode, urlparse

import nbformat
import pytest
import requests
import traps
from folders import account, close_again, closed_folders, let_through, run
from lab_cases import answer_cells, course_copy, l2, solution_answers
from nbgrader.api import Gradebook
from nbgrader.utils import parse_utc
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from grading.hub.unix_http import SocketAdapter

ROOT = Path(__file__).resolve().parents[1]
HUB_CONFIG = ROOT / "grading" / "hub" / "jupyterhub_config.py"
BIN = Path(sys.executable).parent
LAB = "LM10-L2"
EXCHANGE_LIMITS = {  # the exchange's limits, small for the test
    "LM10_NGSHARE_MAX_REQUEST_MIB": "1",
    "LM10_NGSHARE_QUOTA_MIB": "2",
    "LM10_NGSHARE_MAX_FILES": "300",
    "LM10_NGSHARE_MIB_PER_MINUTE": "6",
}
MARK = "made by tests/test_jupyterhub.py"  # the comment field of every account the test makes
# The hub's public name (LM10_HUB_URL), each server on a subdomain of it: every name under it is
# this machine's loopback, for the test's clients (`loopback_names`) and its browser.
DOMAIN = "lm10.test"


def config_names():
    """The names jupyterhub_config.py gives its groups, the exchange's user, the service and the
    course (its module-level string constants), so that the test makes exactly those."""
    names = {}
    for node in ast.parse(HUB_CONFIG.read_text()).body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            names[node.targets[0].id] = node.value.value
    return names


def config_settings():
    """The names of the traits jupyterhub_config.py sets (`c.<Class>.<name> = ...`)."""
    return {
        target.attr
        for node in ast.walk(ast.parse(HUB_CONFIG.read_text()))
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Attribute)
        and isinstance(target.value.value, ast.Name)
        and target.value.value.id == "c"
    }


NAMES = config_names()
COURSE_ID, SERVICE = NAMES["COURSE_ID"], NAMES["SERVICE"]
STUDENTS_GROUP, INSTRUCTORS_GROUP = NAMES["STUDENTS"], NAMES["INSTRUCTORS"]
NGSHARE_USER = NAMES["NGSHARE_USER"]
EXCHANGE_TOKEN_NOTE = NAMES["EXCHANGE_TOKEN_NOTE"]
INSTRUCTOR = "lm10-instructor"
HONEST = {"lm10-alice": l2.correct, "lm10-bob": l2.mistake}
ATTACKER = "lm10-mallory"
STUDENTS = (ATTACKER, *HONEST)  # mallory first: the exchange lists her submission first
PEOPLE = (*STUDENTS, INSTRUCTOR)
GONE = "lm10-gone"  # a student whose account is removed while the hub runs (a twelfth tester's)
COURSE = {"course_id": COURSE_ID, "assignment_id": LAB}
TOKEN = "lm10-test-" + secrets.token_hex(16)  # the driver service's
DRIVER_CONFIG = """c = get_config()  # noqa: F821
load_subconfig({config!r})  # the course's configuration, as it is; then the test's additions
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_port}"
c.Spawner.http_timeout = 300
c.Spawner.start_timeout = 300
c.JupyterHub.services = [
    *c.JupyterHub.services,
    {{"name": "course-driver", "api_token": {token!r}}},
]
# The test's hand on the race for a server's port: the next start of the user named in the pin
# file ("name port") uses that port, as if the hub had drawn it.
_prepare_server = c.Spawner.pre_spawn_hook


def _pinned(spawner):
    _prepare_server(spawner)
    import pathlib

    pin = pathlib.Path({pin!r})
    if pin.exists():
        name, port = pin.read_text().split()
        if name == spawner.user.name:
            spawner.port = int(port)
            pin.unlink()


c.Spawner.pre_spawn_hook = _pinned
c.JupyterHub.load_roles = [
    *c.JupyterHub.load_roles,
    {{
        "name": "course-driver",
        "services": ["course-driver"],
        "scopes": [
            "admin:users", "admin:servers", "admin:server_state", "access:servers", "tokens",
            "access:services", "proxy",
        ],
    }},
]
"""
# Run as a user: each operation on a path, and what happened ("done" or the errno's name).
PROBE = r"""
import errno, json, os, sys
results = {}
for label, op, path, *more in json.loads(sys.argv[1]):
    try:
        if op == "read":
            with open(path, "rb") as handle:
                handle.read(1)
        elif op == "list":
            os.listdir(path)
        elif op == "create":
            with open(path, "xb"):
                pass
        elif op == "rename":
            os.rename(path, more[0])
        elif op == "symlink":
            os.symlink(more[0], path)
        elif op == "bind":
            import socket
            socket.socket(socket.AF_UNIX).bind(path)
        elif op == "remove":
            os.remove(path)
        results[label] = "done"
    except OSError as error:
        results[label] = errno.errorcode.get(error.errno, str(error))
print(json.dumps(results))
"""
DENIED = {"EACCES", "EPERM"}
ACCESS = f"access:services!service={SERVICE}"
# Code a student runs in her own kernel (her terminal would do the same), each printing one
# line of JSON.
SEE_PROCESSES = r"""
import json, os
seen = {}
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        seen[pid] = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        pass
print(json.dumps({"uids": sorted(set(seen.values())), "count": len(seen)}))
"""
# Part of her payloads below: every TCP listener another user holds, read from /proc/net/tcp
# and tcp6, as (owner uid, port, table) (in her user namespace every other uid reads as 65534:
# she tries them all).
OTHERS_LISTENERS = r"""
import os
def others_listeners():
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A" and int(fields[7]) != os.getuid():  # listening, someone else's
                found.append((int(fields[7]), int(fields[1].rsplit(":", 1)[1], 16), table))
    return found
"""
# A tenth tester's (issue 39): what a kernel still listened on over loopback TCP, which every
# user of the machine shares. She pushes a message to every listener of another user (ZeroMQ,
# one socket each): ipykernel's IOPub pipe printed one without its 16 random bytes to the
# kernel's stderr, which goes into the output of the cell running in alice's notebook ...
PUSH_TO_EVERYONE = (
    OTHERS_LISTENERS
    + r"""
import json, time, zmq
ports = [port for _, port, table in others_listeners() if table == "/proc/net/tcp"]
context = zmq.Context()
sockets = []
for port in ports:
    push = context.socket(zmq.PUSH)
    push.linger = 0
    push.connect(f"tcp://127.0.0.1:{port}")
    sockets.append(push)
time.sleep(1)
sent = 0
for push in sockets:
    try:
        push.send_multipart([b"x" * 16, b"MALLORY-IN-YOUR-NOTEBOOK"], zmq.NOBLOCK)
        sent += 1
    except zmq.Again:
        pass
time.sleep(2)
context.destroy(linger=0)
print(json.dumps({"listeners": len(ports), "sent": sent}))
"""
)
# ... and debugpy, once alice had turned JupyterLab's debugger on (and off), listened for a
# debug client without any credential: she attaches as that client and evaluates code that
# leaves a mark in the home of whoever runs it.
DEBUG_MARK = "debugged-by-mallory"
ATTACH_TO_EVERYONE = (
    OTHERS_LISTENERS
    + r"""
import json, re, socket, time
ports = [port for _, port, table in others_listeners() if table == "/proc/net/tcp"]
def send(sock, seq, command, arguments=None):
    body = json.dumps({"seq": seq, "type": "request", "command": command,
                       "arguments": arguments or {}}).encode()
    sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
def receive(sock, buffer, seconds):
    found, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        head = re.match(rb"Content-Length: (\d+)\r\n\r\n", buffer[0])
        if head and len(buffer[0]) >= head.end() + int(head[1]):
            found.append(json.loads(buffer[0][head.end() : head.end() + int(head[1])]))
            buffer[0] = buffer[0][head.end() + int(head[1]) :]
            continue
        sock.settimeout(max(end - time.monotonic(), 0.01))
        try:
            chunk = sock.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        buffer[0] += chunk
    return found
def answered(found, command):
    return [m for m in found if m.get("type") == "response" and m.get("command") == command]
code = "__import__('pathlib').Path.home().joinpath(MARK).write_text('ran')"
result = {"listeners": len(ports), "debug clients": 0, "attached": 0, "evaluated": 0}
for port in ports:
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=2)
        buffer = [b""]
        send(sock, 1, "initialize", {"adapterID": "python", "clientID": "mallory"})
        if not any(m.get("success") for m in answered(receive(sock, buffer, 2), "initialize")):
            continue
        result["debug clients"] += 1
        send(sock, 2, "attach", {"justMyCode": False})
        receive(sock, buffer, 3)
        send(sock, 3, "configurationDone")
        found = receive(sock, buffer, 3)
        if not any(m.get("success") for m in answered(found, "attach")):
            continue
        result["attached"] += 1
        send(sock, 4, "threads")
        threads = [t["id"] for m in answered(receive(sock, buffer, 3), "threads")
                   for t in m.get("body", {}).get("threads", [])]
        for n, thread in enumerate(threads):
            send(sock, 10 + n, "pause", {"threadId": thread})
        receive(sock, buffer, 3)
        seq = 100
        for thread in threads:
            seq += 1
            send(sock, seq, "stackTrace", {"threadId": thread})
            for reply in answered(receive(sock, buffer, 3), "stackTrace"):
                for frame in (reply.get("body") or {}).get("stackFrames", [])[:2]:
                    seq += 1
                    send(sock, seq, "evaluate",
                         {"expression": code, "frameId": frame["id"], "context": "repl"})
                    replies = answered(receive(sock, buffer, 3), "evaluate")
                    result["evaluated"] += any(m.get("success") for m in replies)
        for n, thread in enumerate(threads):  # and lets the kernel run on
            send(sock, seq + 1 + n, "continue", {"threadId": thread})
        send(sock, seq + 1 + len(threads), "disconnect", {"terminateDebuggee": False})
        receive(sock, buffer, 2)
    except OSError:
        pass
print(json.dumps(result))
""".replace("MARK", repr(DEBUG_MARK))
)
# alice's cell while the message arrives, and a child of hers printing through the IOPub pipe
ALICE_WAITS = "import time\nprint('ALICE-WAITS', flush=True)\ntime.sleep(8)"
ALICE_FORKS = (
    "import multiprocessing\n"
    "child = multiprocessing.get_context('fork').Process(target=print, args=('ALICE-CHILD',))\n"
    "child.start()\nchild.join(30)\nprint('exit', child.exitcode)"
)
# A tenth tester's (issue 39): her server's standard streams are the hub's, inherited (the hub
# runs in an administrator's terminal, as JUPYTERHUB.md's install starts it, or under a service
# manager that logs them). Her kernel takes copies of her server's descriptors 0, 1 and 2
# (pidfd_getfd: her own process), writes a title, the clipboard (OSC 52: pasted later, a
# command of hers in root's shell), a cleared screen and a forged line of the hub's to 1 and 2,
# and reads what waits on 0 (what the administrator types there).
HUBS_STREAMS = r"""
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
server = os.getppid()  # her server, which started this kernel
took, wrote, typed = {}, [], None
pidfd = libc.syscall(434, server, 0)  # pidfd_open
for n in (0, 1, 2):
    fd = libc.syscall(438, pidfd, n, 0) if pidfd >= 0 else -1  # pidfd_getfd
    if fd < 0:
        took[n] = errno.errorcode.get(ctypes.get_errno(), "?")
        continue
    took[n] = os.readlink(f"/proc/self/fd/{fd}")
    if n == 0:
        os.set_blocking(fd, False)
        try:
            typed = os.read(fd, 4096).decode("utf-8", "replace")
        except OSError as error:
            typed = errno.errorcode.get(error.errno, "?")
    else:
        os.write(fd, PAYLOAD)
        wrote.append(n)
print(json.dumps({"took": took, "wrote": wrote, "typed": typed}))
"""
# The same descriptor flooded: a process of hers writes lines to her server's output as fast
# as it can for FLOOD_SECONDS (a log the hub must read, and maybe write).
FLOOD_SECONDS = 6
FLOOD_WRITER = r"""
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
fd = libc.syscall(438, libc.syscall(434, SERVER, 0), 1, 0)  # her server's descriptor 1
block = (b"HER-FLOOD " + b"x" * 100 + b"\n") * 1000
end, written = time.monotonic() + SECONDS, 0
while time.monotonic() < end:
    written += os.write(fd, block)
open(os.path.expanduser("~/flooded"), "w").write(str(written))
"""
FLOOD = f"""
import json, os, subprocess, sys
code = {FLOOD_WRITER!r}.replace("SERVER", str(os.getppid())).replace("SECONDS", "{FLOOD_SECONDS}")
print(json.dumps(subprocess.Popen([sys.executable, "-c", code]).pid))
"""
HER_STREAM_TEXT = "HER-STREAM-TEXT"
HER_FORGED_LINE = "[W 2026-12-05 09:00:00.000 JupyterHub app:1] FORGED lm10-alice's server stopped"
HER_STREAM_PAYLOAD = (
    f"\x1b]0;{HER_STREAM_TEXT}\x07\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\x1b[H"
    f"{HER_STREAM_TEXT}\n{HER_FORGED_LINE}\n"
).encode()
ADMIN_TYPED = "ADMIN-TYPED-" + secrets.token_hex(4)
EAVESDROP = (
    OTHERS_LISTENERS
    + r"""
import json, time, zmq
listeners = others_listeners()
context = zmq.Context()
subscribers = []
for owner, port, table in listeners:
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.setsockopt(zmq.LINGER, 0)
    if table.endswith("6"):
        sub.setsockopt(zmq.IPV6, 1)
        sub.connect(f"tcp://[::1]:{port}")
    else:
        sub.connect(f"tcp://127.0.0.1:{port}")
    subscribers.append(sub)
poller = zmq.Poller()
for sub in subscribers:
    poller.register(sub, zmq.POLLIN)
frames, heard = 0, []
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    for sub, _ in poller.poll(200):
        for frame in sub.recv_multipart():
            frames += 1
            text = frame.decode("utf-8", "replace")
            if "ALICE" in text:
                heard.append(text[:300])
context.destroy(linger=0)
print(json.dumps({"listeners": len(listeners), "frames": frames, "heard": heard}))
"""
)
KERNEL_TRANSPORT = r"""
import json, ipykernel.connect
info = json.loads(ipykernel.connect.get_connection_info())
print(json.dumps({"transport": info["transport"], "ip": info["ip"]}))
"""
# A user namespace of her own (in it she is "root", and reaches the parts of the kernel that
# only root reached: netfilter, many file systems' mounts), then a network namespace in it.
NEW_USERS = r"""
import json, subprocess, sys
code = (
    "import ctypes, errno\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "done = libc.unshare(0x10000000 | 0x40000000) == 0\n"  # CLONE_NEWUSER | CLONE_NEWNET
    "print('done' if done else errno.errorcode.get(ctypes.get_errno(), '?'))\n"
)
done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
print(json.dumps(done.stdout.strip() or done.stderr[-300:]))
"""
# A thirteenth tester's (issue 39): the machine's one pool of TCP buffer memory, from her
# kernel. Loopback connections to herself, each kept full and unread: what each charges to the
# pool (/proc/net/sockstat's "TCP ... mem", in pages, the machine's), and how many descriptors
# one process of hers may open. A few pairs only: the test takes nothing from anyone.
SOCKET_BUFFERS = r"""
import json, os, resource, socket, time
def pool():
    for line in open("/proc/net/sockstat"):
        if line.startswith("TCP:"):
            f = line.split()
            return int(f[f.index("mem") + 1])
PAIRS = 4
before = pool()
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(PAIRS)
held = []
for _ in range(PAIRS):
    mine = socket.socket()
    mine.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)  # the kernel caps it
    mine.connect(server.getsockname())
    theirs, _ = server.accept()
    theirs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 30)
    mine.setblocking(False)
    for _ in range(4000):
        try:
            mine.send(b"x" * (1 << 16))
        except BlockingIOError:
            time.sleep(0.01)
            try:
                mine.send(b"x" * (1 << 16))
            except BlockingIOError:
                break
    held.append((mine, theirs))
charged = pool() - before
for pair in held:
    for end in pair:
        end.close()
print(json.dumps({
    "pages per connection": charged / PAIRS,
    "descriptors": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
    "page": os.sysconf("SC_PAGE_SIZE"),
}))
"""
# An eleventh tester's (issue 39): her code while the instructor autogrades her on the hub runs
# as the instructor's user, in the grading sandbox inside the instructor's server: what it
# reaches there. A user namespace of her own (where she is "root": netfilter, file systems'
# mounts), the hub's port, the exchange's socket, the instructor's home. Her answer's first
# cell; its printed line is kept in her autograded notebook, which the test reads.
GRADED_MARK = "LM10-GRADED-AS-THE-INSTRUCTOR"
GRADED_PROBE = r"""
import ctypes as _c, errno as _e, json as _j, os as _o, socket as _s
_libc = _c.CDLL(None, use_errno=True)
_pid = _o.fork()
if _pid == 0:
    _o._exit(0 if _libc.unshare(0x10000000 | 0x40000000) == 0 else _c.get_errno())
_code = _o.waitstatus_to_exitcode(_o.waitpid(_pid, 0)[1])
_seen = {{"a user namespace": "made" if _code == 0 else _e.errorcode.get(_code, str(_code))}}
try:
    _s.create_connection(("127.0.0.1", {hub_port}), timeout=3).close()
    _seen["the hub's port"] = "connected"
except OSError as _error:
    _seen["the hub's port"] = _e.errorcode.get(_error.errno, str(_error))
for _what, _path in (("the exchange's socket", {socket!r}), ("the instructor's home", {home!r})):
    _seen[_what] = "there" if _o.path.exists(_path) else "absent"
# The eighty-sixth tester's: the instructor's server around her there. A hub token in any
# environment she reads (the server's own is JUPYTERHUB_API_TOKEN), the server's runtime folder
# (its jpserver-*.json holds its token), every mount she may write, and a process of hers left
# behind (named, for the test to look for on the machine once grading is done)
_procs = [_p for _p in _o.listdir("/proc") if _p.isdigit()]
_tokens = 0
for _p in _procs:
    try:
        _env = open("/proc/%s/environ" % _p, "rb").read()
    except OSError:
        continue
    _tokens += b"JUPYTERHUB_API_TOKEN" in _env or b"JPY_API_TOKEN" in _env
_seen["processes"], _seen["hub tokens"] = len(_procs), _tokens
_seen["the server's runtime folder"] = (
    sorted(_o.listdir({runtime!r})) if _o.path.isdir({runtime!r}) else "absent"
)
_written = set()
for _line in open("/proc/self/mountinfo"):
    _f = _line.split()
    _point = _f[4].replace("\\040", " ")
    if not _f[5].startswith("rw") or _point.startswith(("/proc", "/sys")):
        continue
    try:
        open(_o.path.join(_point, ".lm10-mark"), "w").close()
        _o.unlink(_o.path.join(_point, ".lm10-mark"))
        _written.add(_point)
    except OSError:
        pass
_seen["written"] = sorted(_written)
if _o.fork() == 0:
    if _o.fork() == 0:
        _libc.prctl(15, {left!r}, 0, 0, 0)
        __import__("time").sleep(120)
    _o._exit(0)
_o.waitpid(-1, 0)
print({mark!r}, _j.dumps(_seen))
"""
LEFT_BEHIND = b"lm10-left-behin"  # her process's name (prctl PR_SET_NAME: 15 bytes)
# A twelfth tester's (issue 39): the kernel's keyrings. A key belongs to a uid of the machine,
# not to a namespace: every process of that uid, in any sandbox, sees its uid's keys in
# /proc/keys and may name them by serial number; linking its uid's user keyring (`_uid.<uid>`,
# linkable by its owner) into its own session keyring makes it possess every key there, and
# read them. Where her code runs as the instructor (autograding), those are the instructor's
# keys; in her kernel, her uid's, which outlive her server and `userdel` (the next holder of
# the uid has them). What she links and what she reads, by description.
KEYS_MARK = "LM10-KEYS-SEEN"
KEYS_PROBE = r"""
import ctypes as _c, errno as _e, json as _j, os as _o
_libc = _c.CDLL(None, use_errno=True)
def _keyctl(*_args):
    _args = [_c.c_long(_a) if isinstance(_a, int) else _a for _a in _args]
    _done = _libc.syscall(_c.c_long(KEYCTL), *_args)
    return _done if _done >= 0 else _e.errorcode.get(_c.get_errno(), str(_c.get_errno()))
def _listed(_kind):
    return [_l.split() for _l in open("/proc/keys") if _l.split()[7] == _kind]
def _through(_keyring):
    # in a child of one thread: a session keyring of its own (JOIN), the keyring linked into
    # it (LINK), then every key it lists read (READ): possessed through the link
    _reading, _writing = _o.pipe()
    if _o.fork() == 0:
        _got = {"joined": _keyctl(1, None), "linked": _keyctl(8, _keyring, -3), "read": {}}
        for _f in _listed("user"):
            _buffer = _c.create_string_buffer(512)
            _size = _keyctl(11, int(_f[0], 16), _buffer, 512)
            _got["read"][_f[8].rstrip(":")] = (
                _buffer.raw[:_size].decode("ascii", "replace") if isinstance(_size, int) else _size
            )
        _o.write(_writing, _j.dumps(_got).encode())
        _o._exit(0)
    _o.close(_writing)
    _o.wait()
    with _o.fdopen(_reading) as _answer:
        return _j.loads(_answer.read())
_keys = {"her user keyring": _keyctl(0, -4, 0), "linked": [], "read": {}}
for _f in _listed("keyring"):
    if _f[8].startswith("_uid."):  # every user keyring of her uid, one at a time
        _got = _through(int(_f[0], 16))
        _keys["linked"].append(_got["linked"])
        for _name, _value in _got["read"].items():
            if _keys["read"].get(_name) in (None, "EACCES"):
                _keys["read"][_name] = _value
print(KEYS_MARK, _j.dumps(_keys))
"""
# The keys the test puts where a login's tools would (her uid's keyring in the machine's own
# namespace, outside any sandbox: a Kerberos ticket in a `KEYRING:` cache, a passphrase stored
# with `keyctl padd user ... @u`), as the instructor and as whoever had mallory's uid before her
KEY_DESCRIPTION = "lm10-login-ticket"
SYS_KEYCTL, SYS_ADD_KEY = {"x86_64": (250, 248), "aarch64": (219, 217)}.get(
    os.uname().machine, (None, None)
)
KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING, KEYCTL_CLEAR = -4, -5, 7


def keys_probe():
    return KEYS_PROBE.replace("KEYCTL", str(SYS_KEYCTL)).replace("KEYS_MARK", repr(KEYS_MARK))


def keys_seen(lines):
    """What KEYS_PROBE reported, from its printed lines (its one line, or None)."""
    found = [json.loads(line.split(" ", 1)[1]) for line in lines if line.startswith(KEYS_MARK)]
    assert len(found) <= 1, found
    return found[0] if found else None


# The hub's loopback listeners (the proxy's two ports, the hub's own, every server's, which
# the hub holds: all in /proc/net/tcp, as root's), asked directly, past the proxy, without any
# credential, as each user's server and as the hub: what answers with anything but a login, a
# redirect or a refusal. (The test names the hub's ports for her, so that she asks nothing of
# other programs on the machine; /proc/net/tcp lists them among the rest.)
UNAUTHENTICATED = r"""
import json, socket
names, ports = NAMES, PORTS
asks = [("GET", "api/contents"), ("GET", "api/contents/LM10-L2"), ("GET", "api/kernels"),
        ("GET", "api/sessions"), ("GET", "api/terminals"), ("GET", "api/me"),
        ("GET", "api/status"), ("GET", "api/config/notebook"), ("GET", "metrics"),
        ("GET", "files/LM10-L2/LM10-L2.ipynb"), ("GET", "lab/api/workspaces"),
        ("GET", "lab/api/settings"), ("GET", "formgrader/api/submissions/LM10-L2"),
        ("GET", "assignments"), ("GET", "api/kernelspecs"), ("POST", "api/kernels"),
        ("POST", "api/terminals"), ("PUT", "api/contents/mallory-was-here.txt"),
        ("POST", "api/shutdown")]
def ask(port, method, path, host):
    sock = socket.create_connection(("127.0.0.1", port), timeout=2)
    body = b"{}" if method != "GET" else b""
    sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\n"
                 f"Content-Type: application/json\r\nConnection: close\r\n\r\n".encode() + body)
    answer = b""
    try:
        while len(answer) < 65536:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass
    sock.close()
    head = answer.split(b"\r\n", 1)[0].decode("latin-1")
    return int(head.split()[1]) if head.startswith("HTTP/") else 0, answer
statuses, answered, http = {}, [], []
for port in ports:  # a listener that does not answer HTTP is left after one try
    try:
        if ask(port, "GET", "/", "DOMAIN")[0]:
            http.append(port)
    except OSError:
        pass
for port in http:
    prefixes = [("/hub/", "DOMAIN")] + [(f"/user/{name}/", f"{name}.DOMAIN") for name in names]
    for prefix, host in prefixes:
        for method, path in asks:
            try:
                status, answer = ask(port, method, prefix + path, host)
            except OSError:
                continue
            statuses[status] = statuses.get(status, 0) + 1
            if 200 <= status < 300:
                answered.append([port, method, prefix + path, answer[-300:].decode("latin-1")])
print(json.dumps({"ports": len(http), "statuses": statuses, "answered": answered}))
"""
PLANTED = ["/tmp", "/var/tmp", "/dev/shm"]
PLANT = (
    "import json, os\nplanted = []\n"
    f"for top in {PLANTED!r}:\n"
    "    folder = os.path.join(top, 'torchinductor_lm10-alice')\n"
    "    try:\n"
    "        os.makedirs(folder, exist_ok=True)\n"
    "        os.chmod(folder, 0o777)\n"
    "        open(os.path.join(folder, 'planted.py'), 'w').write('print(1)')\n"
    "        planted.append(folder)\n"
    "    except OSError as error:\n"
    "        planted.append(str(error))\n"
    "print(json.dumps(planted))\n"
)
LOOK_FOR_PLANTS = (
    "import json, os, tempfile\n"
    "from torch._inductor.runtime.cache_dir_utils import cache_dir\n"
    f"seen = [t for t in {PLANTED!r}\n"
    "        if os.path.exists(os.path.join(t, 'torchinductor_lm10-alice', 'planted.py'))]\n"
    "print(json.dumps({'cache': cache_dir(), 'tmp': tempfile.gettempdir(), 'seen': seen}))\n"
)
TAKE_THE_EXCHANGE = r"""
import errno, json, os, socket
target = SOCKET
folder = os.path.dirname(target)
tried = {}
for what, act in {
    "bind a socket beside it":
        lambda: socket.socket(socket.AF_UNIX).bind(os.path.join(folder, "x.sock")),
    "create a file beside it": lambda: open(os.path.join(folder, "x"), "x"),
    "remove its socket": lambda: os.remove(target),
    "rename its socket": lambda: os.rename(target, os.path.join(folder, "y")),
}.items():
    try:
        act()
        tried[what] = "done"
    except OSError as error:
        tried[what] = errno.errorcode.get(error.errno, str(error))
print(json.dumps(tried))
"""
DAEMON = r"""
import json, subprocess, sys
code = '''
import os, signal, socket, time
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, signal.SIG_IGN)
home = os.path.expanduser("~")
while True:
    open(os.path.join(home, "still-here"), "w").write(str(time.time()))
    try:
        os.remove(SOCKET)
    except OSError:
        pass
    try:
        socket.socket(socket.AF_UNIX).bind(SOCKET)
        open(os.path.join(home, "took-the-exchange"), "w").write("yes")
    except OSError:
        pass
    time.sleep(0.2)
'''.replace("SOCKET", repr(SOCKET))
p = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, close_fds=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(json.dumps(p.pid))
"""
# ngshare_exchange's own collect, only reaching the exchange as the course's classes do (its
# socket, the exchange token): the control that shows what the course's Collect fixes.
# A seventh tester's notebook in her submission: its one cell leaves a file in the home of
# whoever runs it (nbgrader's Validate runs every cell in a kernel of the server's user).
VALIDATE_ME = "check-me.ipynb"
MARK_WHOEVER_RUNS_IT = "import pathlib\n(pathlib.Path.home() / {mark!r}).write_text('ran')"

# Her notebook with a stored Vega-Lite output (a seventh tester's): JupyterLab renders Vega in
# any notebook, trusted or not, and its loader fetches data with the page's cookies, a relative
# path from the notebook's folder; each datum then becomes an image's address, hers.
LOOK_AT_ME = "look-at-me.ipynb"
# A grade id that writes to a terminal: a window title, a cleared screen, the cursor home, a
# forged log line, a bell
# An eleventh tester's (issue 39): her text, in what the hub logs of her requests
HER_HUB_MARK = "HUB-LOG-BY-MALLORY"
HER_HUB_TEXT = f"\x1b]0;{HER_HUB_MARK}\x07\x1b[2J\x1b[H[JupyterHub] {HER_HUB_MARK} forged\x9b2J"
HER_GRADE_ID = "\x1b]0;graded\x07\x1b[2J\x1b[H[AutogradeApp | INFO] all 13.0 / 13.0\x07"


HER_RAW_PATH = b"/\x9b2J\x9bH" + HER_HUB_MARK.encode() + b"\x9b0m"  # C1: CSI as one byte


def open_notebook_as_instructor(hub, password, path, heard, seconds=45):
    """The instructor logs in, opens the notebook at `path` (under her course) in JupyterLab and
    looks at it for `seconds`: whether its markdown showed, and what `heard` got meanwhile."""
    with logged_in(hub, INSTRUCTOR, password) as page:
        page.goto(hub.url_of(f"/user/{INSTRUCTOR}/lab/tree/{path}"), timeout=120_000)
        shown = page.locator(".jp-RenderedMarkdown").filter(has_text=traps.SHOWN_TEXT).first
        shown.wait_for(timeout=180_000)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not heard:
            page.wait_for_timeout(1000)
        page.wait_for_timeout(2000)  # whatever else it sends
        return {"shown": True, "heard": list(heard)}


UNFIXED_COLLECT = """
import sys
import ngshare_exchange
from grading.hub.exchange import ThroughTheSocket
from nbgrader.apps.nbgraderapp import main


class UnfixedCollect(ThroughTheSocket, ngshare_exchange.ExchangeCollect):
    pass


sys.argv[0] = "nbgrader"
main()
"""
# Shared limits. The sandbox's /tmp, /var/tmp and /dev/shm, each capped for the test (its
# LM10_SANDBOX_TMPFS_MIB); she writes four times that into each, and into /dev, bubblewrap's
# own tmpfs of half the machine's memory (a fourteenth tester's: hers to write before). In the
# full /tmp she then makes empty files, which no size counts (a few: each is kernel memory).
TMPFS_MIB = 128
MAX_TASKS = 1000  # the most processes and threads a student may have (LM10_STUDENT_MAX_TASKS)
SERVER_PTYS = 8  # the most pseudo-terminals a server may hold at once (LM10_SERVER_PTYS)
FILL_TMPFS = r"""
import errno, json, os
found = {}
chunk = bytes(1 << 20)
for top in ("/tmp", "/var/tmp", "/dev/shm", "/dev"):
    path, written, why = os.path.join(top, "fill"), 0, None
    try:
        with open(path, "wb") as handle:
            while written < (4 * MIB) << 20:
                handle.write(chunk)
                handle.flush()
                written += len(chunk)
    except OSError as error:
        why = errno.errorcode.get(error.errno, str(error))
    if top == "/tmp":  # full: empty files still go in
        os.mkdir("/tmp/empty")
        for made in range(2000):
            open(f"/tmp/empty/{made}", "w").close()
        found["empty files in a full /tmp"] = len(os.listdir("/tmp/empty"))
        for name in os.listdir("/tmp/empty"):
            os.remove(f"/tmp/empty/{name}")
        os.rmdir("/tmp/empty")
    if os.path.exists(path):
        os.remove(path)
    found[top] = [written >> 20, why]
print(json.dumps(found))
""".replace("MIB", str(TMPFS_MIB))
# A thread bomb (threads count as processes against a user's limit, and cost little here): as
# many as she can start, up to 3,000, held until released.
TASK_BOMB = r"""
import json, threading
threading.stack_size(64 * 1024)
released = threading.Event()
held, refused = [], None
while len(held) < 3000:
    thread = threading.Thread(target=released.wait, daemon=True)
    try:
        thread.start()
    except RuntimeError as error:
        refused = str(error)
        break
    held.append(thread)
print(json.dumps({"threads": len(held), "refused": refused}))
"""
RELEASE_TASKS = "released.set()\nprint(0)\n"
# Pseudo-terminals (a sixteenth tester's): as many as she can open, up to 4,000, held until
# released. bwrap's devpts in each server drew on the machine's one pool (kernel.pty.max less
# kernel.pty.reserve: 3,072 by default), and hers took it: no one else's terminal opened.
PTY_HOARD = r"""
import errno, json, os, resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
hoard, why = [], None
while len(hoard) < 4000:
    try:
        hoard.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
    except OSError as error:
        why = errno.errorcode.get(error.errno, str(error))
        break
print(json.dumps([len(hoard), why]))
"""
OPEN_A_PTY = r"""
import json, os
try:
    leader, follower = os.openpty()
    opened = os.ttyname(follower)
    os.close(leader), os.close(follower)
except OSError as error:
    opened = str(error)
print(json.dumps(opened))
"""
# Native asynchronous I/O (a sixteenth tester's): io_setup takes each context's events from one
# pool of the machine's (fs.aio-max-nr); as many contexts of 4,096 events as she can, up to 64.
AIO_SETUP = r"""
import ctypes, errno, json, os, platform
libc = ctypes.CDLL(None, use_errno=True)
number = {"x86_64": 206, "aarch64": 0}[platform.machine()]
contexts, why = [], None
while len(contexts) < 64:
    context = ctypes.c_ulong(0)
    if libc.syscall(number, 4096, ctypes.byref(context)) != 0:
        why = errno.errorcode.get(ctypes.get_errno(), "?")
        break
    contexts.append(context)
print(json.dumps([len(contexts), why]))
"""
# io_uring (the eighteenth's small task): refused in every server, no pool but the kernel's
# largest unprivileged surface; nothing of the course uses it. A ring of 4 entries set up.
IO_URING_SETUP = r"""
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
ring = libc.syscall(425, 4, params)
print(json.dumps("ring" if ring >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")))
"""
RELEASE_PTYS = "[os.close(fd) for fd in hoard]\nhoard.clear()\nprint(0)\n"
# Sessions of her own (the nineteenth tester's): the scheduler shares the cores between sessions
# (autogroups) in the machine's root CPU cgroup, so each of her processes that makes one takes a
# share from everyone else's. 200 spinning shells, each its own session, held until stopped;
# alice's kernel times a sum before and meanwhile.
SPIN = ["sh", "-c", "while :; do :; done"]
SPIN_SESSIONS = rf"""
import json, subprocess
spin = {SPIN!r}
spinning = [subprocess.Popen(spin, start_new_session=True) for _ in range(200)]
print(json.dumps(len(spinning)))
"""
# The limits that would let her threads take a real-time policy, or her autogroup a nice value
# below 0 (/proc/self/autogroup), each more than one share of the cores: her server's are 0
# whatever the hub's own (the twentieth tester's)
PRIORITY_LIMITS = r"""
import json, resource
limits = resource.RLIMIT_RTPRIO, resource.RLIMIT_NICE
print(json.dumps([resource.getrlimit(limit) for limit in limits]))
"""
# The machine's cgroups as her server sees them: every student's CPU cgroup (cpu_group) names
# her and lists her server's pids and threads (the twentieth tester's)
CGROUPS_SEEN = r"""
import glob, json, os
seen = sorted(path for path in glob.glob("/sys/fs/cgroup/*/lm10-*") if "mallory" not in path)
print(json.dumps([[path, len(open(os.path.join(path, "tasks")).read().split())] for path in seen]))
"""
STOP_SPINNING = "[p.kill() for p in spinning]\n[p.wait() for p in spinning]\nprint(0)\n"
TIMED_SUM = r"""
import json, time
since = time.perf_counter()
sum(range(10_000_000))
print(json.dumps(round(time.perf_counter() - since, 2)))
"""
START_SOME = r"""
import json, subprocess, threading
try:
    threads = [threading.Thread(target=lambda: None) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done = subprocess.run(["true"]).returncode == 0
except (RuntimeError, OSError) as error:
    done = str(error)
print(json.dumps(done))
"""
# The exchange's connections: two processes, each with as many connections to its socket as
# her file limit allows, held open.
FLOOD_EXCHANGE = r"""
import json, subprocess, sys
code = '''
import resource, socket, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held, progress = [], time.monotonic()
while len(held) < min(hard - 50, 30000) and time.monotonic() - progress < 3:
    s = socket.socket(socket.AF_UNIX)
    s.setblocking(False)
    try:
        s.connect(SOCKET)
    except BlockingIOError:  # its queue is full: again, until it has not moved for 3 s
        s.close()
        time.sleep(0.005)
        continue
    except OSError:
        break
    held.append(s)
    progress = time.monotonic()
print(len(held), flush=True)
time.sleep(900)
'''.replace("SOCKET", repr(SOCKET))
flooders = [
    subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    for _ in range(2)
]
print(json.dumps([int(f.stdout.readline() or 0) for f in flooders]))
"""
STOP_FLOOD = "for f in flooders:\n    f.kill()\n    f.wait()\nprint(0)\n"
# Request bodies the exchange would decode to refuse: headers of one with no token (and no body
# sent: is it answered before the body?), then bodies of the largest size with her own token
# until one is refused, then headers alone again. Each answer's status code.
EXCHANGE_BODIES = r"""
import json, socket
args = ARGS
def ask(token, length, body=b""):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(15)
    s.connect(args["socket"])
    head = (
        f"POST {args['path']} HTTP/1.1\r\nHost: lm10-exchange\r\nContent-Length: {length}\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
    )
    if token:
        head += f"Authorization: token {token}\r\n"
    try:
        s.sendall(head.encode() + b"\r\n" + body)
    except OSError:  # it answered and closed before the whole body went
        pass
    try:
        status = s.recv(4096).split(b" ", 2)[1].decode()
    except (OSError, IndexError) as error:
        status = f"no answer: {type(error).__name__}"
    s.close()
    return status
size = args["max"] - 4096
out = {"no token": ask(None, size), "hers": []}
while len(out["hers"]) < 40 and "429" not in out["hers"]:
    out["hers"].append(ask(args["token"], size, b"files=" + b"x" * (size - 6)))
out["headers alone"] = ask(args["token"], size)
print(json.dumps(out))
"""
# A server's port: the ports others listen on; after a server stops, hers on every one that came
# free, answering as a server would and keeping what each request carried.
OTHERS_PORTS = r"""
import json, os
def listening():
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in open(table).read().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and int(fields[7]) != os.getuid():
                found.add(int(fields[1].rsplit(":", 1)[1], 16))
    return found
others = listening()
print(json.dumps(sorted(others)))
"""
SQUAT = r"""
import json, socket, threading
heard = []
def serve(sock):
    while True:
        conn, _ = sock.accept()
        conn.settimeout(5)
        try:
            heard.append(conn.recv(65536).decode("latin-1"))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 2\r\nConnection: close\r\n\r\n{}")
        except OSError:
            pass
        conn.close()
taken = []
for port in sorted(others - listening()):
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
    except OSError:
        sock.close()
        continue
    taken.append(port)
    threading.Thread(target=serve, args=(sock,), daemon=True).start()
print(json.dumps(taken))
"""
HEARD = "print(json.dumps([h[:400] for h in heard if 'lm10-alice' in h]))\n"
# A server that ends on its own (JupyterLab's File > Shut Down, a crash): she watches its port
# and listens there the moment it comes free, before the hub notices, keeping what each request
# carried; until a deadline, or until she got it.
TAKE_WHEN_FREE = r"""
import errno, json, socket, threading, time
taken = {"port": PORT, "taken": False, "why": None, "heard": []}
def serve(sock):
    while True:
        conn, _ = sock.accept()
        conn.settimeout(5)
        try:
            taken["heard"].append(conn.recv(65536).decode("latin-1"))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 2\r\nConnection: close\r\n\r\n{}")
        except OSError:
            pass
        conn.close()
def watch():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", PORT))
            sock.listen(64)
        except OSError as error:
            taken["why"] = errno.errorcode.get(error.errno, str(error))
            sock.close()
            time.sleep(0.002)
            continue
        taken["taken"] = time.time()  # when she got it
        serve(sock)
watcher = threading.Thread(target=watch, daemon=True)
watcher.start()
print(json.dumps(True))
"""
PROXY_API = r"""
import json, urllib.error, urllib.request
try:
    status = urllib.request.urlopen("http://127.0.0.1:PORT/api/routes", timeout=10).status
except urllib.error.HTTPError as error:
    status = error.code
print(json.dumps(status))
"""
TAKEN = (
    "print(json.dumps({**taken, 'heard': [h[:400] for h in taken['heard'] "
    "if 'lm10-alice' in h]}))\n"
)
# Her own server, configured from her home (~/.jupyter), serves a page to anyone, without a
# login: the instructor opens it (a link in a message, in a notebook) and its script reaches for
# the instructor's server with the instructor's cookies. Where every server shares the hub's
# origin, it reads the instructor's JupyterLab page and, with its XSRF token, her course.
LURE_PAGE = """<!doctype html><html><head><title>waiting</title></head><body>
<button id="go">Open my notebook</button><script>
const target = TARGET;
function say(verdict) { document.title = verdict.slice(0, 300); }
document.getElementById("go").onclick = () => {
  // JupyterHub's servers refuse to be framed (frame-ancestors 'none'): a window, then
  const opened = window.open(target + "lab");
  const since = Date.now();
  const look = async () => {
    try {
      const doc = opened.document;  // a SecurityError once it holds another origin's page
      const xsrf = (doc.cookie.match(/(?:^|; )_xsrf=([^;]+)/) || [])[1];
      if (xsrf && doc.location.pathname.includes("/lab")) {
        const r = await fetch(target + "api/contents/solutions",
                              {headers: {"X-XSRFToken": decodeURIComponent(xsrf)}});
        return say("READ " + r.status + " " + (await r.text()).slice(0, 200));
      }
    } catch (e) {
      return say("BLOCKED " + e.name + ": " + e.message);
    }
    if (Date.now() - since > 60000) return say("BLOCKED: nothing of hers after 60 s");
    setTimeout(look, 250);
  };
  look();
};
</script></body></html>"""
LURE_CONFIG = r'''
import sys, types
code = """
from tornado import web
from jupyter_server.utils import url_path_join
class Lure(web.RequestHandler):
    def get(self):
        self.set_header("Content-Type", "text/html")
        self.write(PAGE)
def _load_jupyter_server_extension(app):
    app.web_app.add_handlers(".*$", [(url_path_join(app.base_url, "lm10-lure"), Lure)])
"""
module = types.ModuleType("lm10_lure")
module.PAGE = PAGE_TEXT
exec(code, module.__dict__)
sys.modules["lm10_lure"] = module
c.ServerApp.jpserver_extensions.update({"lm10_lure": True})
'''
# "Open on the hub" (nbgitpuller): a repository of hers, served from her kernel over git's dumb
# HTTP on a loopback port: a kernel specification named python3 whose command leaves a mark in
# the home of whoever runs it, then starts the kernel as usual (nothing looks wrong).
HER_REPOSITORY = r"""
import functools, http.server, json, os, subprocess, sys, threading
from pathlib import Path
work = Path.home() / "spec"
work.mkdir(exist_ok=True)
mark = (
    "import os, sys; open(os.path.expanduser('~/mallory-was-here'), 'w').write(str(os.getuid()));"
    " os.execv(sys.executable, [sys.executable, '-m', 'ipykernel_launcher', '-f', sys.argv[1]])"
)
spec = {"argv": [sys.executable, "-c", mark, "{connection_file}"], "language": "python",
        "display_name": "Python 3 (ipykernel)"}
(work / "kernel.json").write_text(json.dumps(spec))
git = ["git", "-c", "user.name=m", "-c", "user.email=m@example.org",
       "-c", "init.defaultBranch=main"]
for argv in (["init", "-q"], ["add", "kernel.json"], ["commit", "-qm", "spec"]):
    subprocess.run([*git, *argv], cwd=work, check=True)
bare = Path.home() / "served" / "k.git"
subprocess.run([*git, "clone", "-q", "--bare", str(work), str(bare)], check=True)
subprocess.run(["git", "update-server-info"], cwd=bare, check=True)
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
handler = functools.partial(Quiet, directory=str(bare.parent))
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(json.dumps(f"http://127.0.0.1:{server.server_address[1]}/k.git"))
"""


# Scripts that a link of a classmate's could put on the page it opens, on the origin of whoever
# opens it (their server's, with their cookies): each reads what only that person may read and
# writes it into the page's title. In nbgitpuller's page (the link's `urlpath`) for the
# instructor: the solutions. In the address of a formgrader page of alice's server (a path
# segment: no "/"): her notebook.
READ_SOLUTIONS = (
    "<script>fetch(location.pathname.replace(/git-pull.*/, 'api/contents/solutions/LM10-L2'))"
    ".then(r => r.ok ? r.json() : Promise.reject(r.status)).then(j => {document.title = "
    "'READ ' + j.content.map(f => f.name).join(' ')}, e => {document.title = 'BLOCKED ' + e})"
    "</script>"
)
READ_HER_NOTEBOOK = (
    '";fetch(location.pathname.split("formgrader")[0] + ["api", "contents", "LM10-L2", '
    '"LM10-L2.ipynb"].join(String.fromCharCode(47))).then(r => r.json()).then(j => '
    '{document.title = "READ " + j.content.cells.length + " cells"});x="'
)


# "Open on the hub" links that name the course's repository, or a folder, otherwise than the
# hub lists them: (repository, folder) -> whether the guard may let it pull (the course's
# repository as listed, with a trailing "/" or surrounding spaces: the same address, into a
# plain folder).
def git_metadata(marker):
    """Files that make a submission's folder a git repository of the student's, whose
    configuration runs `touch marker` in the first git command run there (`git status` runs
    core.fsmonitor; `git log` to a terminal, core.pager): a `.git` folder, and a bare layout of
    `HEAD`, `config`, `objects/`, `refs/` in a subfolder."""
    config = (
        f'[core]\n\tfsmonitor = "touch {marker}; false"\n\tpager = touch {marker}; cat\n'
    ).encode()
    head = b"ref: refs/heads/main\n"
    return {
        ".git/HEAD": head,
        ".git/config": config,
        ".git/objects/info/x": b"",
        ".git/refs/heads/x": b"",
        "data/HEAD": head,
        "data/config": config,
        "data/objects/x": b"",
        "data/refs/x": b"",
    }


def link_variants(lessons):
    host = urlparse(lessons).netloc
    return {
        "the lessons, a trailing slash": (lessons + "/", "lm10b", True),
        "the lessons without .git": (lessons.removesuffix(".git"), "lm10c", False),
        "the lessons, upper case": (lessons.replace("lm10.git", "LM10.git"), "lm10d", False),
        "the lessons with a user": (lessons.replace(host, f"mallory:x@{host}"), "lm10e", False),
        "the lessons, then ..": (lessons + "/../lm10.git", "lm10f", False),
        "the lessons with a query": (lessons + "?x=1", "lm10g", False),
        # tornado strips a query argument's surrounding spaces: the same address
        "the lessons with a space": (lessons + " ", "lm10h", True),
        "the lessons as a path": (urlparse(lessons).path, "lm10i", False),
        "into .ipython through ..": (lessons, "lm10/../.ipython/y", False),
        "into .jupyter by its full path": (lessons, "HOME/.jupyter/z", False),
        "into her home itself": (lessons, ".", False),
        "into a folder and a hidden one": (lessons, "lm10j/.git/hooks", False),
    }


# File names that write to the instructor's terminal (clear the screen, set its title, forge a
# line), or read other than they are (bidi override, zero width, a new line).
HOSTILE_NAMES = [
    "\x1b[2J\x1b]0;owned\x07Collected everyone.ipynb",
    "notes\nCollected: lm10-alice.ipynb",
    "answers\u202ebnypi.txt",
    "\u200bLM10-L2.ipynb",
    "tab\there.ipynb",
]


CHROMIUM = Path("/usr/bin/chromium")  # Debian's, as tests/test_browser.py drives it


def proxy_command():
    """configurable-http-proxy as jupyterhub_config.py finds it (the repository's, or PATH's)."""
    local = ROOT / ".npm-tools" / "node_modules" / ".bin" / "configurable-http-proxy"
    return str(local) if local.exists() else shutil.which("configurable-http-proxy")


@pytest.fixture(scope="module", autouse=True)
def hub_installed():
    """CI (.ci/run sets LM10_REQUIRE_HUB=1, runs as root) must have it all; elsewhere, skip."""
    needs = (
        ("root (the test makes system users)", os.geteuid() == 0),
        ("configurable-http-proxy (make hub-proxy)", proxy_command()),
        ("jupyterhub (make setup)", (BIN / "jupyterhub").exists()),
        ("ngshare (make setup)", importlib.util.find_spec("ngshare")),
        ("ngshare_exchange (make hub-exchange)", importlib.util.find_spec("ngshare_exchange")),
        ("bubblewrap (apt-get install bubblewrap)", shutil.which("bwrap")),
        ("useradd (Debian's passwd)", shutil.which("useradd")),
        ("setfacl (apt-get install acl)", shutil.which("setfacl") or not closed_folders()),
        ("chromium (apt-get install chromium)", CHROMIUM.exists()),
        ("playwright (make setup)", importlib.util.find_spec("playwright")),
    )
    missing = [what for what, found in needs if not found]
    if missing:
        message = "not available: " + ", ".join(missing)
        if os.environ.get("LM10_REQUIRE_HUB") == "1":
            pytest.fail(message)
        pytest.skip(message)


# --- system accounts ---


def owner_of(path):
    """The uid that owns `path` (not following a link), or None if it is gone."""
    try:
        return path.lstat().st_uid
    except FileNotFoundError:
        return None


def pids_of(uid):
    """The ids of the processes running as `uid`, seen from the host (any process may end
    while /proc is read)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def processes_of(uid):
    """The command lines of the processes running as `uid`, seen from the host."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            pass
    return found


def listening_ports(uid):
    """The TCP ports `uid` listens on, from the host's /proc/net/tcp and tcp6."""
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and int(fields[7]) == uid:
                ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def port_owners(port):
    """The uids listening on TCP `port`, from the host's /proc/net/tcp and tcp6."""
    return sorted(
        {
            int(fields[7])
            for table in ("/proc/net/tcp", "/proc/net/tcp6")
            for fields in (row.split() for row in Path(table).read_text().splitlines()[1:])
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port
        }
    )


def socket_holders(uids):
    """{TCP port: the uids of every process holding a socket that listens there}, for the
    listening sockets that a process of one of `uids` holds (read from the host's /proc: the
    socket's inode in /proc/net/tcp, every process's descriptors that name it)."""
    ports = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A":
                ports[f"socket:[{fields[9]}]"] = int(fields[1].rsplit(":", 1)[1], 16)
    holders = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            uid = entry.stat().st_uid
            for fd in (entry / "fd").iterdir():
                port = ports.get(os.readlink(fd))
                if port is not None:
                    holders.setdefault(port, set()).add(uid)
        except OSError:  # it ended while /proc was read
            pass
    return {port: sorted(who) for port, who in holders.items() if set(who) & set(uids)}


def descriptors(pid):
    """(open file descriptors, their soft limit) of process `pid`, seen from the host."""
    limits = Path(f"/proc/{pid}/limits").read_text()
    soft = re.search(r"Max open files\s+(\d+)", limits)[1]
    return len(os.listdir(f"/proc/{pid}/fd")), int(soft)


def kill_processes_of(uid):
    """Kill, by process id, every process still running as `uid` (the test's own users)."""
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                os.kill(int(entry.name), signal.SIGKILL)
        except OSError:
            pass


def as_uid_in_the_machines_keyrings(name, call):
    """`call(libc)` in a child process of this one as the user `name` (outside any sandbox, in
    the machine's first user namespace, whose user keyrings live until a reboot); its result,
    an int."""
    user = account(name)
    libc = ctypes.CDLL(None, use_errno=True)
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:
        result = -1
        try:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            result = call(libc)
        finally:
            os.write(writing, str(result).encode())
            os._exit(0)
    os.close(writing)
    os.waitpid(pid, 0)
    with os.fdopen(reading) as answer:
        return int(answer.read() or "-1")


def plant_key(name, payload):
    """A key of `name`'s uid, "user" type, in her user keyring (possessor: everything; her
    uid: view only, as `keyctl padd` makes it): its serial."""
    data = payload.encode()
    return as_uid_in_the_machines_keyrings(
        name,
        lambda libc: libc.syscall(
            ctypes.c_long(SYS_ADD_KEY),
            b"user",
            KEY_DESCRIPTION.encode(),
            data,
            ctypes.c_size_t(len(data)),
            ctypes.c_long(KEY_SPEC_USER_KEYRING),
        ),
    )


def clear_keys(name):
    """Empty `name`'s user keyrings of the machine's first namespace: they outlive `userdel`,
    and the next account given the uid (the next run's) would have them."""
    for keyring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING):
        as_uid_in_the_machines_keyrings(
            name,
            lambda libc, keyring=keyring: libc.syscall(
                ctypes.c_long(SYS_KEYCTL), ctypes.c_long(KEYCTL_CLEAR), ctypes.c_long(keyring)
            ),
        )


def remove_accounts():
    """Remove the test's users and groups (also an interrupted run's); refuse to touch an
    account of the same name that the test did not make."""
    for name in (*PEOPLE, GONE, NGSHARE_USER):
        found = account(name)
        if found is None:
            continue
        if found.pw_gecos != MARK:
            pytest.fail(f"a user {name!r} exists that this test did not make: not touching it")
        kill_processes_of(found.pw_uid)
        time.sleep(0.2)
        if SYS_KEYCTL is not None:
            clear_keys(name)
        run("userdel", name)
    for group in (STUDENTS_GROUP, INSTRUCTORS_GROUP):
        if subprocess.run(["getent", "group", group], capture_output=True).returncode == 0:
            members = run("getent", "group", group).stdout.strip().split(":")[3]
            if set(filter(None, members.split(","))) - {*PEOPLE, GONE}:
                pytest.fail(f"group {group!r} has members this test did not make: not touching it")
            run("groupdel", group)


def make_accounts(homes):
    """The course's groups, the exchange's user, and each person with a password of their own
    and a home (mode 0755, readable by all, as Debian's default made them) under `homes`.
    Returns the passwords."""
    for group in (STUDENTS_GROUP, INSTRUCTORS_GROUP):
        run("groupadd", group)
    run(
        *("useradd", "--system", "--user-group", "--comment", MARK, "--home-dir", "/nonexistent"),
        *("--no-create-home", "--shell", "/usr/sbin/nologin", NGSHARE_USER),
    )
    passwords = {}
    for name in PEOPLE:
        group = INSTRUCTORS_GROUP if name == INSTRUCTOR else STUDENTS_GROUP
        home = homes / name
        run(
            *("useradd", "--user-group", "--groups", group, "--comment", MARK),
            *("--home-dir", str(home), "--no-create-home", "--shell", "/bin/bash", name),
        )
        passwords[name] = secrets.token_urlsafe(12)
        run("chpasswd", input=f"{name}:{passwords[name]}\n")
        home.mkdir()
        os.chmod(home, 0o755)  # as Debian's useradd made homes: the hub must close them
        os.chown(home, account(name).pw_uid, account(name).pw_gid)
    return passwords


def give(path, name):
    """`path` and everything under it to the user `name`."""
    user = account(name)
    for folder, dirs, files in os.walk(path):
        for item in [folder, *(os.path.join(folder, f) for f in (*dirs, *files))]:
            os.lchown(item, user.pw_uid, user.pw_gid)


def as_user(name, argv, env, cwd, timeout=600):
    """`argv` as the system user `name` (their groups only), with `env`, in `cwd`."""
    user = account(name)
    return subprocess.run(
        [str(a) for a in argv],
        user=user.pw_uid,
        group=user.pw_gid,
        extra_groups=os.getgrouplist(name, user.pw_gid),
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def probe(name, env, operations):
    """Each (label, operation, path, ...) of PROBE tried as `name`: label -> outcome."""
    done = as_user(name, [sys.executable, "-c", PROBE, json.dumps(operations)], env, "/")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# The test's system users and groups are the machine's, one set for every run: a second run at
# the same time (another pytest, or a second xdist worker given some of this module's tests, as
# `make test` once ran it on two) removed the first one's accounts and killed their servers
# (exit code -9: "mallory's server gone", then a 500 for want of her account). Each run holds
# this lock from before it touches the accounts until after it removed them; a second waits.
LOCK = Path("/run/lm10-test-jupyterhub.lock")
LOCK_WAIT_SECONDS = 1800


@contextlib.contextmanager
def machine_lock():
    """Hold LOCK (waiting up to LOCK_WAIT_SECONDS for another run of this test to finish)."""
    with open(LOCK, "a+") as held:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    held.seek(0)
                    pytest.fail(
                        f"another run of this test (pid {held.read().strip() or '?'}) has held "
                        f"{LOCK} for {LOCK_WAIT_SECONDS} s: its system users are in use"
                    )
                time.sleep(1)
        held.truncate(0)
        held.write(str(os.getpid()))
        held.flush()
        try:
            yield
        finally:
            held.truncate(0)
            fcntl.flock(held, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def machine(hub_installed):
    with machine_lock():
        yield from _machine()


def _machine():
    base = Path(tempfile.mkdtemp(prefix="lm10-hub-"))  # pytest's tmp_path is root's alone
    os.chmod(base, 0o711)
    homes = base / "home"
    homes.mkdir(mode=0o711)
    closed, bare = closed_folders(), []
    try:
        close_again(closed, [], (*PEOPLE, NGSHARE_USER))  # an interrupted run's
        remove_accounts()
        passwords = make_accounts(homes)
        if closed:
            bare = let_through(closed, (*PEOPLE, NGSHARE_USER))
        tried = as_user(
            NGSHARE_USER, [sys.executable, "-c", "import grading.hub, nbgrader"], {}, "/"
        )
        assert tried.returncode == 0, (
            f"the course's environment ({sys.prefix}) and source must be readable by every "
            f"user (the hub runs each server as its user): {tried.stderr[-1500:]}"
        )
        course = homes / INSTRUCTOR / COURSE_ID
        course_copy(course, [LAB])
        give(course, INSTRUCTOR)  # as a clone is, readable by all: her home is what closes it
        yield SimpleNamespace(base=base, homes=homes, course=course, passwords=passwords)
    finally:
        close_again(closed, bare, (*PEOPLE, NGSHARE_USER))
        remove_accounts()
        shutil.rmtree(base, ignore_errors=True)


# --- the hub ---


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def serve_lessons(folder):
    """The course's lessons as a git repository (one notebook), served over git's dumb HTTP
    on a loopback port; .url names it."""
    work, bare = folder / "work", folder / "lm10.git"
    work.mkdir(parents=True)
    (work / "T1.md").write_text("# a lesson\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    for argv in (["init", "-q", "-b", "main"], ["add", "T1.md"], ["commit", "-qm", "lesson"]):
        subprocess.run([*git, *argv], cwd=work, check=True)
    subprocess.run([*git, "clone", "-q", "--bare", str(work), str(bare)], check=True)
    subprocess.run(["git", "update-server-info"], cwd=bare, check=True)
    for item in [folder, *folder.rglob("*")]:
        os.chmod(item, 0o755 if item.is_dir() else 0o644)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}/lm10.git"
    return server


def pull(hub, user, repo, target):
    """An "Open on the hub" link opened by `user` (nbgitpuller's pull, as its page starts it):
    the last event it sent."""
    path = f"/user/{user}/git-pull/api"
    params = {"repo": repo, "targetpath": target, "branch": "main", "depth": "0"}
    text = hub.call("GET", path, ok=False, params=params).text
    events = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    return events[-1][:300] if events else text[:300]


def wait_for(what, check, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except requests.RequestException:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{what}: not ready after {seconds} s")


class Hub:
    def __init__(self, url, socket_path, process, log):
        self.url, self.socket, self.process, self.log = url, socket_path, process, log
        self.subdomains = "subdomain_host" in config_settings()
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"token {TOKEN}"
        self.exchange = requests.Session()  # the exchange's socket, as servers reach it
        self.exchange.trust_env = False
        self.exchange.mount("http://", SocketAdapter(str(socket_path)))

    def url_of(self, path):
        """The address of `path` on the hub: a user's server on its own subdomain where the hub
        gives each server one (JupyterHub.subdomain_host)."""
        found = re.match(r"/user/([^/]+)/", path)
        if found and self.subdomains:
            return self.url.replace("//", f"//{found[1]}.", 1) + path
        return self.url + path

    def call(self, method, path, ok=True, **kwargs):
        kwargs.setdefault("timeout", 900)
        response = self.session.request(method, self.url_of(path), **kwargs)
        if ok:
            assert response.status_code < 400, (
                method,
                path,
                response.status_code,
                response.text[:2000],
                self.tail(),
            )
        return response

    def tail(self):
        return self.tail_all()[-6000:]

    def tail_all(self):
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")

    def start_servers(self, users):
        """Start every user's server at once, then wait until each is ready."""
        for user in users:
            self.call("POST", f"/hub/api/users/{user}/server")
        for user in users:
            wait_for(
                f"{user}'s server",
                lambda user=user: self.model(user)["servers"].get("", {}).get("ready"),
                300,
            )

    def model(self, user):
        return self.call("GET", f"/hub/api/users/{user}").json()

    def environment(self, user):
        """The environment of `user`'s server, which a terminal there inherits."""
        pid = self.model(user)["servers"][""]["state"]["pid"]
        raw = Path(f"/proc/{pid}/environ").read_bytes().decode()
        return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)

    def nbgrader(self, user, path, expect=True, **body):
        """POST to an nbgrader endpoint of `user`'s server; nbgrader's answer, whose `success`
        must be `expect` where it has one (None: the caller checks; an attack's outcome is
        recorded, and judged by the test that names it)."""
        answer = self.call("POST", f"/user/{user}/{path}", data=json.dumps(body)).json()
        if expect is not None and isinstance(answer, dict) and "success" in answer:
            assert answer["success"] == expect, (path, answer.get("error"), self.tail())
        return answer

    def write_notebook(self, user, nb):
        path = f"/user/{user}/api/contents/{LAB}/{LAB}.ipynb"
        body = {"type": "notebook", "format": "json", "content": nb}
        self.call("PUT", path, data=json.dumps(body))

    def read_notebook(self, user):
        path = f"/user/{user}/api/contents/{LAB}/{LAB}.ipynb"
        return nbformat.from_dict(self.call("GET", path).json()["content"])

    def ngshare(self, token, method, path, **kwargs):
        """A request to the exchange, as the holder of `token` (None: no token)."""
        headers = {"Authorization": f"token {token}"} if token else {}
        url = f"http://lm10-exchange/services/{SERVICE}{path}"
        kwargs.setdefault("timeout", 300)
        return self.exchange.request(method, url, headers=headers, **kwargs)

    def stop_server(self, user):
        self.call("DELETE", f"/hub/api/users/{user}/server")
        wait_for(f"{user}'s server to stop", lambda: not self.model(user)["servers"], 120)

    def start_kernel(self, user):
        return self.call("POST", f"/user/{user}/api/kernels", json={"name": "python3"}).json()["id"]

    def execute(self, user, kernel, code, timeout=120, streams=False):
        """Run `code` in `user`'s kernel through their server's kernel websocket, as a notebook
        does; what it printed (stdout; with `streams`, {"stdout", "stderr"}), or AssertionError
        with its traceback."""
        return asyncio.run(self._execute(user, kernel, code, timeout, streams))

    def kernel_message(self, user, kernel, channel, msg_type, content, timeout=60):
        """Send one message of `msg_type` on `channel` of `user`'s kernel, as JupyterLab does
        through the websocket; the kernel's reply (the message)."""
        return asyncio.run(self._kernel_message(user, kernel, channel, msg_type, content, timeout))

    async def _connect_kernel(self, user, kernel):
        url = self.url_of(f"/user/{user}/api/kernels/{kernel}/channels").replace("http", "ws", 1)
        request = HTTPRequest(url, headers={"Authorization": f"token {TOKEN}"})
        return await asyncio.wait_for(websocket_connect(request), 60)

    @staticmethod
    def _message(channel, msg_type, content):
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": msg_type,
            "username": "test",
            "session": uuid.uuid4().hex,
            "version": "5.3",
            "date": datetime.now(UTC).isoformat(),
        }
        message = {"header": header, "parent_header": {}, "metadata": {}, "content": content}
        return msg_id, json.dumps({**message, "channel": channel, "buffers": []})

    async def _kernel_message(self, user, kernel, channel, msg_type, content, timeout):
        socket_ = await self._connect_kernel(user, kernel)
        msg_id, message = self._message(channel, msg_type, content)
        socket_.write_message(message)
        reply_type = msg_type.replace("_request", "_reply")
        deadline = time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                assert left > 0, f"{user}'s kernel: no {reply_type} after {timeout} s"
                raw = await asyncio.wait_for(socket_.read_message(), left)
                assert raw is not None, f"{user}'s kernel websocket closed"
                reply = json.loads(raw)
                if (
                    reply.get("parent_header", {}).get("msg_id") == msg_id
                    and reply["msg_type"] == reply_type
                ):
                    return reply
        finally:
            socket_.close()

    async def _execute(self, user, kernel, code, timeout, streams=False):
        socket_ = await self._connect_kernel(user, kernel)
        msg_id, message = self._message(
            "shell",
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": False,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
        )
        out, errors, error, replied, idle = [], [], None, False, False
        socket_.write_message(message)
        deadline = time.monotonic() + timeout
        try:
            while not (replied and idle):
                left = deadline - time.monotonic()
                assert left > 0, f"{user}'s kernel: no answer after {timeout} s: {''.join(out)}"
                raw = await asyncio.wait_for(socket_.read_message(), left)
                assert raw is not None, f"{user}'s kernel websocket closed"
                message = json.loads(raw)
                if message.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = message["msg_type"], message["content"]
                if kind == "stream" and content["name"] == "stdout":
                    out.append(content["text"])
                elif kind == "stream":
                    errors.append(content["text"])
                elif kind == "error":
                    error = "\n".join(content["traceback"])
                elif kind == "execute_reply":
                    replied = True
                elif kind == "status" and content["execution_state"] == "idle":
                    idle = True
        finally:
            socket_.close()
        assert error is None, f"{user}'s kernel: {error}"
        if streams:
            return {"stdout": "".join(out), "stderr": "".join(errors)}
        return "".join(out)


def exchange_module():
    os.environ.setdefault("USER", "root")  # ngshare_exchange reads it when imported
    from grading.hub import exchange  # needs ngshare_exchange (checked by hub_installed)

    return exchange


@contextlib.contextmanager
def logged_in(hub, user, password):
    """A Chromium page on which `user` has logged in to the hub (every server's host resolved
    to loopback), closed afterwards."""
    from playwright.sync_api import sync_playwright

    rules = f"MAP *.{DOMAIN} 127.0.0.1, MAP {DOMAIN} 127.0.0.1"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", f"--host-resolver-rules={rules}"],
        )
        try:
            page = browser.new_page()
            page.goto(f"{hub.url}/hub/login", timeout=120_000)
            page.fill("#username_input", user)
            page.fill("#password_input", password)
            page.click("#login_submit")
            page.wait_for_url(re.compile(r".*/user/.*"), timeout=120_000)
            yield page
        finally:
            browser.close()


def open_as_instructor(hub, password, url):
    """The instructor logs in to the hub in Chromium, opens her own server, then `url`; the
    title the page ends with (its script writes what it could reach there)."""
    with logged_in(hub, INSTRUCTOR, password) as page:
        page.goto(hub.url_of(f"/user/{INSTRUCTOR}/lab"), timeout=120_000)
        page.goto(url, timeout=120_000)
        page.click("#go")
        page.wait_for_function(
            "document.title.startsWith('READ') || document.title.startsWith('BLOCKED')",
            timeout=120_000,
        )
        return page.title()


def open_link(hub, user, password, url):
    """`user` logs in to the hub in Chromium and opens `url` (a link a classmate sent); the
    title the page has after up to 20 s (a script of the link's writes "READ ..." there)."""
    from playwright.sync_api import TimeoutError as PageTimeout

    with logged_in(hub, user, password) as page:
        opened = page.goto(url, timeout=120_000)
        with contextlib.suppress(PageTimeout):
            page.wait_for_function("document.title.startsWith('READ')", timeout=20_000)
        return f"{opened.status if opened else None} {page.title()}"


def login(url, user, password):
    """Log in through the hub's form, as a browser does; the hub's answer."""
    with requests.Session() as browser:
        browser.get(f"{url}/hub/login", timeout=60)
        return browser.post(
            f"{url}/hub/login",
            timeout=60,
            allow_redirects=False,
            data={"username": user, "password": password, "_xsrf": browser.cookies.get("_xsrf")},
        )


@pytest.fixture(scope="module")
def loopback_names():
    """DOMAIN and every name under it resolve to 127.0.0.1 in this process (requests, tornado),
    as wildcard DNS would make them resolve to the hub's machine."""
    real = socket.getaddrinfo

    def resolve(host, *args, **kwargs):
        if isinstance(host, str) and (host == DOMAIN or host.endswith("." + DOMAIN)):
            host = "127.0.0.1"
        return real(host, *args, **kwargs)

    socket.getaddrinfo = resolve
    try:
        yield
    finally:
        socket.getaddrinfo = real


@pytest.fixture(scope="module")
def hub(machine, loopback_names, tmp_path_factory):
    state = machine.base / "state"
    port, hub_port, proxy_port = free_ports(3)
    assert HUB_CONFIG.is_file()  # load_subconfig passes over a missing file silently
    driver = machine.base / "driver_config.py"
    driver.write_text(
        DRIVER_CONFIG.format(
            config=str(HUB_CONFIG),
            port=port,
            hub_port=hub_port,
            proxy_port=proxy_port,
            token=TOKEN,
            pin=str(machine.base / "pin"),
        )
    )
    os.chmod(driver, 0o600)
    env = dict(
        os.environ,
        PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
        LM10_HUB_STATE=str(state),
        **EXCHANGE_LIMITS,
        LM10_HUB_URL=f"http://{DOMAIN}:{port}",
        LM10_SANDBOX_TMPFS_MIB=str(TMPFS_MIB),
        LM10_STUDENT_MAX_TASKS=str(MAX_TASKS),
        LM10_SERVER_PTYS=str(SERVER_PTYS),
    )
    lessons = serve_lessons(machine.base / "lessons")
    env["LM10_LESSONS_REPOS"] = lessons.url
    log = open(tmp_path_factory.mktemp("hub") / "hub.log", "w+")  # noqa: SIM115 (while it runs)
    process = subprocess.Popen(
        [str(BIN / "jupyterhub"), "-f", str(driver)],
        cwd=machine.base,
        env=env,
        stdin=subprocess.PIPE,  # the administrator's terminal, where she types
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    hub = Hub(f"http://{DOMAIN}:{port}", state / "exchange" / "ngshare.sock", process, log)
    hub.ports = (port, hub_port, proxy_port)  # the proxy's, the hub's, the proxy's API
    hub.pin = machine.base / "pin"
    hub.lessons = lessons.url
    hub.proxy_port = proxy_port
    try:
        wait_for("the hub", lambda: requests.get(f"{hub.url}/hub/api", timeout=5).ok, 180)
        wait_for("ngshare", lambda: hub.ngshare(None, "GET", "/healthz", timeout=5).ok, 120)
        yield hub
    finally:
        process.send_signal(signal.SIGTERM)  # the hub stops the servers and services it started
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()
        lessons.shutdown()
        lessons.server_close()


# --- the class ---


def files_body(files, **extra):
    """ngshare's form body for a submission or release: path -> bytes."""
    listed = [
        {"path": path, "content": base64.b64encode(content).decode()}
        for path, content in files.items()
    ]
    return {"files": json.dumps(listed), **extra}


def submissions_of(hub, token, student):
    answer = hub.ngshare(token, "GET", f"/submissions/{COURSE_ID}/{LAB}/{student}").json()
    assert answer["success"], answer
    return [s["timestamp"] for s in answer["submissions"]]


def release_checksums(hub, token):
    answer = hub.ngshare(token, "GET", f"/assignment/{COURSE_ID}/{LAB}?list_only=true").json()
    assert answer["success"], (answer, hub.tail())
    return sorted((f["path"], f["checksum"]) for f in answer["files"])


def answer_text(answer):
    return json.dumps(answer)


@pytest.fixture(scope="module")
def played(hub, machine):
    out = {}
    course, homes = machine.course, machine.homes
    home = {name: homes / name for name in PEOPLE}
    grading = course / "grading"

    # Logins: each person with their own password through the hub's form.
    out["logins"] = {u: login(hub.url, u, machine.passwords[u]) for u in PEOPLE}
    out["wrong password"] = login(hub.url, "lm10-alice", "not-the-password")
    out["mallory's password, alice's name"] = login(
        hub.url, "lm10-alice", machine.passwords[ATTACKER]
    )

    out["hub log at start"] = Path(hub.log.name).read_text()[:20000]
    hub.start_servers(PEOPLE)
    env = {user: hub.environment(user) for user in PEOPLE}
    token = {user: env[user]["LM10_EXCHANGE_TOKEN"] for user in PEOPLE}  # the exchange's
    server_token = {user: env[user]["JUPYTERHUB_API_TOKEN"] for user in PEOPLE}
    out["idle threads"] = {user: env[user].get("OMP_WAIT_POLICY") for user in PEOPLE}
    pids = {user: hub.model(user)["servers"][""]["state"]["pid"] for user in PEOPLE}
    # Each server's listening socket, the hub's, handed over: held by the hub (root) and by the
    # processes of the server's own user, no one else's (not a classmate's server started after
    # it, which a descriptor the hub held for another server would reach).
    uid = {user: account(user).pw_uid for user in PEOPLE}
    out["listening sockets' holders"] = {
        port: [next((u for u in PEOPLE if uid[u] == h), h) for h in holders]
        for port, holders in socket_holders(set(uid.values())).items()
    }
    out["homes"] = {u: oct(home[u].stat().st_mode & 0o777) for u in PEOPLE}

    # "Open on the hub" links (nbgitpuller): alice opens the course's lessons; then a link of
    # mallory's (a message, a page of hers that opens it in a frame) pulls her repository into
    # alice's kernel specifications; the lessons' into a hidden folder; the instructor opens
    # the lessons' link. Then alice starts a kernel, as she would to open any notebook.
    kernel = hub.start_kernel(ATTACKER)
    hers = json.loads(hub.execute(ATTACKER, kernel, HER_REPOSITORY))
    specs = home["lm10-alice"] / ".local" / "share" / "jupyter" / "kernels" / "python3"
    target = str(specs.relative_to(home["lm10-alice"]))
    out["links"] = {
        "alice opens the lessons": pull(hub, "lm10-alice", hub.lessons, "lm10"),
        "mallory's kernel spec for alice": pull(hub, "lm10-alice", hers, target),
        "the lessons into a hidden folder": pull(hub, "lm10-alice", hub.lessons, ".ipython/x"),
        "the instructor opens the lessons": pull(hub, INSTRUCTOR, hub.lessons, "lessons"),
    }
    out["lessons in alice's home"] = (home["lm10-alice"] / "lm10" / "T1.md").is_file()
    out["mallory's spec in alice's home"] = (specs / "kernel.json").exists()
    out["a hidden folder pulled"] = (home["lm10-alice"] / ".ipython" / "x").exists()
    out["lessons in the instructor's course"] = (course / "lessons" / "T1.md").exists()
    alices = hub.start_kernel("lm10-alice")
    hub.execute("lm10-alice", alices, "print(1)")
    out["mallory's mark in alice's home"] = (home["lm10-alice"] / "mallory-was-here").exists()
    hub.call("DELETE", f"/user/lm10-alice/api/kernels/{alices}")

    # The instructor enrols the class in the exchange and the gradebook, in her shell.
    roster = home[INSTRUCTOR] / "roster.csv"
    roster.write_text(
        "student_id,first_name,last_name,email\n"
        + "".join(f"{s},{s[5:].title()},Test,{s}@example.org\n" for s in STUDENTS)
    )
    give(roster, INSTRUCTOR)
    enrolled = as_user(
        INSTRUCTOR,
        [sys.executable, "-m", "grading.hub.exchange", "add_students", COURSE_ID, roster],
        env[INSTRUCTOR],
        home[INSTRUCTOR],
    )
    assert enrolled.returncode == 0 and "error" not in enrolled.stdout.lower(), (
        enrolled.stdout + enrolled.stderr
    )

    # Release; everyone fetches.
    hub.nbgrader(INSTRUCTOR, f"formgrader/api/assignment/{LAB}/assign")
    hub.nbgrader(INSTRUCTOR, f"formgrader/api/assignment/{LAB}/release")
    release = release_checksums(hub, token[INSTRUCTOR])
    for student in STUDENTS:
        listed = hub.nbgrader(student, "assignments/fetch", **COURSE)
        assert any(
            a["assignment_id"] == LAB and a["status"] == "fetched" for a in listed["value"]
        ), listed
    blank = hub.read_notebook(ATTACKER)

    # mallory hands in the blank release first, then alice her answers; bob, the next
    # classmate, hands in his after mallory's attempts on the exchange (3 below).
    def hand_in(student):
        hub.write_notebook(student, HONEST[student](hub.read_notebook(student)))
        hub.nbgrader(student, "assignments/submit", **COURSE)
        return (home[student] / LAB / f"{LAB}.ipynb").read_bytes()

    hub.nbgrader(ATTACKER, "assignments/submit", **COURSE)
    handed_in = {"lm10-alice": hand_in("lm10-alice")}
    mine = token[ATTACKER]

    # 1. Submitting as a classmate: ngshare with her token, naming alice; her own server,
    # configured with alice's id; no token, a made-up one, the hub's service token, and a token
    # of hers without the exchange's scope (one she could have given another service).
    marked = nbformat.writes(blank).replace("Compare", "Compare (MALLORY)", 1).encode()
    named = hub.ngshare(
        mine,
        "POST",
        f"/submission/{COURSE_ID}/{LAB}",
        data=files_body({f"{LAB}.ipynb": marked}, user="lm10-alice"),
    )
    out["submit naming alice"] = (named.status_code, named.json())
    jupyter = home[ATTACKER] / ".jupyter"
    as_user(ATTACKER, ["mkdir", "-p", jupyter], env[ATTACKER], home[ATTACKER])
    as_user(
        ATTACKER,
        [
            sys.executable,
            "-c",
            f"open({str(jupyter / 'nbgrader_config.py')!r}, 'w').write("
            "'c.CourseDirectory.student_id = \"lm10-alice\"\\n')",
        ],
        env[ATTACKER],
        home[ATTACKER],
    )
    out["submit as alice from her server"] = hub.nbgrader(
        ATTACKER, "assignments/submit", expect=None, **COURSE
    )
    as_user(ATTACKER, ["rm", jupyter / "nbgrader_config.py"], env[ATTACKER], home[ATTACKER])
    narrow = hub.call(
        "POST",
        f"/hub/api/users/{ATTACKER}/tokens",
        data=json.dumps({"scopes": [f"read:users:name!user={ATTACKER}"], "note": "elsewhere"}),
    ).json()["token"]
    forged = {"no token": None, "made-up token": "0" * 32, "the hub's service token": TOKEN}
    forged["her token without the exchange's scope"] = narrow
    forged["her server's own token"] = server_token[ATTACKER]  # it opens her server
    body = files_body({f"{LAB}.ipynb": marked})
    out["forged tokens"] = {
        what: hub.ngshare(t, "POST", f"/submission/{COURSE_ID}/{LAB}", data=body).status_code
        for what, t in forged.items()
    }

    # 2. The instructor's solutions through a symlink, submitted from her server.
    solution = course / "solutions" / LAB / f"{LAB}.ipynb"
    link = home[ATTACKER] / LAB / f"{LAB}.ipynb"
    out["solution exists"] = solution.is_file()
    out["link"] = probe(
        ATTACKER,
        env[ATTACKER],
        [
            ["read the solution", "read", str(solution)],
            ["remove her notebook", "remove", str(link)],
            ["link it to the solution", "symlink", str(link), str(solution)],
        ],
    )
    before = submissions_of(hub, mine, ATTACKER)
    out["submit through the link"] = hub.nbgrader(
        ATTACKER, "assignments/submit", expect=None, **COURSE
    )
    out["stored through the link"] = len(submissions_of(hub, mine, ATTACKER)) - len(before)
    as_user(ATTACKER, ["rm", link], env[ATTACKER], home[ATTACKER])
    hub.write_notebook(ATTACKER, blank)

    # 3. Taking over the exchange: its course, release, roster, other students' work, its
    # files and the hub's, the instructor's course.
    takeover = {
        "create the course": ("POST", f"/course/{COURSE_ID}", {"instructors": f'["{ATTACKER}"]'}),
        "delete the course": ("DELETE", f"/course/{COURSE_ID}", None),
        "become an instructor": (
            "POST",
            f"/instructor/{COURSE_ID}/{ATTACKER}",
            {"first_name": "M", "last_name": "M", "email": "m@example.org"},
        ),
        "plant a release": (
            "POST",
            f"/assignment/{COURSE_ID}/{LAB}",
            files_body({f"{LAB}.ipynb": marked}),
        ),
        "plant a new lab": (
            "POST",
            f"/assignment/{COURSE_ID}/LM10-L9",
            files_body({"LM10-L9.ipynb": marked}),
        ),
        "delete the release": ("DELETE", f"/assignment/{COURSE_ID}/{LAB}", None),
        "enrol someone": (
            "POST",
            f"/student/{COURSE_ID}/lm10-eve",
            {"first_name": "E", "last_name": "E", "email": "e@example.org"},
        ),
        "remove alice": ("DELETE", f"/student/{COURSE_ID}/lm10-alice", None),
        "read the roster": ("GET", f"/students/{COURSE_ID}", None),
        "list every submission": ("GET", f"/submissions/{COURSE_ID}/{LAB}", None),
        "list alice's submissions": ("GET", f"/submissions/{COURSE_ID}/{LAB}/lm10-alice", None),
        "download alice's submission": ("GET", f"/submission/{COURSE_ID}/{LAB}/lm10-alice", None),
        "write alice's feedback": (
            "POST",
            f"/feedback/{COURSE_ID}/{LAB}/lm10-alice",
            files_body({f"{LAB}.html": b"<p>0</p>"}, timestamp="2000-01-01 00:00:00.000000"),
        ),
        "create a course of her own": ("POST", "/course/LM10-MINE", {"instructors": "[]"}),
        "clear the exchange's database": ("GET", "/initialize-Data6ase?action=clear", None),
        "dump the exchange's database": ("GET", "/initialize-Data6ase?action=dump", None),
    }
    out["takeover"] = {
        what: hub.ngshare(mine, method, path, data=data).status_code
        for what, (method, path, data) in takeover.items()
    }
    state = machine.base / "state"
    out["files"] = probe(
        ATTACKER,
        env[ATTACKER],
        [
            ["list the exchange's folder", "list", str(state / "ngshare")],
            ["read the exchange's database", "read", str(state / "ngshare" / "ngshare.db")],
            ["write into the exchange's files", "create", str(state / "ngshare" / "files" / "x")],
            ["rename the exchange's folder", "rename", str(state / "ngshare"), str(state / "x")],
            [
                "read the hub's cookie secret",
                "read",
                str(state / "hub" / "jupyterhub_cookie_secret"),
            ],
            ["read the hub's database", "read", str(state / "hub" / "jupyterhub.sqlite")],
            ["read alice's server's token", "read", f"/proc/{pids['lm10-alice']}/environ"],
            ["read the instructor's server's token", "read", f"/proc/{pids[INSTRUCTOR]}/environ"],
            ["list the instructor's home", "list", str(home[INSTRUCTOR])],
            ["read the solutions", "read", str(solution)],
            ["read the gradebook", "read", str(grading / "gradebook.db")],
            ["write a submission", "create", str(grading / "submitted" / "x")],
            ["list alice's home", "list", str(home["lm10-alice"])],
            ["read alice's notebook", "read", str(home["lm10-alice"] / LAB / f"{LAB}.ipynb")],
            ["create a file in alice's home", "create", str(home["lm10-alice"] / "x")],
            ["read her own notebook", "read", str(home[ATTACKER] / LAB / f"{LAB}.ipynb")],
        ],
    )
    out["her own submissions"] = hub.ngshare(
        mine, "GET", f"/submissions/{COURSE_ID}/{LAB}/{ATTACKER}"
    ).json()

    # bob hands in after all that; then the deadline passes.
    handed_in["lm10-bob"] = hand_in("lm10-bob")
    due = datetime.now(UTC).replace(tzinfo=None) + timedelta(seconds=1)
    hub.call(
        "PUT",
        f"/user/{INSTRUCTOR}/formgrader/api/assignment/{LAB}",
        data=json.dumps({"duedate_notimezone": due.isoformat(), "duedate_timezone": "UTC"}),
    )
    time.sleep(1.5)
    out["due"] = due

    # 4. A submission that breaks collect: a file inside her notebook, as if it were a folder.
    # ngshare_exchange's own collect stops there (the control, into a scratch folder); the
    # course's collects everyone else and names her.
    broken = hub.ngshare(
        mine,
        "POST",
        f"/submission/{COURSE_ID}/{LAB}",
        data=files_body({f"{LAB}.ipynb": nbformat.writes(blank).encode(), f"{LAB}.ipynb/x": b"x"}),
    )
    out["broken submission"] = broken.status_code
    scratch = home[INSTRUCTOR] / "unfixed-collect"
    control = as_user(
        INSTRUCTOR,
        [
            sys.executable,
            "-c",
            UNFIXED_COLLECT,
            "collect",
            LAB,
            "--ExchangeFactory.collect=__main__.UnfixedCollect",
            f"--CourseDirectory.submitted_directory={scratch}",
        ],
        env[INSTRUCTOR],
        grading,
    )
    out["unfixed collect"] = {
        "returncode": control.returncode,
        "output": control.stdout + control.stderr,
        "collected": sorted(p.parent.parent.name for p in scratch.glob(f"*/{LAB}/{LAB}.ipynb")),
    }
    out["collect with a broken submission"] = hub.nbgrader(
        INSTRUCTOR, f"formgrader/api/assignment/{LAB}/collect", expect=None
    )
    out["collected first"] = sorted(
        p.parent.parent.name for p in (grading / "submitted").glob(f"*/{LAB}/{LAB}.ipynb")
    )

    # 5. Editing after the deadline: her stored submissions are out of reach (3); all she can
    # do is hand in again, here with a timestamp.txt of her own that claims the year 2000.
    as_user(
        ATTACKER,
        [sys.executable, "-c", "open('timestamp.txt', 'w').write('2000-01-01 00:00:00.000000')"],
        env[ATTACKER],
        home[ATTACKER] / LAB,
    )
    # With it, git's metadata (a sixth tester's): her lab's folder a repository of hers, whose
    # configuration runs her command in the first git command the instructor runs there.
    ran = home[INSTRUCTOR] / "mallory-ran-this"
    for name, content in git_metadata(ran).items():
        as_user(
            ATTACKER,
            [
                sys.executable,
                "-c",
                "import os, sys; os.makedirs(os.path.dirname(sys.argv[1]) or '.', exist_ok=True);"
                " open(sys.argv[1], 'wb').write(bytes.fromhex(sys.argv[2]))",
                name,
                content.hex(),
            ],
            env[ATTACKER],
            home[ATTACKER] / LAB,
        )
    # And a notebook whose one cell leaves a mark in the home of whoever runs it (a seventh
    # tester's): the instructor, reading her collected submission, presses Validate on it.
    validated = home[INSTRUCTOR] / "mallory-validated"
    marking = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(MARK_WHOEVER_RUNS_IT.format(mark=validated.name))]
    )
    # And modules named as the ones a kernel starts from (`python -m grading.hub.kernel`, the
    # hub's kernel, and ipykernel's `python -m ipykernel_launcher`, in the notebook's folder),
    # which leave their mark and then start a kernel.
    opened = home[INSTRUCTOR] / "mallory-opened"
    launcher = traps.HER_KERNEL_LAUNCHER.format(mark=str(opened))
    launchers = {
        "ipykernel_launcher.py": launcher,
        "grading/__init__.py": "",
        "grading/hub/__init__.py": "",
        "grading/hub/kernel.py": launcher,
    }
    # And her chart, which sends what it reads to an address of hers.
    listener = traps.listening()
    her_address, heard = listener.__enter__()
    # And a module and a template that the instructor's nbconvert would obey in her folder.
    converted = {
        "her module": home[INSTRUCTOR] / "mallory-converted-module",
        "her template": home[INSTRUCTOR] / "mallory-converted-template",
    }
    for name, text in {
        VALIDATE_ME: nbformat.writes(marking),
        **launchers,
        LOOK_AT_ME: nbformat.writes(traps.her_chart(her_address, LAB)),
        "codeop.py": traps.HER_CODEOP.format(mark=str(converted["her module"])),
        "lab/index.html.j2": traps.HER_TEMPLATE.format(mark=str(converted["her template"])),
        "lab/static/style.css": "",
    }.items():
        written = as_user(
            ATTACKER,
            [
                sys.executable,
                "-c",
                "import os, sys; os.makedirs(os.path.dirname(sys.argv[1]) or '.', exist_ok=True);"
                " open(sys.argv[1], 'w').write(sys.argv[2])",
            ]
            + [name, text],
            env[ATTACKER],
            home[ATTACKER] / LAB,
        )
        assert written.returncode == 0, written.stderr
    # And the eleventh tester's probe, her first answer: what her code reaches when the
    # instructor autogrades her (as the instructor's user, in the grading sandbox).
    probed = copy.deepcopy(blank)
    first = next(c for c in probed.cells if c.metadata.get("nbgrader", {}).get("solution"))
    first.source = (
        GRADED_PROBE.format(
            hub_port=urlparse(hub.url).port,
            socket=str(hub.socket),
            home=str(home[INSTRUCTOR]),
            mark=GRADED_MARK,
            runtime="/tmp/jupyter-runtime",  # jupyterhub_config.RUNTIME
            left=LEFT_BEHIND,
        )
        + keys_probe()
    )
    hub.write_notebook(ATTACKER, probed)
    hub.nbgrader(ATTACKER, "assignments/submit", **COURSE)
    out["collect again"] = hub.nbgrader(INSTRUCTOR, f"formgrader/api/assignment/{LAB}/collect")
    # The instructor opens her collected notebook in JupyterLab (a session: a kernel started in
    # the notebook's folder), and her kernel says where it imports from.
    hers_collected = grading / "submitted" / ATTACKER / LAB
    session = hub.call(
        "POST",
        f"/user/{INSTRUCTOR}/api/sessions",
        json={
            "path": str((hers_collected / f"{LAB}.ipynb").relative_to(course)),
            "name": f"{LAB}.ipynb",
            "type": "notebook",
            "kernel": {"name": "python3"},
        },
    ).json()
    out["opened"] = {
        "collected": all((hers_collected / name).is_file() for name in launchers),
        "the kernel's path": json.loads(
            hub.execute(INSTRUCTOR, session["kernel"]["id"], traps.WHERE_A_KERNEL_IMPORTS_FROM)
        ),
        "her mark in the instructor's home": opened.exists(),
    }
    hub.call("DELETE", f"/user/{INSTRUCTOR}/api/sessions/{session['id']}")
    # The instructor looks at her chart's notebook in JupyterLab.
    try:
        out["her chart"] = open_notebook_as_instructor(
            hub,
            machine.passwords[INSTRUCTOR],
            str((hers_collected / LOOK_AT_ME).relative_to(course)),
            heard,
        )
    finally:
        listener.__exit__(None, None, None)
    # The instructor reads her notebook as HTML, with nbconvert in her terminal, there (the
    # lab template, then the classic one, which her module's name reaches), and from her
    # JupyterLab (Export as HTML: the server's nbconvert); then the same two commands without
    # the instructor's configuration (the control: what PYTHONSAFEPATH alone left open).
    jupyter = Path(sys.executable).parent / "jupyter"
    commands = {
        "--to html": [jupyter, "nbconvert", "--to", "html", f"{LAB}.ipynb", "--stdout"],
        "--to html --template classic": [
            *(jupyter, "nbconvert", "--to", "html", "--template", "classic"),
            *(f"{LAB}.ipynb", "--stdout"),
        ],
    }

    def convert_there(environment):
        for mark in converted.values():
            mark.unlink(missing_ok=True)
        done = {
            what: as_user(INSTRUCTOR, argv, environment, hers_collected).returncode
            for what, argv in commands.items()
        }
        return {"exit": done, **{what: mark.exists() for what, mark in converted.items()}}

    out["converted"] = {
        "collected": [
            (hers_collected / name).is_file() for name in ("codeop.py", "lab/index.html.j2")
        ],
        "in her terminal": convert_there(env[INSTRUCTOR]),
    }
    exported = hub.call(
        "GET",
        f"/user/{INSTRUCTOR}/nbconvert/html/"
        + str((hers_collected / f"{LAB}.ipynb").relative_to(course)),
        ok=False,
    )
    out["converted"]["exported from her JupyterLab"] = {
        "status": exported.status_code,
        "html": "<html" in exported.text.lower(),
        **{what: mark.exists() for what, mark in converted.items()},
    }
    unconfigured = {
        **env[INSTRUCTOR],
        "JUPYTER_CONFIG_PATH": os.pathsep.join(
            folder
            for folder in env[INSTRUCTOR]["JUPYTER_CONFIG_PATH"].split(os.pathsep)
            # the course's grading/jupyter_config.py (make lab's) runs the instructor's too
            if Path(folder).name not in ("instructor", "grading")
        ),
    }
    out["converted"]["without the instructor's configuration"] = convert_there(unconfigured)
    for mark in converted.values():
        mark.unlink(missing_ok=True)
    # Validate, as the instructor: her submission's notebook, then one of the course's own (a
    # notebook of the instructor's beside the lab's source, which leaves its own mark).
    out["validate"] = {
        "her notebook": hub.nbgrader(
            INSTRUCTOR,
            f"assignments/validate?path=grading/submitted/{ATTACKER}/{LAB}/{VALIDATE_ME}",
            expect=None,
        ),
        "collected": (grading / "submitted" / ATTACKER / LAB / VALIDATE_ME).is_file(),
        "her mark in the instructor's home": validated.exists(),
    }
    own = course / "solutions" / LAB / "instructor-check.ipynb"
    own_mark = home[INSTRUCTOR] / "instructor-validated"
    own.write_text(
        nbformat.writes(
            nbformat.v4.new_notebook(
                cells=[nbformat.v4.new_code_cell(MARK_WHOEVER_RUNS_IT.format(mark=own_mark.name))]
            )
        )
    )
    give(own, INSTRUCTOR)
    out["validate"]["the course's own notebook"] = hub.nbgrader(
        INSTRUCTOR, f"assignments/validate?path=solutions/{LAB}/{own.name}", expect=None
    )
    out["validate"]["the course's own ran"] = own_mark.exists()
    own.unlink()
    out["git metadata collected"] = sorted(
        str(p.relative_to(hers_collected))
        for p in hers_collected.rglob("*")
        if {".git", "HEAD", "objects", "refs"} & set(p.relative_to(hers_collected).parts)
    )
    out["the instructor's git in her folder"] = {
        what: as_user(INSTRUCTOR, ["git", *argv], env[INSTRUCTOR], hers_collected / where)
        .stdout.strip()
        .splitlines()[:1]
        for what, (argv, where) in {
            "git status": (["status", "--short"], "."),
            "git log, paged": (["-p", "log", "-1"], "."),
            "git status in data": (["status", "--short"], "data"),
        }.items()
        if (hers_collected / where).is_dir()
    }
    out["her command ran as the instructor"] = ran.exists()
    out["times"] = {
        s: parse_utc((grading / "submitted" / s / LAB / "timestamp.txt").read_text())
        for s in STUDENTS
    }
    out["handed in"] = {s: handed_in[s] for s in HONEST}
    out["collected"] = {
        s: (grading / "submitted" / s / LAB / f"{LAB}.ipynb").read_bytes() for s in STUDENTS
    }
    out["links collected"] = [
        str(p)
        for p in (grading / "submitted").rglob("*")
        if p.is_symlink() or not (p.is_file() or p.is_dir())
    ]
    out["release after the attacks"] = release_checksums(hub, token[INSTRUCTOR]) == release
    out["submitted by alice"] = submissions_of(hub, token[INSTRUCTOR], "lm10-alice")
    out["submitted by mallory"] = submissions_of(hub, token[INSTRUCTOR], ATTACKER)

    # Grading and feedback; a feedback folder left without timestamp.txt (a student who was
    # never collected) must not stop anyone else's.
    # (and a key in the instructor's user keyring, as her logins' tools leave one there)
    instructors_secret = f"LM10-INSTRUCTORS-KEY-{secrets.token_hex(8)}"
    out["the instructor's key"] = (plant_key(INSTRUCTOR, instructors_secret), instructors_secret)
    try:
        out["graded"] = {
            s: hub.nbgrader(INSTRUCTOR, f"formgrader/api/submission/{LAB}/{s}/autograde")
            for s in STUDENTS
        }
    finally:
        clear_keys(INSTRUCTOR)
    # What her first answer reached while the instructor autograded her (the lines it printed)
    printed = [
        line
        for cell in nbformat.read(grading / "autograded" / ATTACKER / LAB / f"{LAB}.ipynb", 4).cells
        for o in cell.get("outputs", [])
        for line in o.get("text", "").splitlines()
    ]
    out["graded as the instructor"] = [line for line in printed if line.startswith(GRADED_MARK)]
    out["left behind while graded"] = left_behind()
    out["keys seen while graded"] = keys_seen(printed)
    # Autograding ran her notebook in her collected files' copy, in the grading sandbox: her
    # module and template leave nothing in the instructor's home there either.
    out["converted"]["after autograding"] = {
        what: mark.exists() for what, mark in converted.items()
    }
    submissions = hub.call("GET", f"/user/{INSTRUCTOR}/formgrader/api/submissions/{LAB}").json()
    out["grading errors"] = {
        s: [
            o.get("ename", "") + ": " + o.get("evalue", "") + o.get("text", "")[-500:]
            for cell in nbformat.read(grading / "autograded" / s / LAB / f"{LAB}.ipynb", 4).cells
            for o in cell.get("outputs", [])
            if o.get("output_type") == "error" or o.get("name") == "stderr"
        ]
        for s in HONEST
    }
    out["scores"] = {s["student"]: (s["score"], s["max_score"]) for s in submissions}
    hub.nbgrader(INSTRUCTOR, f"formgrader/api/assignment/{LAB}/generate_feedback")
    # The outputs her code displayed while autograding ran it (scripts, HTML) reach the
    # instructor's JupyterLab when she opens the autograded notebook: only a notebook her own
    # notary trusts renders them (on her origin). Asked as the instructor, with her secret and
    # signature database; the control is a copy she signed herself (`jupyter trust`), whose
    # content differs by one metadata field so that signing it trusts nothing else.
    checks = (
        "import sys, nbformat\n"
        "from nbformat.sign import NotebookNotary\n"
        "notary = NotebookNotary()\n"
        "for path in sys.argv[1:]:\n"
        "    print(notary.check_signature(nbformat.read(path, 4)))\n"
    )
    autograded = [grading / "autograded" / s / LAB / f"{LAB}.ipynb" for s in STUDENTS]
    signed = home[INSTRUCTOR] / "signed-by-her.ipynb"
    theirs = nbformat.read(autograded[0], 4)
    theirs.metadata["lm10_signed_copy"] = True
    nbformat.write(theirs, signed)
    give(signed, INSTRUCTOR)
    trusted = as_user(
        INSTRUCTOR, [jupyter, "trust", signed], env[INSTRUCTOR], home[INSTRUCTOR]
    ).returncode
    out["trusted by the instructor"] = {
        "autograded": as_user(
            INSTRUCTOR, [sys.executable, "-c", checks, *autograded], env[INSTRUCTOR], course
        ).stdout.split(),
        "her own signed copy": (
            trusted,
            as_user(
                INSTRUCTOR, [sys.executable, "-c", checks, signed], env[INSTRUCTOR], course
            ).stdout.split(),
        ),
    }
    signed.unlink()
    ghost = grading / "feedback" / "lm10-ghost" / LAB
    ghost.mkdir(parents=True)
    (ghost / f"{LAB}.html").write_text("<p>never collected</p>")
    give(grading / "feedback" / "lm10-ghost", INSTRUCTOR)
    out["release feedback"] = hub.nbgrader(
        INSTRUCTOR, f"formgrader/api/assignment/{LAB}/release_feedback", expect=None
    )
    pages = {}
    for student in STUDENTS:
        hub.nbgrader(student, "assignments/fetch_feedback", **COURSE)
        found = sorted((home[student] / LAB / "feedback").glob(f"*/{LAB}.html"))
        pages[student] = [p.read_text() for p in found]
    out["pages"] = pages
    with Gradebook(f"sqlite:///{grading / 'gradebook.db'}", course_id=COURSE_ID) as gradebook:
        out["late"] = {s: gradebook.find_submission(LAB, s).total_seconds_late for s in STUDENTS}

    # Her text in the instructor's terminal: she hands in her notebook with a cell whose
    # nbgrader id is escape sequences (a window title, a cleared screen, the cursor home) and a
    # forged line, and the instructor autogrades her again. nbgrader logs the id it does not
    # know (in the instructor's terminal with `nbgrader autograde`, and in the formgrader's
    # answer), then fails her submission on it: played last of the grading, whose results
    # above come from her earlier submission.
    hers = copy.deepcopy(blank)
    hers.cells.append(nbformat.v4.new_code_cell("# an ordinary cell"))
    hers.cells[-1].metadata["nbgrader"] = {
        "grade_id": HER_GRADE_ID,
        **{"grade": False, "solution": False, "locked": False, "schema_version": 3},
    }
    hub.write_notebook(ATTACKER, hers)
    hub.nbgrader(ATTACKER, "assignments/submit", **COURSE)
    hub.nbgrader(INSTRUCTOR, f"formgrader/api/assignment/{LAB}/collect")
    out["her grade id autograded"] = hub.nbgrader(
        INSTRUCTOR, f"formgrader/api/submission/{LAB}/{ATTACKER}/autograde", expect=None
    )
    hub.write_notebook(ATTACKER, blank)

    # 6. Reading each other's work, now that feedback has arrived.
    alice_page = next((home["lm10-alice"] / LAB / "feedback").glob(f"*/{LAB}.html"))
    out["reading"] = probe(
        ATTACKER,
        env[ATTACKER],
        [
            ["read alice's feedback", "read", str(alice_page)],
            ["list alice's feedback", "list", str(alice_page.parent)],
            ["list bob's home", "list", str(home["lm10-bob"])],
        ],
    )
    alice_time = out["submitted by alice"][0]
    out["reading through the exchange"] = {
        "alice's feedback": hub.ngshare(
            mine, "GET", f"/feedback/{COURSE_ID}/{LAB}/lm10-alice", params={"timestamp": alice_time}
        ).status_code,
    }
    out["reading through the hub"] = {
        "alice's files": requests.get(
            hub.url_of(f"/user/lm10-alice/api/contents/{LAB}"),
            headers={"Authorization": f"token {mine}"},
            timeout=60,
            allow_redirects=False,
        ).status_code,
        "the instructor's formgrader": requests.get(
            hub.url_of(f"/user/{INSTRUCTOR}/formgrader/api/submissions/{LAB}"),
            headers={"Authorization": f"token {mine}"},
            timeout=60,
            allow_redirects=False,
        ).status_code,
        "a token of alice's, from the hub's API": requests.post(
            f"{hub.url}/hub/api/users/lm10-alice/tokens",
            headers={"Authorization": f"token {mine}"},
            timeout=60,
        ).status_code,
    }

    # 7. Filling the exchange: a submission past its size from her server (not sent), one
    # request past its size (cut off), then submissions past her quota (refused).
    def data_file(size):
        as_user(
            ATTACKER,
            [sys.executable, "-c", f"open('data.bin', 'wb').write(bytes({size}))"],
            env[ATTACKER],
            home[ATTACKER] / LAB,
        )

    data_file(1_200_000)
    out["submit past the size from her server"] = hub.nbgrader(
        ATTACKER, "assignments/submit", expect=None, **COURSE
    )
    stored = len(submissions_of(hub, mine, ATTACKER))
    try:  # tornado answers 400 and closes; the client may see either
        big = hub.ngshare(
            mine,
            "POST",
            f"/submission/{COURSE_ID}/{LAB}",
            data=files_body({"big.bin": os.urandom(3 << 19)}),
        ).status_code
    except requests.RequestException as error:
        big = f"connection ended: {type(error).__name__}"
    out["request past the size"] = big
    out["stored past the size"] = len(submissions_of(hub, mine, ATTACKER)) - stored
    kept = []
    for _ in range(5):
        answer = hub.ngshare(
            mine,
            "POST",
            f"/submission/{COURSE_ID}/{LAB}",
            data=files_body({"part.bin": os.urandom(720_000)}),
        )
        kept.append((answer.status_code, answer.json().get("message", "")))
        if answer.status_code != 200:
            break
    out["past the quota"] = kept
    data_file(600_000)  # within the size, past what is left of her quota
    out["submit past the quota from her server"] = hub.nbgrader(
        ATTACKER, "assignments/submit", expect=None, **COURSE
    )
    out["bob submits again"] = hub.nbgrader("lm10-bob", "assignments/submit", **COURSE)
    latest = hub.ngshare(
        token[INSTRUCTOR], "GET", f"/submission/{COURSE_ID}/{LAB}/lm10-bob?list_only=true"
    ).json()
    out["bob's files"] = sorted(f["path"] for f in latest["files"])

    # 8. Strangers on one machine. A student's terminal and kernels run inside her server's
    # sandbox; her kernel is where she plays from here on (what a terminal there could do).
    uid = {u: account(u).pw_uid for u in PEOPLE}

    def server_port(user):
        return next(
            urlparse(route["target"]).port
            for route in hub.call("GET", "/hub/api/proxy").json().values()
            if route["data"].get("user") == user
        )

    out["alice's listeners before her kernel"] = listening_ports(uid["lm10-alice"])
    out["alice's server port's listeners"] = port_owners(server_port("lm10-alice"))
    kernel = {u: hub.start_kernel(u) for u in (ATTACKER, "lm10-alice")}

    def attack(code, user=ATTACKER):
        return json.loads(hub.execute(user, kernel[user], code).strip().splitlines()[-1])

    # 8a. Whose processes she sees; a user namespace of her own.
    out["processes she sees"] = attack(SEE_PROCESSES)
    # 8a'. The hub's standard streams, through her server's: what the administrator types in
    # the hub's terminal waits there, and she writes to it.
    # (in a second of its own: the submissions above may have spent the relay's 50 lines of
    # hers in this one, and the relay counts the rest, not logs them)
    time.sleep(1.1)
    hub.process.stdin.write(f"{ADMIN_TYPED}\n".encode())
    hub.process.stdin.flush()
    out["the hub's streams"] = attack(HUBS_STREAMS.replace("PAYLOAD", repr(HER_STREAM_PAYLOAD)))
    time.sleep(2)  # the hub relays what her server wrote
    out["the hub's log"] = hub.tail_all()
    # ... and flooded: meanwhile the hub answers (each answer's seconds)
    attack(FLOOD)
    answers, flood_end = [], time.monotonic() + FLOOD_SECONDS + 2
    while time.monotonic() < flood_end:
        asked = time.monotonic()
        hub.call("GET", "/hub/api/users/lm10-alice", timeout=60)
        answers.append(time.monotonic() - asked)
        time.sleep(0.2)
    flooded = home[ATTACKER] / "flooded"
    wait_for("her flood's end", flooded.exists, 60)
    time.sleep(3)
    flood_log = hub.tail_all()[len(out["the hub's log"]) :]
    out["her flood"] = {
        "written": int(flooded.read_text()),
        "answers": answers,
        "lines": sum("HER-FLOOD" in line for line in flood_log.splitlines()),
        "left out": [line for line in flood_log.splitlines() if "lines left out" in line],
    }
    out["a user namespace of her own"] = attack(NEW_USERS)
    out["the machine's socket buffers"] = attack(SOCKET_BUFFERS)
    # 8a (keys). The keys of her uid: one left in its user keyring of the machine's namespace
    # (by the account that had her uid before her, or her own login's tools), read from her kernel
    previous_holders = f"LM10-PREVIOUS-HOLDERS-KEY-{secrets.token_hex(8)}"
    out["her uid's key"] = (plant_key(ATTACKER, previous_holders), previous_holders)
    try:
        out["keys seen from her kernel"] = keys_seen(
            hub.execute(ATTACKER, kernel[ATTACKER], keys_probe()).splitlines()
        )
    finally:
        clear_keys(ATTACKER)
    # 8a''. Every other user's listener, asked past the proxy without a credential.
    servers = sorted(socket_holders(set(uid.values())))  # each held by its user and the hub
    out["asked without a credential"] = attack(
        UNAUTHENTICATED.replace("NAMES", repr(list(PEOPLE)))
        .replace("PORTS", repr([*hub.ports, *servers]))
        .replace("DOMAIN", DOMAIN)
    )
    # 8b. Listening to alice's kernel: every loopback listener of another user, subscribed to
    # with ZeroMQ, while alice runs cells; and what alice's kernel talks over.
    heard = {}
    listener = threading.Thread(target=lambda: heard.update(attack(EAVESDROP)))
    listener.start()
    time.sleep(3)
    for n in range(6):
        hub.execute("lm10-alice", kernel["lm10-alice"], f"print('ALICE-SECRET-{n}')")
        time.sleep(0.5)
    out["alice's listeners"] = listening_ports(uid["lm10-alice"])  # seen from the host
    listener.join(120)
    out["eavesdropping"] = heard
    out["alice's kernel"] = attack(KERNEL_TRANSPORT, "lm10-alice")
    # 8b'. What her kernel reaches of alice's over loopback TCP: alice's kernel's IOPub pipe
    # (her message, while alice's cell runs; alice's own child printing through the pipe) and
    # alice's debugger, which alice turns on and off as JupyterLab does.
    out["alice's child"] = hub.execute(
        "lm10-alice", kernel["lm10-alice"], ALICE_FORKS, streams=True
    )
    out["alice's kernel info"] = hub.kernel_message(
        "lm10-alice", kernel["lm10-alice"], "shell", "kernel_info_request", {}
    )["content"]
    waiting = {}
    cell = threading.Thread(
        target=lambda: waiting.update(
            hub.execute("lm10-alice", kernel["lm10-alice"], ALICE_WAITS, streams=True)
        )
    )
    cell.start()
    time.sleep(2)
    out["her push"] = attack(PUSH_TO_EVERYONE)
    cell.join(120)
    out["alice's cell while she pushed"] = waiting
    out["alice's debugger"] = [
        hub.kernel_message(
            "lm10-alice",
            kernel["lm10-alice"],
            "control",
            "debug_request",
            {"type": "request", "seq": n, "command": command, "arguments": arguments},
        )["content"]
        for n, (command, arguments) in enumerate(
            [
                ("initialize", {"clientID": "jupyterlab", "adapterID": "python"}),
                ("attach", {}),
                ("disconnect", {"restart": False, "terminateDebuggee": False}),
            ],
            start=1,
        )
    ]
    tried = hub.execute(ATTACKER, kernel[ATTACKER], ATTACH_TO_EVERYONE, timeout=300)
    out["her debug clients"] = json.loads(tried.strip().splitlines()[-1])
    out["debugged"] = (home["lm10-alice"] / DEBUG_MARK).exists()
    # 8c. torch.compile's cache and shared temporary folders: she plants alice's default
    # inductor cache folder (and the same under /var/tmp and /dev/shm); alice's kernel looks.
    out["planted"] = attack(PLANT)
    out["alice's caches"] = attack(LOOK_FOR_PLANTS, "lm10-alice")
    # 8d. The exchange's address: from her kernel (in the sandbox) and from a shell as her
    # user outside it (a site that gives students ssh), she tries to take, replace or add to it.
    sock = hub.socket
    out["exchange address from her kernel"] = attack(
        TAKE_THE_EXCHANGE.replace("SOCKET", repr(str(sock)))
    )
    out["exchange address from her shell"] = probe(
        ATTACKER,
        env[ATTACKER],
        [
            ["bind a socket beside it", "bind", str(sock.parent / "x.sock")],
            ["create a file beside it", "create", str(sock.parent / "x")],
            ["remove its socket", "remove", str(sock)],
            ["rename its socket", "rename", str(sock), str(sock.parent / "y")],
        ],
    )
    # 8e. What a server's exchange credential can do: the instructor's, as the exchange (or
    # anyone impersonating it) receives it with every Collect.
    theirs = token[INSTRUCTOR]
    as_them = {"Authorization": f"token {theirs}"}
    out["exchange token's scopes"] = requests.get(
        f"{hub.url}/hub/api/user", headers=as_them, timeout=60
    ).json()["scopes"]
    out["exchange token on the instructor's server"] = {
        "list her course": requests.get(
            hub.url_of(f"/user/{INSTRUCTOR}/api/contents"),
            headers=as_them,
            timeout=60,
            allow_redirects=False,
        ).status_code,
        "open a terminal": requests.post(
            hub.url_of(f"/user/{INSTRUCTOR}/api/terminals"),
            headers=as_them,
            timeout=60,
            allow_redirects=False,
        ).status_code,
        "a token with more scopes": requests.post(
            f"{hub.url}/hub/api/users/{INSTRUCTOR}/tokens",
            headers=as_them,
            json={"scopes": ["access:servers"]},
            timeout=60,
        ).status_code,
    }
    out["the instructor's server token at the exchange"] = hub.ngshare(
        server_token[INSTRUCTOR], "GET", f"/submissions/{COURSE_ID}/{LAB}"
    ).status_code

    # 8f. A revoked token, an expired one: how long the exchange still takes each.
    def lasts(make, undo=None):
        made = hub.call(
            "POST", f"/hub/api/users/{ATTACKER}/tokens", json={"scopes": [ACCESS], **make}
        ).json()
        ask = f"/submissions/{COURSE_ID}/{LAB}/{ATTACKER}"
        first = hub.ngshare(made["token"], "GET", ask).status_code  # now in the exchange's cache
        if undo:
            hub.call("DELETE", f"/hub/api/users/{ATTACKER}/tokens/{made['id']}")
        since = time.monotonic()
        while time.monotonic() - since < 40:
            if hub.ngshare(made["token"], "GET", ask).status_code != 200:
                return first, round(time.monotonic() - since, 1)
            time.sleep(0.25)
        return first, None

    out["revoked token"] = lasts({"note": "revoked at once"}, undo=True)
    out["expired token"] = lasts({"note": "expires", "expires_in": 2})

    # 8g. Filling the exchange with names: too many files, long names, empty files (what
    # costs the exchange a name and a file, not content), names that write to a terminal.
    def post_names(names):
        answer = hub.ngshare(
            mine,
            "POST",
            f"/submission/{COURSE_ID}/{LAB}",
            data=files_body(dict.fromkeys(names, b"")),
        )
        return answer.status_code, answer.json().get("message", "")

    out["too many files"] = post_names([f"{n:04d}.txt" for n in range(301)])
    out["a long name"] = post_names(["n" * 256])
    out["empty files with long names"] = post_names([f"{n:03d}" + "n" * 200 for n in range(250)])
    out["hostile names"] = {name: post_names([name]) for name in HOSTILE_NAMES}
    nested = hub.ngshare(
        mine,
        "POST",
        f"/submission/{COURSE_ID}/{LAB}",
        data={"files": "[" * 100_000 + "]" * 100_000},
    )
    out["files nested deeper than the parser goes"] = (
        nested.status_code,
        nested.json().get("message", "")
        if nested.headers.get("Content-Type", "").startswith("application/json")
        else nested.text[:300],
    )

    # 8i. Shared limits, from her kernel: the sandbox's temporary folders filled; a thread bomb
    # held while alice starts threads and a process; the exchange's socket flooded with
    # connections while alice asks it for her submissions.
    out["filled temporary folders"] = attack(FILL_TMPFS)
    out["thread bomb"] = attack(TASK_BOMB)
    out["alice starts threads during the bomb"] = attack(START_SOME, "lm10-alice")
    attack(RELEASE_TASKS)
    out["pseudo-terminals she holds"] = attack(PTY_HOARD)
    out["alice's pseudo-terminal meanwhile"] = attack(OPEN_A_PTY, "lm10-alice")
    attack(RELEASE_PTYS)
    out["native aio contexts she sets up"] = attack(AIO_SETUP)
    out["an io_uring she sets up"] = attack(IO_URING_SETUP)
    out["alice's sum alone"] = attack(TIMED_SUM, "lm10-alice")
    out["her priority limits"] = attack(PRIORITY_LIMITS)
    out["classmates' cgroups she reads"] = attack(CGROUPS_SEEN)
    out["sessions she spins"] = attack(SPIN_SESSIONS)
    time.sleep(2)
    try:
        out["alice's sum beside her sessions"] = attack(TIMED_SUM, "lm10-alice")
    finally:
        # killed from the host first: her server, one of 201 in her share of the cores, was
        # once too slow to take a kernel's connection in time (the machine busy besides)
        for pid in pids_of(uid[ATTACKER]):
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1] == [
                    part.encode() for part in SPIN
                ]:
                    os.kill(pid, signal.SIGKILL)
        attack(STOP_SPINNING)
    ask = f"/submissions/{COURSE_ID}/{LAB}/lm10-alice"
    exchange_pid = min(pids_of(account(NGSHARE_USER).pw_uid))
    out["exchange's descriptors before the flood"] = descriptors(exchange_pid)
    out["flood"] = attack(FLOOD_EXCHANGE.replace("SOCKET", repr(str(hub.socket))))
    out["exchange's descriptors during the flood"] = descriptors(exchange_pid)
    since = time.monotonic()
    try:
        answer = hub.ngshare(token["lm10-alice"], "GET", ask, timeout=20).status_code
    except requests.RequestException as error:
        answer = f"no answer: {type(error).__name__}"
    out["alice's exchange during the flood"] = (answer, round(time.monotonic() - since, 1))
    attack(STOP_FLOOD)
    out["alice's exchange after the flood"] = hub.ngshare(
        token["lm10-alice"], "GET", ask
    ).status_code
    bodies = {
        "socket": str(hub.socket),
        "path": f"/services/{SERVICE}/submission/{COURSE_ID}/{LAB}",
        "max": int(float(EXCHANGE_LIMITS["LM10_NGSHARE_MAX_REQUEST_MIB"]) * (1 << 20)),
        "token": mine,
    }
    out["bodies to the exchange"] = attack(EXCHANGE_BODIES.replace("ARGS", repr(bodies)))
    # (to a lab that does not exist: read, then refused by ngshare, nothing stored)
    out["alice's body after hers"] = hub.ngshare(
        token["lm10-alice"], "POST", f"/submission/{COURSE_ID}/no-such-lab", data={"files": "[]"}
    ).json()

    # 8h. A process of hers that outlives her server, holding on (signals ignored, its own
    # session) and trying for the exchange's address; then her server stops.
    out["daemon started"] = attack(DAEMON.replace("SOCKET", repr(str(sock))))
    still_here = home[ATTACKER] / "still-here"
    wait_for("her process to run", still_here.exists, 30)
    out["her processes before"] = len(processes_of(uid[ATTACKER]))
    mine_then = mine
    hub.stop_server(ATTACKER)
    time.sleep(2)
    out["her processes after"] = processes_of(uid[ATTACKER])
    beat = still_here.stat().st_mtime
    time.sleep(1.5)
    out["still beating"] = still_here.stat().st_mtime != beat
    out["took the exchange"] = (home[ATTACKER] / "took-the-exchange").exists()
    out["left in shared folders"] = [
        str(p)
        for top in ("/tmp", "/var/tmp", "/dev/shm")
        for p in Path(top).glob("*")
        if owner_of(p) == uid[ATTACKER]
    ]
    gone, lasted = time.monotonic(), None
    while time.monotonic() - gone < 30:
        if not hub.ngshare(mine_then, "GET", f"/submissions/{COURSE_ID}/{LAB}/{ATTACKER}").ok:
            lasted = round(time.monotonic() - gone, 1)
            break
        time.sleep(0.25)
    out["her stopped server's exchange token"] = lasted  # None: still works after 30 s

    # 9. The hub's origin: her own server, configured from her home, serves a page to anyone;
    # the instructor, logged in to the hub, opens it in a browser.
    target = hub.url_of(f"/user/{INSTRUCTOR}/")
    page = LURE_PAGE.replace("TARGET", json.dumps(target))
    lure_config = LURE_CONFIG.replace("PAGE_TEXT", repr(page))
    as_user(
        ATTACKER,
        [
            sys.executable,
            "-c",
            "import os, sys; os.makedirs('.jupyter', exist_ok=True); "
            "open('.jupyter/jupyter_server_config.py', 'w').write(sys.argv[1])",
            lure_config,
        ],
        env[ATTACKER],
        home[ATTACKER],
    )
    hub.start_servers([ATTACKER])
    lure = hub.url_of(f"/user/{ATTACKER}/lm10-lure")
    served = requests.get(lure, timeout=60, allow_redirects=False)  # no login, no token
    out["her page, without a login"] = (served.status_code, "window.open" in served.text)
    out["the instructor opens her page"] = open_as_instructor(
        hub, machine.passwords[INSTRUCTOR], lure
    )

    # 10. A server's port: she notes the ports others listen on; alice's server stops; she
    # listens on every port that came free. Alice starts again: on a port the hub draws, then
    # on her old one (the test's pin: the outcome of the race for a freshly drawn port, which
    # mallory could win only by chance); each time a request goes to alice's server, as her
    # browser's would.
    kernel[ATTACKER] = hub.start_kernel(ATTACKER)
    out["ports of others"] = attack(OTHERS_PORTS)
    alice_port = server_port("lm10-alice")
    hub.stop_server("lm10-alice")
    out["squatted"] = attack(SQUAT)
    out["alice's old port"] = alice_port

    def alice_starts():
        hub.call("POST", "/hub/api/users/lm10-alice/server", ok=False)
        wait_for(
            "alice's server to start or fail",
            lambda: (hub.model("lm10-alice")["servers"].get("") or {"ready": True})["ready"],
            300,
        )
        started = bool(hub.model("lm10-alice")["servers"])
        sent = requests.get(
            hub.url_of("/user/lm10-alice/api/contents"),
            headers={"Authorization": f"token {TOKEN}"},
            timeout=60,
            allow_redirects=False,
        ).status_code
        owners = port_owners(server_port("lm10-alice")) if started else []
        if started:
            hub.stop_server("lm10-alice")
        return {"started": started, "answer": sent, "her port's listeners": owners}

    out["alice starts again"] = alice_starts()
    hub.pin.write_text(f"lm10-alice {alice_port}")
    out["alice starts on her old port"] = alice_starts()
    out["heard by mallory"] = attack(HEARD)
    out["hub log"] = hub.tail()

    # 11. alice's server ends on its own (JupyterLab's File > Shut Down: the server exits, and
    # the hub learns it only at its next poll). mallory, watching alice's port from her kernel,
    # listens there the moment it comes free; alice's browser keeps asking her server (its
    # polls carry her cookie: the test's token stands in for it).
    hub.start_servers(["lm10-alice"])
    alice_port = server_port("lm10-alice")
    out["watching alice's port"] = attack(TAKE_WHEN_FREE.replace("PORT", str(alice_port)))
    with contextlib.suppress(requests.RequestException):  # it may end before it answers
        hub.call("POST", "/user/lm10-alice/api/shutdown", ok=False, timeout=30)
    asked, since = [], time.monotonic()
    while time.monotonic() - since < 15:
        try:
            asked.append(
                requests.get(
                    hub.url_of("/user/lm10-alice/api/contents"),
                    headers={"Authorization": f"token {TOKEN}"},
                    timeout=3,
                    allow_redirects=False,
                ).status_code
            )
        except requests.RequestException as error:
            asked.append(type(error).__name__)
        time.sleep(0.5)
    out["alice's browser after her server ended"] = asked
    wait_for(
        "the hub to notice alice's server ended", lambda: not hub.model("lm10-alice")["servers"], 90
    )
    out["taken when free"] = attack(TAKEN)
    # when the hub noticed (its log's local time; the route goes next, then the port)
    noticed = re.findall(
        r"\[\w (\S+ \S+) JupyterHub [^\]]*\] User lm10-alice server stopped,? with exit code",
        Path(hub.log.name).read_text(),
    )
    out["the hub noticed alice's server ended"] = noticed[-1] if noticed else None

    # 12. The hub's REST API with a token of her own that carries everything she may do (as
    # /hub/token makes it), and the proxy's API from her kernel.
    full = hub.call(
        "POST", f"/hub/api/users/{ATTACKER}/tokens", json={"note": "all of mine"}
    ).json()["token"]

    def as_her(method, path, **kwargs):
        return requests.request(
            method,
            f"{hub.url}/hub/api{path}",
            headers={"Authorization": f"token {full}"},
            timeout=60,
            allow_redirects=False,
            **kwargs,
        )

    # 12 (gone). A twelfth tester's (issue 39): a student whose account is removed (userdel: she
    # left the course), with a token she made while she was in it (the exchange's access among
    # its scopes). The hub asked the accounts at login only: her hub user and tokens stayed, and
    # a name given to someone else later is the same hub user. The admin's own request about her
    # stays answered (the control: the hub user is there).
    run(
        *("useradd", "--user-group", "--groups", STUDENTS_GROUP, "--comment", MARK),
        *("--no-create-home", "--shell", "/usr/sbin/nologin", GONE),
    )
    try:
        hub.call("POST", f"/hub/api/users/{GONE}")
        kept = hub.call(
            "POST", f"/hub/api/users/{GONE}/tokens", json={"note": "kept", "scopes": [ACCESS]}
        ).json()["token"]
        kept_with_all = hub.call("POST", f"/hub/api/users/{GONE}/tokens", json={}).json()["token"]
    finally:
        run("userdel", GONE)

    def as_gone(token):
        return requests.get(
            f"{hub.url}/hub/api/user", headers={"Authorization": f"token {token}"}, timeout=60
        ).status_code

    out["a removed account's tokens"] = {
        "the exchange's access": as_gone(kept),
        "all she may do": as_gone(kept_with_all),
        "the admin asks about her": hub.call("GET", f"/hub/api/users/{GONE}", ok=False).status_code,
    }
    out["a removed account, in the hub's log"] = [
        line for line in hub.tail_all().splitlines() if f"'{GONE}' has no account" in line
    ]

    # 12'. An eleventh tester's (issue 39): her text in the hub's own log (the administrator's
    # terminal), through what the hub and tornado log of a request she makes: a token asking
    # for scopes, roles and a share named by her escape sequences, a user, a group and a server
    # named by them, a login name and a link's next address made of them.
    quoted = quote(HER_HUB_TEXT, safe="")
    for method, path, kwargs in [
        (
            "POST",
            f"/users/{ATTACKER}/tokens",
            {"json": {"scopes": [f"read:users!user={HER_HUB_TEXT}"]}},
        ),
        ("POST", f"/users/{ATTACKER}/tokens", {"json": {"scopes": [HER_HUB_TEXT]}}),
        ("POST", f"/users/{ATTACKER}/tokens", {"json": {"roles": [HER_HUB_TEXT]}}),
        ("POST", f"/users/{ATTACKER}/tokens", {"json": {"note": HER_HUB_TEXT}}),
        ("POST", f"/shares/{ATTACKER}/", {"json": {"user": HER_HUB_TEXT}}),
        ("GET", f"/users/{quoted}", {}),
        ("GET", f"/groups/{quoted}", {}),
        ("POST", f"/users/{ATTACKER}/servers/{quoted}", {}),
    ]:
        as_her(method, path, **kwargs)
    login(hub.url, HER_HUB_TEXT, "x")
    requests.get(f"{hub.url}/hub/login?next={quoted}", timeout=60)
    # and C1 controls (CSI as one byte) in a request line, which tornado accepts (ESC it
    # refuses; the proxy, Node, refuses both), sent to the hub's own port, past the proxy
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", hub.ports[1])) as raw:
        raw.settimeout(10)
        raw.sendall(b"GET /hub/api/users" + HER_RAW_PATH + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        raw.recv(65536)
    time.sleep(1)
    out["her text in the hub's log"] = [
        line for line in hub.tail_all().splitlines() if HER_HUB_MARK in line
    ]
    listed = as_her("GET", "/users")
    services = as_her("GET", "/services")
    out["her hub token"] = {
        "scopes": as_her("GET", "/user").json()["scopes"],
        "users she lists": [u["name"] for u in listed.json()] if listed.ok else listed.status_code,
        "services she lists": sorted(services.json()) if services.ok else services.status_code,
    }
    out["her hub token against others"] = {
        what: as_her(method, path, **kwargs).status_code
        for what, (method, path, kwargs) in {
            "the instructor's model": ("GET", f"/users/{INSTRUCTOR}", {}),
            "alice's model": ("GET", "/users/lm10-alice", {}),
            "start alice's server": ("POST", "/users/lm10-alice/server", {}),
            "stop the instructor's server": ("DELETE", f"/users/{INSTRUCTOR}/server", {}),
            "a token of alice's": ("POST", "/users/lm10-alice/tokens", {"json": {}}),
            "the proxy's routes": ("GET", "/proxy", {}),
            "the students' group": ("GET", f"/groups/{STUDENTS_GROUP}", {}),
            "join the instructors' group": (
                "POST",
                f"/groups/{INSTRUCTORS_GROUP}/users",
                {"json": {"users": [ATTACKER]}},
            ),
            "share the instructor's server with herself": (
                "POST",
                f"/shares/{INSTRUCTOR}/",
                {"json": {"user": ATTACKER}},
            ),
            "the instructor's shares": ("GET", f"/shares/{INSTRUCTOR}", {}),
            "make herself an admin": ("PATCH", f"/users/{ATTACKER}", {"json": {"admin": True}}),
            "a second, named server": ("POST", f"/users/{ATTACKER}/servers/second", {}),
            "the exchange's service": ("GET", f"/services/{SERVICE}", {}),
        }.items()
    }
    kernel[ATTACKER] = hub.start_kernel(ATTACKER)
    out["the proxy's API from her kernel"] = attack(PROXY_API.replace("PORT", str(hub.proxy_port)))
    # And an eighth tester's: her server's OAuth client (its id and callback are in her
    # server's environment) for alice, logged in to the hub, so that alice's authorisation
    # hands her server a code for a token of alice's; then the client with a callback of hers
    # elsewhere; her own authorisation is the control.
    client = env[ATTACKER]["JUPYTERHUB_CLIENT_ID"]
    callback = env[ATTACKER]["JUPYTERHUB_OAUTH_CALLBACK_URL"]

    def authorize(user, redirect_uri):
        with requests.Session() as browser:
            browser.get(f"{hub.url}/hub/login", timeout=60)
            browser.post(
                f"{hub.url}/hub/login",
                timeout=60,
                allow_redirects=False,
                data={
                    "username": user,
                    "password": machine.passwords[user],
                    "_xsrf": browser.cookies.get("_xsrf"),
                },
            )
            answer = browser.get(
                f"{hub.url}/hub/api/oauth2/authorize",
                params={
                    "client_id": client,
                    "redirect_uri": redirect_uri,
                    "response_type": "code",
                    "state": "mallory",
                },
                timeout=60,
                allow_redirects=False,
            )
            to = answer.headers.get("Location", "")
            return {"status": answer.status_code, "to": to.split("?")[0], "code": "code=" in to}

    out["her server's OAuth client"] = {
        "alice authorises it": authorize("lm10-alice", callback),
        "with a callback elsewhere": authorize(ATTACKER, "http://mallory.invalid/callback"),
        "she authorises it": authorize(ATTACKER, callback),
        "callback": callback,
    }

    # 13. A link of hers that runs her script on the page it opens, on the origin of whoever
    # opens it (a fifth tester's): nbgitpuller's page with her script as the link's `urlpath`
    # (the course's repository, a repository of hers, the instructor's server), a formgrader
    # page of alice's server with her script in its address. Each page as the server sends it,
    # then the instructor and alice each open one in Chromium.
    hub.start_servers(["lm10-alice"])
    marker = "<script>lm10_mallory()</script>"
    in_page = {
        "alice's link page, the lessons": (
            "/user/lm10-alice/git-pull",
            {"repo": hub.lessons, "targetpath": "lm10", "urlpath": marker},
        ),
        "alice's link page, her repository": (
            "/user/lm10-alice/git-pull",
            {"repo": hers, "targetpath": "x", "urlpath": marker},
        ),
        "the instructor's link page, the lessons": (
            f"/user/{INSTRUCTOR}/git-pull",
            {"repo": hub.lessons, "targetpath": "lessons", "urlpath": marker},
        ),
        "alice's formgrader page": ("/user/lm10-alice/formgrader/gradebook/" + marker, {}),
    }
    pages = {}
    for what, (path, params) in in_page.items():
        path = path.replace(marker, quote(marker, safe=""))
        sent = hub.call("GET", path, ok=False, params=params)
        pages[what] = (sent.status_code, marker in sent.text)
    out["her script in a page"] = pages
    link = (
        hub.url_of(f"/user/{INSTRUCTOR}/git-pull")
        + "?"
        + urlencode({"repo": hub.lessons, "targetpath": "lessons", "urlpath": READ_SOLUTIONS})
    )
    out["the instructor opens her link"] = open_link(
        hub, INSTRUCTOR, machine.passwords[INSTRUCTOR], link
    )
    link = hub.url_of("/user/lm10-alice/formgrader/gradebook/")
    link += quote(READ_HER_NOTEBOOK, safe="")
    out["alice opens her link"] = open_link(
        hub, "lm10-alice", machine.passwords["lm10-alice"], link
    )

    # 14. The guard's reading of a link: the course's repository and folders, written otherwise.
    variants = link_variants(hub.lessons)
    out["link variants"] = {
        what: (
            pull(hub, "lm10-alice", repo, target.replace("HOME", str(home["lm10-alice"]))),
            may,
        )
        for what, (repo, target, may) in variants.items()
    }
    out["hidden folders pulled by the variants"] = sorted(
        str(p.relative_to(home["lm10-alice"]))
        for p in (home["lm10-alice"] / ".ipython" / "y", home["lm10-alice"] / ".jupyter" / "z")
        if p.exists()
    )

    # 15. Her server stopped and started again and again (with her own hub token) while alice's
    # stops and starts: after every start, each server's port is held by the hub and its own
    # user only, and each server answers with its own user's files.
    def churn(user, token, rounds):
        api = f"{hub.url}/hub/api/users/{user}"
        with requests.Session() as own:  # a session of this thread's; the driver looks
            own.headers["Authorization"] = f"token {token}"

            def server():
                found = own.get(api, headers={"Authorization": f"token {TOKEN}"}, timeout=60)
                return found.json()["servers"].get("")

            for _ in range(rounds):
                own.delete(f"{api}/server", timeout=120)
                wait_for(f"{user}'s server to stop", lambda: not server(), 120)
                own.post(f"{api}/server", timeout=300)
                wait_for(f"{user}'s server", lambda: (server() or {}).get("ready"), 300)

    hers_churns = threading.Thread(target=churn, args=(ATTACKER, full, 4))
    hers_churns.start()
    churn("lm10-alice", TOKEN, 2)
    hers_churns.join(900)
    routes = {
        route["data"]["user"]: urlparse(route["target"]).port
        for route in hub.call("GET", "/hub/api/proxy").json().values()
        if route["data"].get("user")
    }
    held = socket_holders(set(uid.values()))
    out["after the churn"] = {
        user: {
            "held by": [next((u for u in PEOPLE if uid[u] == h), h) for h in held.get(port, [])],
            "files": sorted(
                f["name"] for f in hub.call("GET", f"/user/{user}/api/contents").json()["content"]
            ),
        }
        for user, port in routes.items()
    }

    # 16. Her markup in the address of every other page a link of hers can open (a sixth
    # tester's): alice's server's pages (JupyterLab's, the notebook interface's, nbgrader's
    # assignment and course lists and validation, nbconvert, the file viewer, MathJax, the
    # language server's, the licenses page) and the hub's (login, redirects, spawn, OAuth,
    # sharing, errors), with her markup in the path and in the query. Each page as the server
    # sends it: an HTML page that carries her markup raw would run it on that origin. (The
    # licenses' API is left out: jupyterlab_server 2.28 never answers it, whatever the query:
    # its handler raises in `finish`.) A page that does not answer in 30 s is recorded.
    m = quote(marker, safe="")
    alice = "/user/lm10-alice"
    reflected = {}
    for path in (
        *(
            f"{alice}/{page}"
            for page in (
                f"lab/tree/{m}",
                f"lab/workspaces/{m}?reset={m}",
                f"lab?{m}={m}",
                f"tree/{m}",
                f"notebooks/{m}",
                f"edit/{m}",
                f"consoles/{m}",
                f"terminals/{m}",
                f"doc/tree/{m}",
                f"view/{m}",
                f"files/{m}",
                f"nbconvert/html/{m}?download={m}",
                f"assignments?course_id={m}",
                f"formgraders?{m}={m}",
                f"assignments/validate?path={m}",
                f"mathjax/{m}",
                f"lsp/status?{m}={m}",
                f"lab/api/translations/{m}",
                f"api/kernelspecs/{m}",
                f"kernelspecs/{m}/logo-64x64.png",
                f"static/{m}",
                f"logout?next={m}",
                m,
            )
        ),
        f"/hub/login?next={m}",
        f"/hub/user-redirect/{m}",
        f"/hub/spawn/{m}",
        f"/hub/spawn-pending/{m}",
        f"/hub/accept-share?code={m}",
        f"/hub/api/oauth2/authorize?client_id={m}&redirect_uri={m}&response_type=code",
        f"/hub/error/404?message={m}",
        f"/hub/{m}",
        f"/hub/logout?next={m}",
        f"/{m}",
    ):
        # as no one, as mallory (her own token), as the driver (a page as alice's server
        # renders it for someone let in)
        for auth in ({}, {"Authorization": f"token {full}"}, {"Authorization": f"token {TOKEN}"}):
            try:
                sent = requests.get(
                    hub.url_of(path), headers=auth, timeout=30, allow_redirects=False
                )
            except requests.Timeout:
                reflected[path] = "no answer in 30 s"
                continue
            html = "html" in sent.headers.get("Content-Type", "")
            if html and marker in sent.text:
                reflected[path] = sent.status_code
    out["her markup in a page's address"] = reflected
    return out


# --- the honest class ---


def test_everyone_logs_in_with_their_own_password_only(played):
    for user, response in played["logins"].items():
        assert response.status_code == 302, (user, response.status_code)
        assert "/hub/login" not in response.headers["location"], user
    assert played["wrong password"].status_code == 403
    assert played["mallory's password, alice's name"].status_code == 403


def test_every_home_is_private(played):
    assert set(played["homes"].values()) == {"0o700"}, played["homes"]


def test_no_kernel_spins_on_a_shared_machine(played):
    """Every server's kernels let torch's idle threads sleep (OMP_WAIT_POLICY=PASSIVE)."""
    assert set(played["idle threads"].values()) == {"PASSIVE"}, played["idle threads"]


def test_autograded_scores_are_what_the_answers_earned(played):
    assert all(g["success"] for g in played["graded"].values()), played["graded"]
    scores = played["scores"]
    assert scores["lm10-alice"] == (10.0, 13.0), played["grading errors"]  # 3 are by hand
    assert 0 < scores["lm10-bob"][0] < 10, scores
    assert scores[ATTACKER] == (0.0, 13.0)  # the blank release, handed in late


def test_students_fetch_their_own_feedback(played):
    for student, pages in played["pages"].items():
        assert len(pages) == 1, (student, len(pages))
        found = re.search(r"Score:\s*([\d.]+)\s*/\s*([\d.]+)", pages[0])
        assert found, f"no score on {student}'s feedback page"
        assert (float(found[1]), float(found[2])) == played["scores"][student], student
        assert "### BEGIN HIDDEN TESTS" not in pages[0]


def test_collected_notebooks_are_what_each_student_handed_in(played):
    for student, handed_in in played["handed in"].items():
        assert played["collected"][student] == handed_in, student
    assert played["links collected"] == []


# --- the attacks ---


def test_no_one_submits_as_a_classmate(played):
    status, answer = played["submit naming alice"]
    assert status == 200 and answer["success"]  # taken, as mallory's own
    assert answer["timestamp"] in played["submitted by mallory"]
    assert len(played["submitted by alice"]) == 1  # alice's own, and nothing else
    assert b"MALLORY" not in played["collected"]["lm10-alice"]
    failed = played["submit as alice from her server"]
    assert failed["success"] is False and "explicit student ID" in answer_text(failed), failed
    assert played["forged tokens"] == {
        "no token": 403,
        "made-up token": 403,
        "the hub's service token": 403,
        "her token without the exchange's scope": 403,
        "her server's own token": 403,
    }
    assert played["files"]["read alice's server's token"] in DENIED
    assert played["files"]["read the instructor's server's token"] in DENIED


def test_no_solution_through_a_symlink(played):
    assert played["solution exists"]  # what the link points at is there, for the instructor
    assert played["link"]["read the solution"] in DENIED
    assert played["link"]["link it to the solution"] == "done"
    failed = played["submit through the link"]
    # the instructor's home is closed (EACCES); where homes lie under /tmp, as here, her
    # sandbox does not even hold the path (its /tmp is her own)
    why = answer_text(failed)
    assert failed["success"] is False, failed
    assert "Permission denied" in why or "No such file or directory" in why, failed
    assert played["stored through the link"] == 0
    collected = nbformat.reads(played["collected"][ATTACKER].decode(), as_version=4)
    solutions = solution_answers(LAB)
    assert not [g for g, cell in answer_cells(collected).items() if cell.source == solutions[g]]
    assert played["scores"][ATTACKER][0] == 0


def test_no_one_takes_over_the_exchange(played):
    assert played["takeover"] == dict.fromkeys(played["takeover"], 403)
    assert played["release after the attacks"]
    files = played["files"]
    for what in (
        "list the exchange's folder",
        "read the exchange's database",
        "write into the exchange's files",
        "rename the exchange's folder",
        "read the hub's cookie secret",
        "read the hub's database",
        "list the instructor's home",
        "read the solutions",
        "read the gradebook",
        "write a submission",
    ):
        assert files[what] in DENIED, (what, files[what])
    assert files["read her own notebook"] == "done"  # the probe itself works
    assert played["her own submissions"]["success"]  # and so does her token


def test_a_broken_submission_stops_no_one_elses_collect_or_feedback(played):
    assert played["broken submission"] == 200  # the exchange stores what it is given
    unfixed = played["unfixed collect"]
    assert unfixed["returncode"] != 0, unfixed
    assert re.search(r"(NotADirectory|FileExists|IsADirectory)Error", unfixed["output"]), unfixed
    assert unfixed["collected"] == [ATTACKER], unfixed  # it stopped at mallory, the first
    assert played["collect with a broken submission"]["success"] is False
    failed = answer_text(played["collect with a broken submission"])
    assert ATTACKER in failed and "inside a file" in failed, failed
    assert played["collected first"] == sorted(HONEST)
    assert played["release feedback"]["success"] is False
    released = answer_text(played["release feedback"])
    assert "lm10-ghost" in released and "timestamp.txt" in released, released
    assert all(len(pages) == 1 for pages in played["pages"].values())


def test_the_time_of_submission_is_the_exchanges(played):
    times, due = played["times"], played["due"]
    assert all(times[s] < due for s in HONEST), (times, due)
    assert times[ATTACKER] > due, (times, due)  # not the year 2000 her timestamp.txt claimed
    late = played["late"]
    assert late[ATTACKER] > 0 and all(late[s] == 0 for s in HONEST), late
    files = played["files"]
    assert files["write into the exchange's files"] in DENIED


def test_no_one_reads_anothers_work(played):
    for what, outcome in {**played["reading"], **played["files"]}.items():
        if "alice" in what or "bob" in what:
            assert outcome in DENIED, (what, outcome)
    assert played["reading through the exchange"] == {"alice's feedback": 403}
    through_the_hub = played["reading through the hub"]
    assert all(status in (403, 404) for status in through_the_hub.values()), through_the_hub


def test_no_one_fills_the_exchange(played):
    assert played["submit past the size from her server"]["success"] is False
    failed = answer_text(played["submit past the size from her server"])
    assert "the exchange accepts at most 1 MiB" in failed, failed
    big = played["request past the size"]
    assert big in (400, 413) or str(big).startswith("connection ended"), big
    assert played["stored past the size"] == 0
    kept = played["past the quota"]
    assert [status for status, _ in kept] == [200, 200, 413], kept
    assert "MiB per student" in kept[-1][1]
    failed = played["submit past the quota from her server"]
    assert failed["success"] is False and "MiB per student" in answer_text(failed), failed
    assert played["bob submits again"]  # his own quota is untouched
    assert played["bob's files"] == [f"{LAB}.ipynb"]  # his feedback/ is not sent back


# --- strangers on one machine ---


def test_no_one_sees_anothers_processes(played):
    seen = played["processes she sees"]
    assert seen["uids"] == [account(ATTACKER).pw_uid], seen  # her sandbox's processes only
    assert seen["count"] < 20, seen


def test_no_student_reaches_the_hubs_terminal_through_her_server(played):
    """A tenth tester's (issue 39): her server's descriptors 0, 1 and 2 were the hub's own
    (LocalProcessSpawner passes them on), so her kernel read what was typed in the hub's terminal
    and wrote her bytes there raw: a title, the clipboard, a cleared screen, a forged line.
    Now each server reads nothing (/dev/null) and writes to a pipe the hub reads, logging each
    line under the server's name, plain."""
    streams, log = played["the hub's streams"], played["the hub's log"]
    assert streams["wrote"] == [1, 2], streams  # the route is live: she wrote both
    assert streams["took"]["0"] == "/dev/null", streams
    assert ADMIN_TYPED not in (streams["typed"] or ""), streams
    mine = [line for line in log.splitlines() if HER_STREAM_TEXT in line]
    assert len(mine) == 2, log[-3000:]  # once from each of her streams
    forged = [line for line in log.splitlines() if "FORGED" in line]
    assert len(forged) == 2, log[-3000:]
    for line in mine + forged:
        assert f"{ATTACKER}'s server: " in line, line  # under her name, never as the hub's
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", line), repr(line)
    assert "\x1b]52" not in log and "\x1b[2J" not in log


def test_no_request_writes_to_the_hubs_terminal_through_its_log(played):
    """An eleventh tester's (issue 39): what the hub (and tornado under it) log of a request is
    partly hers: a token's scopes that she may not have were logged as she wrote them (the
    hub's 400, "Not assigning requested scopes ..."), so escape sequences in them reached the
    hub's log, the administrator's terminal, raw (played against the hub without the fix). The
    hub's log is plain, every line of it (grading/hub/plain_logs.py in the hub's process)."""
    mine = played["her text in the hub's log"]
    reached = {  # each route is live: her text reaches the log
        "a token's scopes": any("Not assigning requested scopes" in line for line in mine),
        "a token's roles": any("No such role" in line for line in mine),
        "a request line": any(re.search(HER_HUB_MARK + r"\S{0,8}0m", line) for line in mine),
    }
    assert all(reached.values()), (reached, mine)
    for line in mine:
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", line), repr(line)


def test_no_student_floods_the_hubs_log_through_her_server(played):
    """Her server's output, flooded for FLOOD_SECONDS by a process of hers: at most 50 lines
    a second reach the hub's log (the rest counted, and the count logged), the hub reads at
    most 1 MiB a second of it, and answers meanwhile. Before the relay her lines went to the
    hub's log as they came."""
    flood = played["her flood"]
    assert flood["written"] > 1 << 20, flood["written"]  # she wrote more than the hub reads
    assert 0 < flood["lines"] <= 50 * (FLOOD_SECONDS + 6), flood["lines"]
    assert flood["left out"] and all(ATTACKER in line for line in flood["left out"]), flood
    assert len(flood["answers"]) >= FLOOD_SECONDS and max(flood["answers"]) < 5, flood["answers"]


def test_no_student_fills_the_hubs_log_over_a_day(monkeypatch):
    """The twenty-second tester's (issue 39): 50 lines of 4 KiB a second, the relay's limits,
    held all day, were 16 GiB of the hub's log a day from one student (a full disk, or the
    rotation of everything logged before). Played with the relays' own clock, 2 days of
    2,000 s each: of her flood, at most LOG_BYTES_PER_DAY a day (here 1 MiB) reaches the log,
    the hub says so, and a classmate's line a second is logged whole."""
    from grading.hub import server_output

    monkeypatch.setattr(server_output, "LOG_BYTES_PER_DAY", 1 << 20, raising=False)
    monkeypatch.setattr(server_output, "LOGGED", {}, raising=False)
    now = [0.0]
    logged = {"lm10-mallory": [0] * 2, "lm10-alice": [0] * 2}
    warnings = []

    class Log:
        def info(self, form, name, text):
            logged[name][int(now[0] // 86400)] += len(text)

        def warning(self, form, *args):
            warnings.append(form % args)

    async def play():
        relays = {}
        for name in logged:
            read, write = os.pipe()
            os.close(write)
            relays[name] = server_output.Relay(read, Log(), name, clock=lambda: now[0])
        for start in (0, 86400):
            for second in range(2000):
                now[0] = start + second
                for name, relay in relays.items():
                    relay.new_second()
                    if name == "lm10-alice":  # a line of 100 bytes a second
                        relay.line(b"a" * 100)
                        continue
                    for _ in range(server_output.LINES_PER_SECOND + 1):
                        relay.line(b"x" * server_output.LINE_BYTES)
        for relay in relays.values():
            relay.close()

    asyncio.run(play())
    for day in (0, 1):
        # her text's bytes: each line's prefix and name count against the cap too
        assert (1 << 20) - 32768 <= logged["lm10-mallory"][day] < (1 << 20) + 8192, logged
    assert sum("lm10-mallory's server: 1 MiB of its lines logged today" in w for w in warnings) == 2
    assert any(w.startswith("lm10-mallory's server:") and "lines left out" in w for w in warnings)
    assert logged["lm10-alice"] == [2000 * 100] * 2, logged


def test_no_student_fills_the_hubs_log_with_empty_or_wide_lines(monkeypatch):
    """The forty-fifth tester's (issue 39): the day's cap counted the characters of her text
    only. 50 empty lines a second (or lines of control characters, which `plain` removes) were
    4,320,000 lines and 330 MiB of the hub's log a day, each line its prefix and her name,
    counted 0 bytes; 50 lines a second of 4 KiB of bytes that are not UTF-8 (each logged as
    U+FFFD, 3 bytes) were 96 MiB counted as 32. Each line now counts its bytes as the hub writes
    them, prefix included. Played as the test above: 2 days of 2,000 s, the cap 1 MiB."""
    from grading.hub import server_output

    monkeypatch.setattr(server_output, "LOG_BYTES_PER_DAY", 1 << 20, raising=False)
    monkeypatch.setattr(server_output, "LOGGED", {}, raising=False)
    prefix = len("[I 2026-12-07 08:10:23.301 JupyterHub server_output:98] \n")
    now = [0.0]
    lines = {"lm10-mallory": b"", "lm10-eve": b"\x01\x1b", "lm10-trudy": b"\x80" * 4096}
    logged = {name: [0] * 2 for name in lines}

    class Log:
        def info(self, form, *args):  # the bytes the hub's log takes for it
            logged[args[0]][int(now[0] // 86400)] += prefix + len((form % args).encode())

        def warning(self, form, *args):
            pass

    async def play():
        relays = {}
        for name in lines:
            read, write = os.pipe()
            os.close(write)
            relays[name] = server_output.Relay(read, Log(), name, clock=lambda: now[0])
        for start in (0, 86400):
            for second in range(2000):
                now[0] = start + second
                for name, relay in relays.items():
                    relay.new_second()
                    for _ in range(server_output.LINES_PER_SECOND):
                        relay.line(lines[name])
        for relay in relays.values():
            relay.close()

    asyncio.run(play())
    for name in lines:
        for day in (0, 1):
            assert 900_000 <= logged[name][day] < (1 << 20) + 16384, (name, logged)


def test_no_one_reaches_a_classmates_kernel_over_the_loopback(played):
    """A tenth tester's (issue 39): ipykernel listened on loopback TCP twice whatever the
    kernel's transport. Its IOPub pipe printed a classmate's message into the output of the
    cell running in alice's notebook; and once alice had turned JupyterLab's debugger on and off,
    debugpy took any user's process as its debug client: mallory evaluated code in alice's
    kernel, as alice. The hub's kernel (grading/hub/kernel.py) has its pipe on ipc in the
    server's private /tmp and no debugger."""
    seen = {
        what: played[what]
        for what in (
            "alice's kernel info",
            "her push",
            "alice's cell while she pushed",
            "alice's child",
            "alice's debugger",
            "her debug clients",
            "debugged",
        )
    }
    shown = json.dumps(seen, default=str)  # whole, where an assertion fails
    assert "debugger" not in seen["alice's kernel info"]["supported_features"], shown
    assert seen["her push"]["sent"] >= 1, shown  # she reached some listener
    while_pushed = seen["alice's cell while she pushed"]
    assert "ALICE-WAITS" in while_pushed["stdout"], shown  # the cell ran meanwhile
    assert "MALLORY" not in json.dumps(while_pushed), shown
    assert "ALICE-CHILD" in seen["alice's child"]["stdout"], shown  # the pipe still works
    assert seen["her debug clients"]["attached"] == 0, shown
    assert seen["her debug clients"]["evaluated"] == 0, shown
    assert seen["debugged"] is False, shown


def test_no_student_makes_a_user_namespace(played):
    # refused by the sandbox (ENOSPC: bubblewrap's --disable-userns sets her namespace's limit
    # to none)
    assert played["a user namespace of her own"] in ("ENOSPC", "EPERM"), played[
        "a user namespace of her own"
    ]


def test_no_submission_makes_a_user_namespace_while_the_instructor_grades_it(played):
    """An eleventh tester's (issue 39): her answer runs, as the instructor's user, in the
    grading sandbox inside the instructor's server, which may make user namespaces (its
    sandbox is bubblewrap): her code made one of its own there, "root" in it (played against
    the hub without the fix). Now refused, and nothing else is there for it: no network (the
    hub's port), no exchange socket, no instructor's home."""
    seen = played["graded as the instructor"]
    assert len(seen) == 1, seen  # her line is in her autograded notebook: the route is live
    report = json.loads(seen[0].split(" ", 1)[1])
    assert report["a user namespace"] in ("ENOSPC", "EPERM"), report
    assert report["the hub's port"] in ("ECONNREFUSED", "ENETUNREACH"), report
    assert report["the exchange's socket"] == "absent", report
    assert report["the instructor's home"] == "absent", report


def left_behind():
    """The processes of the machine that her probe named (LEFT_BEHIND), each ended once
    counted (a play's, not to outlive it)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_bytes().strip() == LEFT_BEHIND:
                found.append(int(entry.name))
                os.kill(int(entry.name), signal.SIGKILL)
        except OSError:
            pass
    return found


def test_no_submission_reaches_the_instructors_server_around_its_grading(played):
    """The eighty-fourth hub tester's unplayed item (issue 39), played by the eighty-sixth:
    her first answer, autograded by the instructor on the hub (her uid, the grading sandbox
    inside her server), looks for the server around it: no hub token in any environment it
    reads, no runtime folder of the server's (its jpserver-*.json), nothing writable but the
    sandbox's own home, /tmp and /dev/shm, and no process of hers left on the machine once
    grading is done."""
    seen = played["graded as the instructor"]
    assert len(seen) == 1, seen  # her line is in her autograded notebook: the route is live
    report = json.loads(seen[0].split(" ", 1)[1])
    shown = json.dumps(report)
    assert report["processes"] > 0 and report["hub tokens"] == 0, shown
    assert report["the server's runtime folder"] == "absent", shown
    # the sandbox's own (grading/host/sandbox.py: its home, /tmp and /dev/shm, each private)
    assert "/tmp" in report["written"], shown  # the probe wrote: the route is live
    assert set(report["written"]) <= {"/home/student", "/tmp", "/dev/shm"}, shown
    assert played["left behind while graded"] == [], played["left behind while graded"]


def keyring_report(seen, planted):
    """The route is live (she listed the planted key, and at least one user keyring of her
    uid), and nothing of the kernel's keyrings answered her."""
    serial, secret = planted
    assert serial > 0, planted  # the test's own key, planted outside any sandbox
    assert seen is not None  # her probe ran and printed
    assert KEY_DESCRIPTION in seen["read"], seen  # she lists the key (/proc/keys: its owner's)
    assert secret not in json.dumps(seen), seen
    assert seen["read"][KEY_DESCRIPTION] == "ENOSYS", seen
    assert seen["her user keyring"] == "ENOSYS", seen
    assert seen["linked"] and set(seen["linked"]) == {"ENOSYS"}, seen


def test_no_student_reads_the_keys_left_under_her_uid(played):
    """A twelfth tester's (issue 39): the kernel's keyrings belong to uids, not namespaces, and
    a uid's user keyring in the machine's namespace lives until a reboot, past its servers,
    sessions and `userdel`. A key left there (by the account that had her uid before her, or
    her own login's tools: possessor-only, as `keyctl padd` makes it) was hers to read from her
    kernel: she linked the keyring into her session's and possessed it (played against the hub
    without the fix: the key's text in her report). Now every keyring call in a server's
    sandbox fails (grading/hub/no_keyrings.py, bubblewrap's --seccomp)."""
    keyring_report(played["keys seen from her kernel"], played["her uid's key"])


def test_no_submission_reads_the_instructors_keys_while_she_grades_it(played):
    """A twelfth tester's (issue 39): her answer, autograded by the instructor on the hub, runs
    as the instructor's uid (in the grading sandbox inside the instructor's server): it linked
    the instructor's user keyring into its own session keyring and read every key in it (what
    her logins' tools keep there: a Kerberos ticket in a `KEYRING:` cache, a stored passphrase;
    played against the hub without the fix: the instructor's key in her autograded notebook).
    The instructor's server, and so the grading sandbox inside it, runs under the same filter."""
    keyring_report(played["keys seen while graded"], played["the instructor's key"])


def test_a_removed_account_keeps_nothing_of_the_hub(played):
    """A twelfth tester's (issue 39): JupyterHub asks the system's accounts at login only, so a
    student removed from the machine (`userdel`) kept her hub user, her cookie and the tokens
    she had made, the exchange's access among them, and a name given to someone else later is
    that same hub user, her tokens with it (played against the hub without the fix: 200 with
    each token). The hub asks again at every request, at most every minute
    (jupyterhub_config.py's CourseAccounts): each token refused, and the log says what to do."""
    gone = played["a removed account's tokens"]
    assert gone["the admin asks about her"] == 200, gone  # the hub user is still there
    assert gone["the exchange's access"] == 403, gone
    assert gone["all she may do"] == 403, gone
    assert played["a removed account, in the hub's log"], "the hub's log says nothing of her"


def test_no_server_answers_a_stranger_on_the_loopback(played):
    """An eleventh tester's (issue 39): every other user's loopback listener (the servers'
    ports, which the hub holds, the proxy's, the hub's), asked directly from her kernel, past
    the proxy, without any credential, for each user's files, kernels, terminals, settings,
    grades and metrics, as each user's server and as the hub: nothing answers but a login, a
    redirect or a refusal."""
    asked = played["asked without a credential"]
    assert asked["ports"] >= 3 + len(PEOPLE), asked  # each answers HTTP
    refused = sum(n for status, n in asked["statuses"].items() if int(status) in (302, 403, 405))
    assert refused > 0, asked
    assert asked["answered"] == [], asked["answered"]


def test_no_one_listens_to_anothers_kernel(played):
    assert played["alice's kernel"]["transport"] == "ipc", played["alice's kernel"]
    assert played["alice's kernel"]["ip"].startswith("/tmp/"), played["alice's kernel"]
    heard = played["eavesdropping"]
    assert heard["listeners"] >= 2, heard  # she found listeners (the hub, the servers)...
    assert heard["heard"] == [], heard  # ...and none of them told her alice's cells
    # alice's running kernel adds no TCP listener: its five channels are on ipc, and so is
    # ipykernel's PULL socket for forked children's output (iostream.IOPubThread, which
    # ipykernel binds to tcp://127.0.0.1 whatever the transport: the course's kernel,
    # grading/hub/kernel.py, binds it in the server's private /tmp; a tenth tester's attack,
    # test_no_one_reaches_a_classmates_kernel_over_the_loopback). Her server's own port is the
    # hub's socket (uid 0), handed to her server: her uid listens nowhere.
    assert played["alice's server port's listeners"] == [0], played[
        "alice's server port's listeners"
    ]
    before, during = played["alice's listeners before her kernel"], played["alice's listeners"]
    assert before == [] and during == [], (before, during)


def test_no_one_plants_a_cache_or_temporary_file_for_another(played):
    # her own /tmp, /var/tmp and /dev/shm take them
    planted = played["planted"]
    assert planted == [f"{t}/torchinductor_lm10-alice" for t in PLANTED], planted
    caches = played["alice's caches"]
    assert caches["seen"] == [], caches
    assert caches["tmp"] == "/tmp", caches  # her private /tmp
    home = account("lm10-alice").pw_dir
    assert caches["cache"].startswith(f"{home}/.cache/"), caches
    assert played["left in shared folders"] == []


def test_no_one_takes_the_exchanges_address(played):
    for what, outcome in played["exchange address from her kernel"].items():
        assert outcome in DENIED | {"EROFS"}, (what, outcome)
    for what, outcome in played["exchange address from her shell"].items():
        assert outcome in DENIED, (what, outcome)
    assert played["took the exchange"] is False


def test_nothing_of_a_student_outlives_her_server(played):
    assert played["daemon started"]
    assert played["her processes before"] >= 3  # bwrap, the server, the kernel, her process
    assert played["her processes after"] == [], played["her processes after"]
    assert played["still beating"] is False
    lasted = played["her stopped server's exchange token"]
    assert lasted is not None and lasted <= 10, lasted


def test_the_exchange_credential_opens_nothing_else(played):
    scopes = played["exchange token's scopes"]
    # besides the exchange, only the identity every token of the hub carries
    identity = {f"read:users:{what}!user={INSTRUCTOR}" for what in ("name", "groups")}
    assert ACCESS in scopes and set(scopes) - {ACCESS} <= identity, scopes
    opened = played["exchange token on the instructor's server"]
    assert all(status in (302, 403, 404) for status in opened.values()), opened
    assert played["the instructor's server token at the exchange"] == 403


def test_revocation_reaches_the_exchange_within_seconds(played):
    for what in ("revoked token", "expired token"):
        first, lasted = played[what]
        assert first == 200, (what, first)
        assert lasted is not None and lasted <= 8, (what, lasted)


def test_names_and_files_count_against_the_exchange(played):
    status, message = played["too many files"]
    assert status == 400 and "at most 300" in message, (status, message)
    status, message = played["a long name"]
    assert status == 400 and "longer than 255 bytes" in message, (status, message)
    status, message = played["empty files with long names"]  # no content, still counted
    assert status == 413 and "250 files" in message, (status, message)
    status, message = played["files nested deeper than the parser goes"]
    assert status == 400 and "cannot be JSON decoded" in message, (status, message)
    for name, (status, message) in played["hostile names"].items():
        assert status == 400 and "control or formatting" in message, (name, status, message)
        assert message.isascii() and message.isprintable(), message
        assert ascii(name) in message, (name, message)


def test_collect_prints_names_escaped():
    exchange = exchange_module()
    for name in HOSTILE_NAMES:
        entry = {"path": name, "content": ""}
        with pytest.raises(exchange.Refused) as refused:
            exchange.checked_files([entry], 10)
        assert str(refused.value).isascii() and str(refused.value).isprintable()
        assert ascii(name) in str(refused.value)
        with pytest.raises(exchange.Refused) as refused:
            exchange.plain_name(name)
        assert str(refused.value).isascii() and str(refused.value).isprintable()
    kept, dropped = exchange.checked_files([{"path": "timestamp.txt/x", "content": ""}], 10)
    assert kept == {} and dropped == ["timestamp.txt/x"]


# A Jupyter application that logs what nbgrader logs of a submission (a grade id), then a
# traceback whose message is the same text
LOGGING_APP = """
import sys
from jupyter_core.application import JupyterApp
class Logs(JupyterApp):
    name = "lm10-logs"
app = Logs()
app.initialize([])
app.log.warning("Cell '%s' does not exist in the database", sys.argv[1])
try:
    raise ValueError(sys.argv[1])
except ValueError:
    app.log.exception("failed")
"""


def test_the_instructors_applications_log_a_submissions_text_plain(tmp_path):
    def logged(config_path):
        done = subprocess.run(
            [sys.executable, "-c", LOGGING_APP, HER_GRADE_ID],
            env={
                **os.environ,
                "JUPYTER_CONFIG_PATH": str(config_path),
                "JUPYTER_CONFIG_DIR": str(tmp_path / "own"),
            },
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stderr

    plain = logged(ROOT / "grading" / "hub" / "instructor")
    assert plain.count("all 13.0 / 13.0") == 2, plain  # the message and the traceback's
    assert "does not exist in the database" in plain and "ValueError" in plain, plain
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", plain), repr(plain)
    # the control: without the instructor's configuration, her bytes reach the terminal
    (tmp_path / "none").mkdir()
    raw = logged(tmp_path / "none")
    assert raw.count("\x1b]0;graded\x07\x1b[2J") == 2, repr(raw)


def test_nbgrader_logs_a_submissions_text_plain_in_any_terminal(tmp_path):
    """A tenth tester's (issue 39): `nbgrader autograde` of her notebook in the course's
    grading folder, from a terminal whose JUPYTER_CONFIG_PATH names nothing of the course (the
    instructor's own machine outside `make lab`, or an ssh session on the hub; `make feedback`,
    `make grades` and `make release` run nbgrader the same way): her grade id of escape
    sequences reached that terminal raw, since only the instructor's jupyter_config.py made logs
    plain. The course's nbgrader_config.py, which every nbgrader command of the course reads,
    now does too. The control: the same command with the two plain_logs lines taken out of it."""
    grading = course_copy(tmp_path / "course", [LAB])
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "JUPYTER_CONFIG_PATH": str(tmp_path / "none"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "own"),
    }

    def nbgrader(*argv):
        done = subprocess.run(
            [str(BIN / "nbgrader"), *argv],
            cwd=grading,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout + done.stderr

    nbgrader("generate_assignment", LAB, "--force")
    hers = nbformat.read(grading.parent / "labs" / LAB / f"{LAB}.ipynb", as_version=4)
    hers.cells.append(nbformat.v4.new_code_cell("# an ordinary cell"))
    hers.cells[-1].metadata["nbgrader"] = {
        "grade_id": HER_GRADE_ID,
        **{"grade": False, "solution": False, "locked": False, "schema_version": 3},
    }
    (grading / "submitted" / ATTACKER / LAB).mkdir(parents=True)
    nbformat.write(hers, grading / "submitted" / ATTACKER / LAB / f"{LAB}.ipynb")
    autograde = ("autograde", LAB, "--student", ATTACKER, "--force")

    plain = nbgrader(*autograde)
    assert "all 13.0 / 13.0' does not exist in the database" in plain, plain[-3000:]
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", plain), repr(plain[-3000:])
    config = grading / "nbgrader_config.py"
    source = config.read_text()
    without = source.replace("plain_logs.install()\n", "").replace(
        "from grading.hub import plain_logs\n", ""
    )
    assert without.count("\n") == source.count("\n") - 2  # both lines were there
    config.write_text(without)
    raw = nbgrader(*autograde)
    assert "\x1b]0;graded\x07\x1b[2J" in raw, repr(raw[-3000:])


def test_collect_leaves_out_git_metadata(tmp_path):
    """A submission's git metadata would run the student's command in the instructor's git."""
    exchange = exchange_module()
    ran = tmp_path / "ran"
    payload = git_metadata(ran)
    files = [
        {"path": name, "content": base64.b64encode(content).decode()}
        for name, content in {**payload, "LAB.ipynb": b"{}"}.items()
    ]
    kept, dropped = exchange.checked_files(files, 100)
    assert sorted(kept) == ["LAB.ipynb", "data/config", "data/objects/x", "data/refs/x"]
    assert sorted(dropped) == sorted(n for n in payload if ".git" in n or n.endswith("HEAD"))
    for other in (".GIT/config", "a/.hg/hgrc", ".git"):
        assert exchange.checked_files([{"path": other, "content": ""}], 1) == ({}, [other])
    # the control: every file written, git runs her command; what collect writes, it does not
    git = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    for folder, written in (("all", payload), ("collected", kept)):
        exchange.write_tree(tmp_path / folder, written)
        for where in (".", "data"):
            subprocess.run(
                ["git", "status", "--short"],
                cwd=tmp_path / folder / where,
                env=git,
                capture_output=True,
                timeout=60,
            )
        assert ran.exists() is (folder == "all"), folder
        ran.unlink(missing_ok=True)


def test_collect_leaves_out_nbgrader_configuration(tmp_path):
    """nbgrader's commands load nbgrader_config.py from the folder they run in: one in a
    collected folder ran the student's code in the instructor's `nbgrader validate` there (the
    control, on the files as submitted); collect leaves it out, in any folder and case."""
    exchange = exchange_module()
    ran = tmp_path / "mallory-ran-this"
    config = f"open({str(ran)!r}, 'w').write('ran')\n".encode()
    submitted = {
        f"{LAB}.ipynb": b"{}",
        "nbgrader_config.py": config,
        "data/NBGRADER_CONFIG.PY": config,
        "data/nbgrader_config.json": b"{}",
    }
    entries = [
        {"path": name, "content": base64.b64encode(content).decode()}
        for name, content in submitted.items()
    ]
    kept, dropped = exchange.checked_files(entries, 10)
    assert sorted(kept) == [f"{LAB}.ipynb"], kept
    assert sorted(dropped) == sorted(set(submitted) - {f"{LAB}.ipynb"}), dropped
    nbgrader = Path(sys.executable).parent / "nbgrader"
    for folder, files in {"as submitted": submitted, "collected": kept}.items():
        exchange.write_tree(tmp_path / folder, files)
        subprocess.run(
            [nbgrader, "validate", f"{LAB}.ipynb"],
            cwd=tmp_path / folder,
            capture_output=True,
            timeout=120,
        )
        assert ran.exists() is (folder == "as submitted"), folder
        ran.unlink(missing_ok=True)


def test_no_submission_runs_a_command_in_the_instructors_git(played):
    assert played["collect again"]["success"], played["collect again"]
    assert played["git metadata collected"] == [
        "data/objects",
        "data/objects/x",
        "data/refs",
        "data/refs/x",
    ]
    assert played["the instructor's git in her folder"], played  # git ran there
    assert played["her command ran as the instructor"] is False


def test_no_submission_runs_when_the_instructor_opens_it(played):
    opened = played["opened"]
    assert opened["collected"], opened  # her launchers lie beside her notebook
    assert opened["her mark in the instructor's home"] is False, opened
    assert opened["the kernel's path"]["folder on sys.path"] == [], opened


def test_no_submission_reads_the_instructors_files_in_her_jupyterlab(played):
    chart = played["her chart"]
    assert chart["shown"], chart  # the instructor's JupyterLab showed her notebook
    assert chart["heard"] == [], chart  # and nothing reached the student's address


def test_no_submission_runs_in_the_instructors_nbconvert(played):
    converted = played["converted"]
    assert converted["collected"] == [True, True], converted  # her module and template
    ran = {"her module": True, "her template": True}
    mine = converted["in her terminal"]
    assert mine == {
        "exit": {c: 0 for c in mine["exit"]},
        "her module": False,
        "her template": False,
    }, converted
    exported = converted["exported from her JupyterLab"]
    assert exported == {"status": 200, "html": True, "her module": False, "her template": False}, (
        converted
    )
    # the control: without the instructor's configuration, her files ran as the instructor
    assert converted["after autograding"] == {"her module": False, "her template": False}, converted
    unconfigured = converted["without the instructor's configuration"]
    assert {k: unconfigured[k] for k in ran} == ran, converted


def test_no_submission_runs_in_the_instructors_validate(played):
    validate = played["validate"]
    assert validate["collected"], validate  # her notebook reached the instructor's course
    assert validate["her notebook"]["success"] is False, validate
    assert "Not validated" in validate["her notebook"]["value"], validate
    assert validate["her mark in the instructor's home"] is False, validate
    # the course's own notebooks still validate, in her kernel (the control)
    assert validate["the course's own notebook"]["success"] is True, validate
    assert validate["the course's own ran"] is True, validate


def test_no_submission_writes_to_the_instructors_terminal_through_a_log(played):
    # what nbgrader's autograde logged of her notebook (the formgrader's answer: the lines
    # `nbgrader autograde` writes in the instructor's terminal): her id's text, plain
    answer = played["her grade id autograded"]
    log = (answer.get("log") or "") + (answer.get("error") or "")
    assert "does not exist in the database" in log, log  # the route: her id reached the log
    assert "all 13.0 / 13.0" in log, log
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", log), repr(log)


def test_no_autograded_notebook_is_trusted_by_the_instructor(played):
    trusted = played["trusted by the instructor"]
    # every student's autograded notebook opens untrusted in the instructor's JupyterLab: her
    # outputs shown sanitised, none of her scripts run there
    assert trusted["autograded"] == ["False"] * len(STUDENTS), trusted
    # the control: a notebook the instructor signed is trusted, as her notary reads it
    assert trusted["her own signed copy"] == (0, ["True"]), trusted


def test_no_page_carries_markup_from_its_address(played):
    assert played["her markup in a page's address"] == {}


# --- shared limits, the hub's origin, a server's port ---


def test_no_one_fills_the_machines_memory_through_temporary_folders(played):
    """Each of her temporary folders stops at its cap; bubblewrap's /dev, a tmpfs of half the
    machine's memory that she could fill before (a fourteenth tester's), is read-only. Their
    files are not capped (tmpfs's nr_inodes, which bwrap does not set): the hub's log says
    so with the number."""
    filled = dict(played["filled temporary folders"])
    assert filled.pop("/dev") == [0, "EROFS"], filled
    empty = filled.pop("empty files in a full /tmp")
    assert set(filled) == {"/tmp", "/var/tmp", "/dev/shm"}, filled
    for top, (written, why) in filled.items():
        assert why == "ENOSPC" and written <= TMPFS_MIB, (top, written, why)
    assert empty == 2000  # files beyond the size: kernel memory, flagged
    log = played["hub log at start"]
    files = os.sysconf("SC_PHYS_PAGES") // 2
    assert f"but not their files: each takes up to {files:,} empty files" in log, log[-3000:]


def test_no_one_takes_every_process_of_the_machine(played):
    bomb = played["thread bomb"]
    assert bomb["refused"] and bomb["threads"] < MAX_TASKS, bomb
    assert played["alice starts threads during the bomb"] is True


def test_no_one_takes_every_terminal_of_the_machine(played):
    """A sixteenth tester's: every server's devpts (bwrap's --dev) drew on the machine's one
    pool of pseudo-terminals, and her kernel held 3,071 of them (ENOSPC), after which no one
    else's terminal could open (alice's, the instructor's) until her server ended. Each server
    now has a devpts of its own with at most LM10_SERVER_PTYS (grading/hub/ptys.py)."""
    held, why = played["pseudo-terminals she holds"]
    assert why == "ENOSPC" and held <= SERVER_PTYS, (held, why)
    assert played["alice's pseudo-terminal meanwhile"].startswith("/dev/pts/"), played


def test_no_one_takes_the_machines_native_aio(played):
    """A sixteenth tester's: io_setup takes each context's events from one pool of the
    machine's (fs.aio-max-nr, 65,536 here); her kernel took it with 16 contexts of 4,096, and
    no other process of the machine could set one up (EAGAIN) until her server ended. Every
    server's filter now refuses io_setup (grading/hub/no_keyrings.py): ENOSYS, none made."""
    assert played["native aio contexts she sets up"] == [0, "ENOSYS"], played


def test_no_one_sets_up_an_io_uring(played):
    """The eighteenth tester's small task: io_uring draws on no pool of the machine's, but is
    the kernel's largest surface open to unprivileged calls, and nothing the course runs in a
    server uses it (JupyterLab, a kernel, git, pip: traced). Every server's filter refuses
    io_uring_setup, io_uring_enter and io_uring_register (grading/hub/no_keyrings.py): ENOSYS."""
    assert played["an io_uring she sets up"] == "ENOSYS", played["an io_uring she sets up"]


@pytest.mark.skipif(
    not any(
        os.access(p, os.W_OK)
        for p in (Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup/cpu,cpuacct"))
    ),
    reason="a CPU cgroup per server needs cgroup v1's cpu hierarchy (the hub's log says so)",
)
def test_no_one_takes_the_cores_by_making_sessions(played):
    """The nineteenth tester's: every server is a session, and in the machine's root CPU cgroup
    the scheduler gives each session (autogroup) a share of the cores; her 200 spinning
    processes, each a session of its own, took 200 shares, and alice's kernel crawled. Each
    student's server now runs in a CPU cgroup of its own (grading/hub/jupyterhub_config.py,
    `cpu_group`), one share however many sessions it makes."""
    assert played["sessions she spins"] == 200, played["sessions she spins"]
    alone, beside = played["alice's sum alone"], played["alice's sum beside her sessions"]
    assert beside < max(3.0, 8 * alone), (alone, beside)
    # nor a real-time policy or a nice value below 0 (the twentieth tester's): her server's
    # limits are 0 whatever the hub's, which are 0 here too (no process of this machine may
    # raise a hard limit), so this part passed without the fix here as well
    assert played["her priority limits"] == [[0, 0], [0, 0]], played["her priority limits"]


def test_no_one_sees_who_else_is_on_the_hub_through_the_cgroups(played):
    """The twentieth tester's: each student's CPU cgroup (the nineteenth's fix) was a folder of
    the machine's cgroup file system, which every server could read: mallory listed
    lm10-server-lm10-alice and lm10-server-lm10-bob and counted their servers' threads, so
    who was on the hub, and how busy, to the second. Every server now sees an empty,
    read-only /sys/fs/cgroup (grading/hub/jupyterhub_config.py, server_command)."""
    assert played["classmates' cgroups she reads"] == [], played["classmates' cgroups she reads"]


def test_no_one_floods_the_exchange_with_connections(played):
    assert sum(played["flood"]) > 1000, played["flood"]  # she connected that many times
    before, limit = played["exchange's descriptors before the flood"]
    during, _ = played["exchange's descriptors during the flood"]
    # it keeps 16 of hers open (--connections-per-user), whatever she opens; a new one is
    # accepted to learn whose it is (SO_PEERCRED) and closed at once in the same call
    # (PerUserServer.handle_stream), so the count may catch that one too (17 was counted once,
    # in a clean-clone run of 2026-12-07)
    assert during - before <= 16 + 1, (before, during, limit, played["flood"])
    status, seconds = played["alice's exchange during the flood"]
    assert status == 200 and seconds < 10, (status, seconds)
    assert played["alice's exchange after the flood"] == 200


def test_no_one_spends_the_exchanges_time_on_bodies_it_refuses(played):
    """The thirty-sixth tester's: tornado read and form-decoded a request's whole body before
    the exchange read its token (0.3 s of its one thread per 16 MiB), for anyone, token or
    not, so one student's 16 connections kept it busy and a classmate's last-minute submission
    waited. A request with a body is now answered before the body unless its token is good
    and its user's bodies of the last minute leave room (grading/hub/ngshare_service.py,
    BodyAfterToken)."""
    bodies = played["bodies to the exchange"]
    # no token: 403 with no body sent (before: no answer, it waited for the body)
    assert bodies["no token"] == "403", bodies
    # her own token: bodies of the largest size until LM10_NGSHARE_MIB_PER_MINUTE is spent
    hers, per_minute = bodies["hers"], float(EXCHANGE_LIMITS["LM10_NGSHARE_MIB_PER_MINUTE"])
    assert hers[-1] == "429" and "429" not in hers[:-1], hers
    assert len(hers) <= per_minute + 1, hers
    assert bodies["headers alone"] == "429", bodies  # refused before any body
    # her budget is hers: alice's request is read, and ngshare answers it itself
    answer = played["alice's body after hers"]
    assert "assignment" in answer["message"].lower(), answer


def test_no_students_page_reaches_the_instructors_server(played):
    status, is_hers = played["her page, without a login"]
    assert status == 200 and is_hers  # her server is hers: it serves what she likes, to anyone
    verdict = played["the instructor opens her page"]
    assert verdict.startswith("BLOCKED"), verdict


def images_on(page, addresses):
    """An image of each address put in `page`, as her JupyterLab shows a notebook's (a GET with
    the page's cookies), waited for until each has loaded or failed."""
    page.evaluate(
        """addresses => Promise.all(addresses.map(a => new Promise(done => {
            const image = document.createElement('img');
            image.onload = image.onerror = done;
            image.src = a;
            document.body.appendChild(image);
        })))""",
        addresses,
    )


def test_no_image_in_a_notebook_logs_the_instructor_out(hub, machine):
    """A student's notebook the instructor opens in her JupyterLab (whose sanitiser keeps images
    from any address) holds `![](https://<the hub>/hub/logout)`: JupyterHub's `LogoutHandler`
    logged out on any GET, an image's included, and her server's `/logout` (an image of
    `/user/<instructor>/logout`) cleared its cookie and redirected there. Her own "Log out"
    still works: a navigation (or the page's button, where the browser says nothing of what
    asked; grading/hub/asked_logout.py)."""
    logout = f"{hub.url}/hub/logout"
    with logged_in(hub, INSTRUCTOR, machine.passwords[INSTRUCTOR]) as page:
        page.goto(hub.url_of(f"/user/{INSTRUCTOR}/lab"), timeout=120_000)
        images_on(page, [logout, "/hub/logout", f"/user/{INSTRUCTOR}/logout"])
        server = page.evaluate(f"fetch('/user/{INSTRUCTOR}/api/contents').then(r => r.status)")
        assert server == 200, server  # her server's cookie kept
        page.goto(f"{hub.url}/hub/home", timeout=120_000)
        assert "/hub/login" not in page.url, page.url  # still logged in to the hub
        page.goto(logout, timeout=120_000)  # over http the browser sends no Sec-Fetch-Dest
        if "/hub/login" not in page.url:
            page.click("#logout_submit")
            page.wait_for_url(re.compile(r".*/hub/login.*"), timeout=120_000)
        page.goto(f"{hub.url}/hub/home", timeout=120_000)
        assert "/hub/login" in page.url, page.url  # logged out when she asked


def test_no_image_in_a_notebook_reroots_the_formgrader(hub, machine):
    """nbgrader's `/formgrader?path=<folder>` re-rooted the formgrader on a GET and ran the
    folder's `nbgrader_config.py` in the instructor's server: `![](/user/<instructor>/formgrader
    ?path=/home/<student>/x)` in a notebook she opened in her JupyterLab ran a file of the
    student's (who had opened her home to everyone: on a real install the instructor's server
    sees /home; this test's homes lie under /tmp, which the servers' sandboxes replace, so the
    folder here is one of the instructor's own). grading/instructor/formgrader_csp.py refuses
    a `path`; the formgrader itself still opens."""
    folder = machine.homes / INSTRUCTOR / "elsewhere"
    marker = machine.homes / INSTRUCTOR / "ran-as"
    folder.mkdir(mode=0o755)
    (folder / "nbgrader_config.py").write_text(
        f"import os, pathlib\npathlib.Path({str(marker)!r}).write_text(str(os.getuid()))\n"
    )
    give(folder, INSTRUCTOR)
    with logged_in(hub, INSTRUCTOR, machine.passwords[INSTRUCTOR]) as page:
        page.goto(hub.url_of(f"/user/{INSTRUCTOR}/lab"), timeout=120_000)
        images_on(page, [f"/user/{INSTRUCTOR}/formgrader?path={folder}"])
        asked = page.evaluate(
            "address => fetch(address, {redirect: 'manual'}).then(r => r.status)",
            f"/user/{INSTRUCTOR}/formgrader?path={folder}",
        )
        time.sleep(1)
        assert not marker.exists(), f"ran as uid {marker.read_text()}"
        assert asked == 403, asked
        shown = page.evaluate(f"fetch('/user/{INSTRUCTOR}/formgrader').then(r => r.status)")
        assert shown == 200, shown  # the formgrader, at its own root


def test_no_one_answers_for_anothers_server(played):
    assert played["alice's old port"] in played["squatted"], played["squatted"]
    again = played["alice starts again"]
    assert again["started"] and again["answer"] == 200, again  # her server answers...
    assert again["her port's listeners"] == [0], again  # ...on the hub's socket
    pinned = played["alice starts on her old port"]
    assert not pinned["started"], pinned  # the hub would not route to mallory's listener
    assert played["heard by mallory"] == [], played["heard by mallory"]
    assert "listens on port" in played["hub log"], played["hub log"][-3000:]


def test_no_link_pulls_anything_but_the_lessons_into_a_plain_folder(played):
    links = played["links"]
    seen = {
        what: played[what]
        for what in (
            "lessons in alice's home",
            "mallory's spec in alice's home",
            "mallory's mark in alice's home",  # her command ran at alice's next kernel
            "a hidden folder pulled",
            "lessons in the instructor's course",
        )
    }
    # the course's link works; a classmate's repository, a hidden folder, an instructor's
    # server: refused, and nothing of them arrived
    assert seen == {what: what == "lessons in alice's home" for what in seen}, (seen, links)
    for what in (
        "mallory's kernel spec for alice",
        "the lessons into a hidden folder",
        "the instructor opens the lessons",
    ):
        assert "not pulled" in links[what], (what, links[what])


def test_a_servers_socket_is_held_by_the_hub_and_its_user_only(played):
    holders = played["listening sockets' holders"]
    # every server listens on a socket of the hub's, handed to it: root and its user hold it
    for person in PEOPLE:
        assert [0, person] in holders.values(), (person, holders)
    # no socket that someone listens on is held by the processes of two different people
    assert all(len([h for h in who if h != 0]) == 1 for who in holders.values()), holders


def test_no_one_takes_a_servers_port_when_it_ends(played):
    assert played["watching alice's port"] is True
    taken = played["taken when free"]
    assert taken["why"] == "EADDRINUSE", taken  # she tried, and the port was held
    assert taken["heard"] == [], taken  # nothing alice's browser sent reached her
    # she got the port only once the hub had noticed the end of alice's server (and so
    # removed its route, then let the port go), never while the proxy still sent there
    noticed = played["the hub noticed alice's server ended"]
    assert noticed, "the hub's log does not say that alice's server stopped"
    if taken["taken"]:
        local = datetime.fromtimestamp(taken["taken"]).strftime("%Y-%m-%d %H:%M:%S.%f")
        assert local >= noticed, (local, noticed, played["alice's browser after her server ended"])


def test_a_students_hub_token_reaches_no_one_else(played):
    mine = played["her hub token"]
    # everything she may do is about herself (and the exchange, which decides the rest)
    assert all(
        scope.endswith((f"!user={ATTACKER}", f"!server={ATTACKER}/")) or scope == ACCESS
        for scope in mine["scopes"]
    ), mine["scopes"]
    assert mine["users she lists"] == 403 and mine["services she lists"] == 403, mine
    others = played["her hub token against others"]
    assert others.pop("a second, named server") == 400, others  # named servers are off
    assert all(status in (403, 404) for status in others.values()), others
    assert played["the proxy's API from her kernel"] == 403


def test_no_one_gets_a_classmates_token_through_her_servers_oauth_client(played):
    oauth = played["her server's OAuth client"]
    alice = oauth["alice authorises it"]
    assert alice == {"status": 403, "to": "", "code": False}, oauth
    elsewhere = oauth["with a callback elsewhere"]
    assert elsewhere["status"] >= 400 and not elsewhere["code"], oauth
    assert "mallory.invalid" not in elsewhere["to"], oauth
    # the control: her own authorisation reaches her server's callback with a code
    mine = oauth["she authorises it"]
    assert mine == {"status": 302, "to": oauth["callback"], "code": True}, oauth


def test_what_one_machine_does_not_bound_is_flagged(played):
    log = played["hub log at start"]
    assert "NOT BOUNDED on this machine: memory" in log, log[-3000:]
    assert "NOT BOUNDED on this machine: cookies: the hub is served over plain http" in log
    # a student who binds every ephemeral port stops every start and the proxy's connections
    assert "NOT BOUNDED on this machine: ports and open files: every server shares" in log, log
    mounts = Path("/proc/self/mountinfo").read_text()
    if not any(q in mounts for q in ("usrquota", "usrjquota", "prjquota", "uquota")):
        assert "NOT BOUNDED on this machine: disk: no user quota" in log, log[-3000:]


def test_the_machines_socket_buffers_are_flagged(played):
    """A thirteenth tester's (issue 39): the kernel's one pool of TCP buffer memory
    (net.ipv4.tcp_mem), shared by every socket of the machine, whoever's. From her kernel, each
    loopback connection she keeps full and unread charges it; one process of hers may open
    enough of them to take it, and then every connection of the machine stalls (the proxy's to
    every server). No setting of the hub's bounds it on one machine: its log says so."""
    seen = played["the machine's socket buffers"]
    most = int(Path("/proc/sys/net/ipv4/tcp_mem").read_text().split()[2])
    each = seen["pages per connection"]
    assert each > 0, seen  # her connections draw on the machine's pool
    # her processes may open enough of them to take it all (here one process may)
    assert MAX_TASKS * seen["descriptors"] // 2 * each > most, (seen, most)
    log = played["hub log at start"]
    assert "NOT BOUNDED on this machine: kernel socket buffers: every TCP connection" in log
    assert f"net.ipv4.tcp_mem: {most * seen['page'] >> 20} MiB at most" in log, log[-4000:]


def test_no_link_runs_a_classmates_script(played):
    pages = played["her script in a page"]
    opened = {who: played[who] for who in ("the instructor opens her link", "alice opens her link")}
    assert not any("READ" in title for title in opened.values()), (opened, pages)
    # the course's own link is a page as before, her script shown as text; every other link
    # is refused before a page is made, and no page carries her script as HTML
    assert pages.pop("alice's link page, the lessons") == (200, False), pages
    assert pages.pop("alice's formgrader page")[0] == 404, pages  # no formgrader for students
    assert pages == {what: (403, False) for what in pages}, pages


def test_no_variant_of_a_link_passes_the_guard(played):
    for what, (event, may) in played["link variants"].items():
        if may:
            assert '"finished"' in event, (what, event)
        else:
            assert "not pulled" in event, (what, event)
    assert played["hidden folders pulled by the variants"] == []


def test_a_server_started_again_and_again_keeps_its_own_port(played):
    after = played["after the churn"]
    assert set(after) == set(PEOPLE), after  # every server runs again
    for user, seen in after.items():
        assert seen["held by"] == [0, user], (user, after)
    # each server answers with its own user's home
    assert "lm10" in after["lm10-alice"]["files"], after
    assert "spec" in after[ATTACKER]["files"] and "lm10" not in after[ATTACKER]["files"], after


BOBS_SECRET = "BOBS-SECRET-" + secrets.token_hex(6)
BOB_LEAVES = f"""
import os, socket
os.environ["BOBS_MARK"] = {BOBS_SECRET!r}
answer = {BOBS_SECRET!r}  # a cell of his, in his kernel's memory
for folder in ("/tmp", "/var/tmp", "/dev/shm"):
    open(os.path.join(folder, {BOBS_SECRET!r}), "w").write({BOBS_SECRET!r})
kept = socket.socket(socket.AF_UNIX)
kept.bind("/tmp/" + {BOBS_SECRET!r} + ".sock")
kept.listen()
print("left")
"""
ALICE_LOOKS = r"""
import glob, json, os, socket, subprocess, urllib.request
seen = {}
def tried(label, call):
    try:
        seen[label] = call()
    except Exception as error:
        seen[label] = f"{type(error).__name__}: {error}"[:300]
def text(path, most=4000):
    return open(path, errors="replace").read()[:most]
tried("pids", lambda: sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
tried("locks", lambda: text("/proc/locks"))
def unix():
    rows = [r.split() for r in open("/proc/net/unix").read().splitlines()[1:]]
    return sorted({r[-1] for r in rows if len(r) > 7})
tried("unix", unix)
def listening():
    found = []
    for f in ("/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp", "/proc/net/udp6"):
        for r in open(f).read().splitlines()[1:]:
            c = r.split()
            if c[3] in ("0A", "07"):
                found.append((f[-4:], int(c[1].rsplit(":", 1)[1], 16), int(c[7])))
    return sorted(set(found))
tried("listening", listening)
for folder in ("/tmp", "/var/tmp", "/dev/shm", "/run", "/run/user", "/var/lib", "/var/log",
               "/home", "/srv", "/var/spool", "/var/mail", "/var/crash", "/dev/mqueue"):
    tried("ls " + folder, lambda folder=folder: sorted(os.listdir(folder))[:80])
tried("mountinfo", lambda: text("/proc/self/mountinfo", 6000))
tried("env names", lambda: sorted(os.environ))
tried("core_pattern", lambda: text("/proc/sys/kernel/core_pattern"))
tried("no new privileges", lambda: [line for line in text("/proc/self/status").splitlines()
      if line.startswith(("NoNewPrivs", "Seccomp:", "CapEff"))])
tried("ptrace_scope", lambda: text("/proc/sys/kernel/yama/ptrace_scope"))
tried("setuid", lambda: subprocess.run(
    "find /usr /bin /sbin /opt -xdev -perm -4000 -o -xdev -perm -2000 2>/dev/null | head -50",
    shell=True, capture_output=True, text=True, timeout=60).stdout.split())
tried("tools", lambda: {t: subprocess.run(["sh", "-c", f"command -v {t}"], capture_output=True,
      text=True).stdout.strip() for t in ("at", "crontab", "systemd-run", "loginctl", "busctl",
      "sudo", "pkexec", "su", "ss", "gdb", "strace")})
token, api = os.environ["JUPYTERHUB_API_TOKEN"], os.environ["JUPYTERHUB_API_URL"]
def hub(path, method="GET", body=None):
    request = urllib.request.Request(api + path, method=method, data=body,
        headers={"Authorization": "token " + token, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=20) as r:
            return [r.status, r.read(3000).decode(errors="replace")]
    except urllib.error.HTTPError as e:
        return [e.code, e.read(300).decode(errors="replace")]
for path in ("/user", "/users", "/users/lm10-bob", "/users/lm10-bob/tokens",
             "/users/lm10-instructor", "/groups", "/services", "/proxy", "/info",
             "/users/lm10-alice/tokens", "/users/lm10-bob/shared", "/shares/lm10-bob",
             "/users/lm10-alice/shared", "/users/lm10-alice/activity", "/users/lm10-bob/activity",
             "/users/lm10-alice/server/progress", "/users/lm10-bob/server/progress",
             "/authorizations/token/" + token, "/oauth2/authorize", "/events/lm10-bob"):
    tried("hub " + path, lambda path=path: hub(path))
tried("hub new token", lambda: hub("/users/lm10-alice/tokens", "POST",
      json.dumps({"scopes": ["read:users", "access:servers", "admin:users"]}).encode()))
tried("hub share", lambda: hub("/shares/lm10-alice/", "POST",
      json.dumps({"user": "lm10-bob"}).encode()))
def bobs_socket():
    for path in seen["unix"]:
        if "BOBS-SECRET" in path:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.connect(path)
            return "connected"
tried("bob's socket", bobs_socket)
tried("kill -1", lambda: os.kill(-1, 0))
def grep_everywhere():
    hits = []
    for top in ("/tmp", "/var/tmp", "/dev/shm", "/run", "/home", "/srv", "/var/lib/jupyter"):
        for root, dirs, files in os.walk(top):
            for name in files + dirs:
                if "BOBS-SECRET" in name:
                    hits.append(os.path.join(root, name))
    return hits
tried("bob's names", grep_everywhere)
print(json.dumps(seen, default=str))
"""


def test_the_eightieth_looks_from_alices_kernel_for_bobs_and_the_instructors(hub, machine):
    """From alice's kernel: /proc, the machine's folders, sockets, ports, the hub's API with her
    server's token, setuid programs and the like, while bob's kernel holds a secret of his in
    its memory, its environment, /tmp, /var/tmp, /dev/shm and a socket (the eightieth tester)."""
    people = ("lm10-alice", "lm10-bob", INSTRUCTOR)
    for user in people:
        login(hub.url, user, machine.passwords[user])
    hub.start_servers([user for user in people if not hub.model(user)["servers"]])
    bobs = hub.start_kernel("lm10-bob")
    assert hub.execute("lm10-bob", bobs, BOB_LEAVES).strip() == "left"
    hub.start_kernel(INSTRUCTOR)
    hers = hub.start_kernel("lm10-alice")
    seen = json.loads(hub.execute("lm10-alice", hers, ALICE_LOOKS, timeout=300))
    # the names of every socket of the machine's network namespace are listed (the tenth's
    # row, "What this set-up leaves open"): bob's path there, but in his own /tmp
    assert seen.pop("bob's socket").startswith("FileNotFoundError"), seen
    listed = seen.pop("unix")
    assert any(BOBS_SECRET in path for path in listed), listed
    assert BOBS_SECRET not in json.dumps(seen), json.dumps(seen)[:3000]
    assert seen["pids"] == sorted(seen["pids"]) and len(seen["pids"]) < 10, seen["pids"]
    for path in ("/users", "/users/lm10-bob", "/users/lm10-instructor", "/groups", "/proxy"):
        assert seen["hub " + path][0] in (403, 404), (path, seen["hub " + path])
    assert seen["hub new token"][0] == 403 and seen["hub share"][0] == 403, seen
    assert all(not name.startswith("lm10-") for name in seen["ls /home"]), seen["ls /home"]
    # the machine's setuid programs are there, and raise nothing: bubblewrap's no_new_privs
    assert "NoNewPrivs:\t1" in seen["no new privileges"], seen["no new privileges"]
