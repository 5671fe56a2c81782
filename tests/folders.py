"""Folders on the way to the course's Python that other users may not pass through, and ACL
entries that let named users (and no one else) through them for a test, taken off again after:
the hub's test users (tests/test_jupyterhub.py) and an unprivileged grader
(tests/test_grading_hostile.py). This machine's Python lives under /root, pyenv's."""

from __future__ import annotations

import pwd
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def closed_folders():
    """Folders on the way to the course's Python, environment and source that other users may
    not pass through."""
    closed = set()
    for path in (Path(sys.executable).resolve(), Path(sys.prefix), ROOT):
        for folder in (path, *path.parents):
            if folder.is_dir() and not folder.stat().st_mode & 0o001:
                closed.add(folder)
    return sorted(closed)


def let_through(folders, names):
    """Let `names` (and no one else) pass through `folders`: an ACL entry each, execute only.
    Returns how to undo it: the folders that had no ACL before lose theirs entirely."""
    bare = []
    for folder in folders:
        lines = run("getfacl", "-cp", str(folder)).stdout.split()
        if all(line.startswith(("user::", "group::", "other::")) for line in lines):
            bare.append(folder)
    for folder in folders:
        run("setfacl", "-m", ",".join(f"u:{n}:x" for n in names), str(folder))
    return bare


def close_again(folders, bare, names):
    for folder in folders:
        if folder in bare:
            subprocess.run(["setfacl", "-b", str(folder)], capture_output=True)
        else:
            entries = ",".join(f"u:{n}" for n in names if account(n))
            subprocess.run(["setfacl", "-x", entries, str(folder)], capture_output=True)


def run(*argv, **kwargs):
    """A command that must succeed (its output in the failure's message)."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, argv))}: {done.stdout}{done.stderr}"
    return done


def account(name):
    """The system account `name`, None where there is none."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None
