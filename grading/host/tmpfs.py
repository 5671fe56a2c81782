"""Memory folders capped in files as well as bytes, for bubblewrap.

bwrap 0.8's `--size N --tmpfs PATH` caps a tmpfs's bytes, never its files: tmpfs's default file
count (nr_inodes) is half the machine's pages of memory, and an empty file costs about 1 KiB of
the kernel's memory (its inode and name) that no limit of the process counts. A submission
making empty files in its /tmp could take gigabytes of the instructor's machine (the fourteenth
hub tester measured 0.94 KiB a file, and 3,085,458 files allowed on this machine).

Here a small launcher runs first, in place of bubblewrap: it makes a user and a mount namespace
of its own (its uid and gid mapped to themselves: nobody is root there), mounts on each folder
of `staging` a tmpfs with both caps, and execs bubblewrap, which binds those where it would
have made its own. It binds the machine's device nodes that bubblewrap's --dev binds in
(DEVICES) read-only onto themselves too, so that no submission, graded by root, changes them.
The mounts exist in that namespace only and go with its last process; the host's folders
stay empty. Being part of the command, the caps cannot be left out by a caller.

    staging(names)                  {name: empty folder}, made once per process
    launcher(points, size, files)   the command's first words, bubblewrap's command after them
    problem(points)                 "" where the launcher works here, else why not (once)
    python -I -S tmpfs.py SIZE FILES COUNT FOLDER... COMMAND...
"""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000
MS_RDONLY, MS_REMOUNT, MS_BIND = 0x1, 0x20, 0x1000
# The machine's device nodes that bubblewrap's --dev binds into the sandbox, writable: where
# the grader is root, a submission is their owner (uid 0) and could chmod the machine's own
# /dev/null (0: no other user of the machine opens it again) or set its times, which any user
# reads (a sixteenth hub tester's). Bound read-only onto themselves here, so bubblewrap's binds
# of them are read-only too (EROFS); their devices work as before.
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
# The flags a remount must keep (the kernel locks them in a user namespace), read from statvfs:
# nosuid, nodev, noexec, noatime and nodiratime have the same bits there as in mount(2).
# (relatime has not: statvfs's 0x1000 is mount's MS_BIND, which the remount sets anyway, and a
# remount without MS_NOATIME is relatime by default.)
KEPT = 0x2 | 0x4 | 0x8 | 0x400 | 0x800

_staging: Path | None = None
_problem: str | None = None


def staging(names) -> dict[str, Path]:
    """An empty folder for each name, under one private folder made once per process (and
    removed when it ends). Every sandbox of the process mounts its own tmpfs on them, each in
    its own namespace, so one set serves them all."""
    global _staging
    if _staging is None:
        _staging = Path(tempfile.mkdtemp(prefix=f"lm10-mounts-{os.getpid()}-"))
        atexit.register(shutil.rmtree, _staging, True)
    folders = {name: _staging / name for name in names}
    for folder in folders.values():
        folder.mkdir(exist_ok=True)
    return folders


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def launcher(points, size: int, files: int) -> list[str]:
    """The words before bubblewrap's command: this file, run by this Python without the site
    (a few milliseconds), mounting a tmpfs of at most `size` bytes and `files` files and
    folders (its root one of them) on each folder of `points`, mode 0755 as bubblewrap's own."""
    points = [str(point) for point in points]
    return [sys.executable, "-I", "-S", __file__, str(size), str(files), str(len(points)), *points]


def problem(points) -> str:
    """ "" where this machine lets the launcher mount its folders, else why not: a machine
    may let bubblewrap make a user namespace and not another program (an AppArmor rule for
    bwrap alone, say). Tried once per process."""
    global _problem
    if _problem is None:
        command = [*launcher(points, 1 << 20, 16), sys.executable, "-I", "-S", "-c", ""]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            _problem = f"{type(error).__name__}: {error}"
        else:
            said = done.stderr.strip()[-300:] or f"exit status {done.returncode}"
            _problem = "" if done.returncode == 0 else said
    return _problem


def mount(folders, size: int, files: int) -> None:
    """In this process: a user and a mount namespace of its own, then the tmpfs mounts."""
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
    options = f"size={size},nr_inodes={files},mode=0755".encode()
    for folder in folders:
        _check(
            libc.mount(b"tmpfs", folder.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), "mount"
        )
    for device in (path for path in DEVICES if os.path.exists(path)):
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | (os.statvfs(device).f_flag & KEPT)
        _check(libc.mount(device.encode(), device.encode(), None, MS_BIND, None), "bind")
        _check(libc.mount(None, device.encode(), None, flags, None), "read-only " + device)


def main(argv):
    size, files, count = (int(word) for word in argv[:3])
    folders, command = argv[3 : 3 + count], argv[3 + count :]
    try:
        mount(folders, size, files)
    except OSError as error:
        print(f"capped folders: {error.strerror}", file=sys.stderr)
        sys.exit(1)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
