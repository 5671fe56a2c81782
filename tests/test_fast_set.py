"""`make test-fast` runs `pytest tests -m "not slow"`: the library and the grading logic without
a sandbox, a kernel, a Jupyter server, a hub or a browser. The modules that start one are marked
slow as a whole (SLOW_MODULES in tests/conftest.py), and a test anywhere else that starts one
fails, naming what it started (conftest's `pytest_runtest_protocol`): a new slow test cannot
join the fast set unmarked. These tests check that rule itself.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SLOW_MODULES, StartedInAFastTest, starts

TESTS = Path(__file__).resolve().parent
PYTHON = sys.executable


@pytest.mark.parametrize(
    "argv, what",
    [
        (["bwrap", "--unshare-all", "python"], "a sandbox (bubblewrap)"),
        ([PYTHON, "-m", "ipykernel_launcher", "-f", "k.json"], "a kernel"),
        (["/usr/bin/chromium", "--headless"], "a browser"),
        (["node", "cli.js", "run-driver"], "a browser (Playwright's driver)"),
        ([PYTHON, "-m", "jupyterhub", "-f", "c.py"], "a hub"),
        ([PYTHON, "-m", "pytest", "--nbval", "lessons"], "a notebook run"),
        (["jupyter", "nbconvert", "--execute", "x.ipynb"], "a notebook run"),
        (
            [PYTHON, "-m", "grading.batch.autograde", "--grading", "."],
            "a batch of sandboxed grading",
        ),
        (["/venv/bin/nbgrader", "autograde", "LM10-L1"], "nbgrader autograde"),
        ([Path("/venv/bin/jupyter"), "lab", "--no-browser"], "a Jupyter server"),
        (["make", "--no-print-directory", "lab", "JUPYTER_ARGS=x"], "make lab"),
        # and what starts none of them
        (["nbgrader", "generate_assignment", "LM10-L1"], None),
        ([PYTHON, "-m", "jupyter", "labextension", "list"], None),
        (["make", "-n", "-C", "edition", "lab"], None),
        (["make", "gradebook"], None),
        ([PYTHON, "-c", "print(1)"], None),
        ("ls -l", None),
    ],
)
def test_starts_names_what_a_command_line_starts(argv, what):
    assert starts(argv) == what


def test_a_fast_test_that_starts_a_kernel_fails_saying_so():
    """This module is not slow: the guard is on here, and refuses before anything runs."""
    with pytest.raises(StartedInAFastTest, match="starts a kernel.*SLOW_MODULES"):
        subprocess.Popen([PYTHON, "-m", "ipykernel_launcher", "--help"])
    done = subprocess.run([PYTHON, "-c", "print('ran')"], capture_output=True, text=True)
    assert done.stdout == "ran\n", "an ordinary process still runs"


def test_every_slow_module_exists():
    names = {p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py")}
    assert names >= SLOW_MODULES, f"no such test module: {sorted(SLOW_MODULES - names)}"


def test_the_fast_set_leaves_out_every_test_of_a_slow_module():
    """Collected with -m "not slow" (as `make test-fast` does): a slow module's tests are
    deselected, a fast module's kept."""
    slow, fast = "test_lab_command.py", "test_imports.py"  # two modules quick to import
    assert slow in SLOW_MODULES and fast not in SLOW_MODULES
    done = subprocess.run(
        [PYTHON, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:nbval"]
        + ["-m", "not slow", f"tests/{slow}", f"tests/{fast}"],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    assert collected and all(line.startswith(f"tests/{fast}::") for line in collected)
    assert "deselected" in done.stdout


def test_every_unit_listed_longest_first_is_a_unit_of_make_test():
    """`make test` hands its work units out in LONGEST_FIRST's order (tests/conftest.py): a
    listed path that no longer exists (a module renamed, a lesson renumbered) would leave its
    unit in collection order without a word, at the end of the session for a lesson."""
    from conftest import LONGEST_FIRST

    root = TESTS.parent
    missing = [unit for unit in LONGEST_FIRST if not (root / unit).is_file()]
    assert not missing, f"LONGEST_FIRST names units that are not files: {missing}"
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST), "a unit is listed twice"
