"""A server's terminals from a pool of pseudo-terminals of its own (issue 39, a sixteenth tester).

bubblewrap's `--dev` gives each sandbox a devpts instance of its own, without `max=`: every
instance but the machine's first draws on one pool, kernel.pty.max less kernel.pty.reserve
(3,072 of 4,096 by default). A student who opened /dev/ptmx 3,071 times from her kernel (one
descriptor each) took the pool: no classmate's and no instructor's terminal opened (ENOSPC)
until her server ended.

This launcher runs first, as the server's user, in place of bubblewrap: it makes a user and a
mount namespace of its own (its uid and gid mapped to themselves: nobody is root there),
mounts there, over /dev/pts, a devpts instance of at most MOST pseudo-terminals, and execs
bubblewrap, whose command binds that instance over its own (`--dev-bind /dev/pts /dev/pts`).
Its root and its `ptmx` belong to no one in the server (the namespace maps no uid 0). Where
the instance cannot be made, nothing starts, and its standard error says why.

    python -I -S ptys.py MOST COMMAND...
"""

import ctypes
import os
import sys

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_NOSUID, MS_NOEXEC, MS_REC, MS_PRIVATE = 0x2, 0x8, 0x4000, 0x40000


def launcher(most: int) -> list[str]:
    """The words before bubblewrap's command (this file, run by this Python without the
    site), and the one bubblewrap needs after its `--dev /dev`."""
    return [sys.executable, "-I", "-S", __file__, str(most)]


BIND = ("--dev-bind", "/dev/pts", "/dev/pts")  # after bubblewrap's --dev /dev


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def mount(most: int) -> None:
    """In this process: a user and a mount namespace of its own, then the capped devpts."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare (user and mount namespaces)")
    for name, line in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(line)
    with open("/proc/self/gid_map", "w") as handle:
        handle.write(f"{gid} {gid} 1")
    # nothing mounted here reaches the machine's namespace
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate")
    options = f"newinstance,ptmxmode=0666,mode=0620,max={most}".encode()
    _check(
        libc.mount(b"devpts", b"/dev/pts", b"devpts", MS_NOSUID | MS_NOEXEC, options),
        "mount devpts",
    )


def main(argv):
    most, command = int(argv[0]), argv[1:]
    try:
        mount(most)
    except OSError as error:
        print(f"LM10 server not started: no pseudo-terminals of its own: {error}", file=sys.stderr)
        sys.exit(1)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
