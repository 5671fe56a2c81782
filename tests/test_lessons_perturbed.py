"""The lessons' stored outputs hold on another machine: strict nbval again, one lesson at a time,
as another machine would present them.

Strict nbval (`pytest --nbval lessons`, part of `make test`) compares every stored output on
this machine as it is. Here each lesson runs again in a process of its own with torch's generic
CPU kernels instead of this CPU's vector ones (ATEN_CPU_CAPABILITY=default), one thread
(OMP_NUM_THREADS=1), and a course cache that started empty: the first lesson to load SmolLM2
converts the weights afresh, the others read that conversion (`make test` hands every worker
one empty folder in $LM10_PERTURBED_CACHE; without it, each worker starts its own). A stored
number that depends on the vector width, the thread count or a cache left by an earlier run
fails here.

`make test-perturbed` runs this module alone. One lesson per test, so that `make test`'s two
workers can share the lessons out.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "lessons").glob("LM10-T*.ipynb"))
ANOTHER_MACHINE = {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="session")
def empty_cache(tmp_path_factory):
    """The course cache of the perturbed runs: $LM10_PERTURBED_CACHE if `make test` made one
    (it must be empty at the start), else a new folder of this process."""
    given = os.environ.get("LM10_PERTURBED_CACHE")
    if not given:
        return tmp_path_factory.mktemp("perturbed-cache")
    return Path(given)


@pytest.mark.parametrize("lesson", LESSONS)
def test_stored_outputs_hold_on_another_machine(lesson, empty_cache):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}  # not a worker
    env |= ANOTHER_MACHINE | {"LMCOURSE_CACHE": str(empty_cache)}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--nbval",
        lesson,
        "--nbval-sanitize-with",
        "tests/nbval_sanitize.cfg",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        "-q",
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    output = done.stdout[-6000:] + done.stderr[-2000:]
    output = re.sub(r"\x1b\[[0-9;]*m", "", output)  # nbval colours its messages
    settings = " ".join(f"{k}={v}" for k, v in ANOTHER_MACHINE.items())
    assert done.returncode == 0, (
        f"{lesson}: a stored output differs with {settings} and a fresh course cache "
        f"({' '.join(command[2:])}):\n{output}"
    )
