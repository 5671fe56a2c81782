"""The seccomp filter around every hub server (grading/hub/no_keyrings.py), played in bubblewrap
as the hub installs it (`--seccomp FD`), without a hub: a second (slow: it starts bubblewrap)."""

import json
import os
import subprocess
import sys

import pytest

from grading.hub import no_keyrings

pytestmark = pytest.mark.slow

PROBE = r"""
import errno, json, socket
out = {}
for name, args in {
    "socket dumps (NETLINK_SOCK_DIAG)": (socket.AF_NETLINK, socket.SOCK_DGRAM, 4),
    "socket dumps, raw": (socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, 4),
    "routes (NETLINK_ROUTE)": (socket.AF_NETLINK, socket.SOCK_RAW, 0),
    "TCP": (socket.AF_INET, socket.SOCK_STREAM, 0),
    "Unix": (socket.AF_UNIX, socket.SOCK_STREAM, 0),
}.items():
    try:
        socket.socket(*args).close()
        out[name] = "made"
    except OSError as error:
        out[name] = errno.errorcode[error.errno]
print(json.dumps(out))
"""


def filtered(code, sandbox_installed):
    fd = no_keyrings.descriptor()
    try:
        command = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        command += ["--unshare-pid", "--unshare-user", "--seccomp", str(fd)]
        command += ["--", sys.executable, "-I", "-c", code]
        done = subprocess.run(
            command, pass_fds=(fd,), capture_output=True, text=True, timeout=60, check=False
        )
    finally:
        os.close(fd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_no_server_reads_the_machines_socket_dumps(sandbox_installed):
    """The fifty-eighth tester's: servers share the machine's network namespace, and a
    NETLINK_SOCK_DIAG socket (what `ss -ti` reads) listed every TCP connection of the machine
    with its exact byte counters: from a sandbox like a student's server, the bytes the proxy's
    connection sent to alice's server and got back (her save of 12,394 bytes read as 12,590 with
    its headers), after `/user/<name>/api` had said, without a credential, which port was
    alice's. The filter refuses that socket (EACCES); every other socket a server opens stays."""
    assert filtered(PROBE, sandbox_installed) == {
        "socket dumps (NETLINK_SOCK_DIAG)": "EACCES",
        "socket dumps, raw": "EACCES",
        "routes (NETLINK_ROUTE)": "made",
        "TCP": "made",
        "Unix": "made",
    }


def test_the_filter_still_refuses_keyrings(sandbox_installed):
    """The calls refused before (grading/hub/no_keyrings.py) stay refused after the new part."""
    code = (
        "import ctypes, json; libc = ctypes.CDLL(None, use_errno=True); "
        "r = libc.syscall(250, 0, -3, 0, 0, 0); "  # keyctl(KEYCTL_GET_KEYRING_ID, @u)
        "print(json.dumps([r, ctypes.get_errno()]))"
    )
    if os.uname().machine != "x86_64":
        code = code.replace("syscall(250", "syscall(219")
    assert filtered(code, sandbox_installed) == [-1, 38]  # ENOSYS
