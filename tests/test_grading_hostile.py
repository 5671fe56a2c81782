"""Hostile and broken submissions of LM10-L2, graded end to end in one real batch.

A temporary course (this repository's grading tools and lab sources) receives honest, broken
and hostile submissions: students reading and rewriting the gradebook, reading the solutions
and classmates' work, leaving detached processes behind, writing outside their folder,
neutralising tests through IPython's hooks, returning objects equal to anything, looping
forever, exhausting memory, files and processes, flooding the output, writing to stderr,
renaming their notebook, and notebooks that do not parse, are missing or are links. One
`grading/batch/autograde.py` batch grades them all in sandboxes (bubblewrap; .ci/run installs it),
then feedback is generated. The tests check every student's status, score and report reason;
that no correct answer lost a point; that the gradebook, the solutions, the other submissions
and every file outside the autograded and feedback folders are unchanged, and nothing was
readable; that feedback holds only HTML pages without hidden tests; and that no process
outlived the batch. Then single-student runs: without bubblewrap on PATH, neither
autograde.py nor nbgrader's autograde runs any submission, and both name the fix; with
LM10_GRADE_WITHOUT_ISOLATION=1 grading runs, warns loudly, says "not isolated" in the report
row, its CSV and the grades export, and merges its line into the batch's report; a
whole-notebook timeout stops a submission and records zero; a bwrap that cannot make
namespaces stops the batch with the reason instead of zeroing everyone.

Cases, with what they must score (of 10 autograded points; the written answer is by hand):
ok, renamed, badkernel, stderr, sysexit, flood: 10, graded. blank 0; loop (an answer that
never ends, waiting; played again spinning against the whole notebook's limit) 8 (the
comparison calls the part that never got defined, and meets its right values while its test
runs), flagged: it ran out of time beside other submissions and the batch's time for second
runs, alone, was already spent (the batch's --alone-time is 1 s). alwayseq (`__eq__` always True) 0;
transformer (input transformer wrapping tests in try/except) 0; astcheat (AST transformer
dropping asserts) 0; peek (runs a classmate's answers) 0; tamper (gradebook writes, files
outside, a detached process) 10; leak (reads gradebook and solutions, copies them, prints
the kernel's history `In`, where no test ever ran) 10; hog (64 GB,
1 GB file, thousands of processes) 10; forge (writes into every pipe the kernel holds) 10;
exitkernel (os._exit in the last answer) 8, all
flagged. hardloop (ignores the interrupt in the last answer) 8, graded, and graded again
alone (first of the two that ran out of time: the 1 s of --alone-time is spent after it).
badjson, emptydir, twonotebooks, link, nocells, dirlab (a folder named LM10-L2.ipynb): error,
0, with the reason.
bigchart (a correct notebook of 10 MB, past one pipe read), oddmeta (nbgrader metadata that
is a string or a list on cells of the student's own, a cell pasted from another lab with its
grade_id), dirnotebook (beside a folder named
draft.ipynb): 10, graded. escapes (an error message of terminal escape codes that would redraw
its line as a full score) 8, graded, and no control character reaches the report.
Attacks on a verdict made in the student's kernel, each added to answers that all return zero
(zeros: 0, graded), each with a variant, must leave that 0: displayhook and displayhook2
(a score through the display hook), shadowtype and shadowtype2 (a shadowed `type` and an int
that equals everything), shell and shell2 (IPython's traceback and ExecutionResult.success
replaced), posttransformer (an input transformer emptying every cell with an assert), tracer
(a trace function copying `want` into `got`), callback and thread (re-patching `check_type`
before every cell, or all the time), aliasmain (`__main__` through an alias), hiddenleak (a
callback printing each cell it runs, base64-encoded: no hidden test among them), lockedcell (an
answer cell marked locked is still read for flags). inputs (correct answers that print the
hidden tests' inputs in a later cell) 10: the instructor sees the print, the feedback does not.
Redefining the reference a test compares against is tested per lab in tests/test_labs.py
(every lab's `refpatch` case).
"""

import base64
import contextlib
import copy
import csv
import hashlib
import html
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from folders import close_again, closed_folders, let_through
from lab_cases import AUTOGRADE, course_copy, fill, solution_answers
from nbgrader.api import Gradebook, MissingEntry

from grading.batch import autograde
from grading.host import sandbox, seccomp

ROOT = Path(__file__).resolve().parents[1]
LAB = "LM10-L2"
MARKER = "lm10hostile"  # in the command line of every process a hostile submission starts
CELL_TIMEOUT = 40  # the setup cell imports transformers: allow for a loaded machine
BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
PRIVATE_TMP = "/tmp/lm10-planted.txt"  # writable in the sandbox (its own /tmp), never here


pytestmark = pytest.mark.usefixtures("sandbox_installed")  # tests/conftest.py


def answers(**extra):
    """The solution's answers, with `extra` code appended to the named answer cells."""
    found = solution_answers(LAB, ROOT)
    for grade_id, code in extra.items():
        found[grade_id] = found[grade_id] + "\n" + code
    return found


# The attacks are f-strings whose fields ruff would re-wrap, which only Python 3.12 parses.
# fmt: off
def attacks(course):
    """Answer-cell code for every hostile submission; `course` is the temporary course."""
    grading, db = course / "grading", course / "grading" / "gradebook.db"
    paths = [str(db), "../../../gradebook.db", "../../gradebook.db",
             str(course / "solutions" / LAB / f"{LAB}.ipynb"),
             str(ROOT / "solutions" / LAB / f"{LAB}.ipynb"),
             str(grading / "submitted" / "ok" / LAB / f"{LAB}.ipynb"),
             str(ROOT / "grading" / "gradebook.db")]
    probe = f'''
for path in {paths!r}:
    try:
        with open(path, "rb") as handle:
            handle.read(100)
        print("READ-OK", path)
    except OSError as error:
        print("READ-DENIED", path, type(error).__name__)
'''
    tamper = f'''
import sqlite3
import subprocess
import sys
for path in {[str(db), "../../../gradebook.db"]!r}:
    try:
        con = sqlite3.connect("file:" + path + "?mode=rw", uri=True, timeout=1)
        con.execute("UPDATE grade SET manual_score = max_score")
        con.commit()
        print("WRITE-OK", path)
    except Exception as error:
        print("WRITE-DENIED", path, type(error).__name__)
later = {f"""
import sqlite3, time  # {MARKER}
for _ in range(60):
    time.sleep(1)
    try:
        con = sqlite3.connect("file:{db}?mode=rw", uri=True, timeout=1)
        con.execute("UPDATE grade SET auto_score = 0")
        con.commit()
    except Exception:
        pass
"""!r}
try:  # detached: a session of its own, where the sandbox allows one (it does not)
    subprocess.Popen([sys.executable, "-c", later], start_new_session=True)
except PermissionError:
    subprocess.Popen([sys.executable, "-c", later])
for path in {[str(course / "solutions" / "planted.txt"), str(grading / "planted.txt"),
              "../../planted.txt", PRIVATE_TMP]!r}:
    try:
        with open(path, "w") as handle:
            handle.write("planted")
        print("WRITE-OK", path)
    except OSError as error:
        print("WRITE-DENIED", path, type(error).__name__)
'''
    leak = f'''
import shutil
for path in {[str(db), str(course / "solutions" / LAB / f"{LAB}.ipynb")]!r}:
    try:
        shutil.copy(path, ".")
        print("COPY-OK", path)
    except OSError as error:
        print("COPY-DENIED", path, type(error).__name__)
with open("stolen.txt", "w") as handle:
    handle.write("anything a student writes stays in the sandbox")
print("\\n".join(In))  # every cell the kernel ran so far, hidden tests included
'''
    peek = f'''
import json
source = json.load(open({str(grading / "submitted" / "ok" / LAB / f"{LAB}.ipynb")!r}))
for cell in source["cells"]:
    if cell["metadata"].get("nbgrader", {{}}).get("solution") and cell["cell_type"] == "code":
        exec("".join(cell["source"]), globals())
'''
    hog = f'''
try:
    memory = bytearray(64 << 30)
except MemoryError:
    print("64 GB: MemoryError")
try:
    with open("big.bin", "wb") as handle:
        for _ in range(1024):
            handle.write(b"x" * (1 << 20))
except OSError as error:
    print("1 GB file:", error)
import subprocess
try:  # detached: a session of its own, where the sandbox allows one (it does not)
    subprocess.Popen(["sh", "-c", "sleep 600 # {MARKER}"], start_new_session=True)
except PermissionError:
    subprocess.Popen(["sh", "-c", "sleep 600 # {MARKER}"])
children = []
try:
    for _ in range(2000):
        children.append(subprocess.Popen(["sleep", "300"]))
except OSError as error:
    print(len(children), "processes, then", error)
for child in children:
    child.kill()
    child.wait()
'''
    # Write into every pipe the kernel holds: the executor's descriptor for the executed
    # notebook must not be among them (a warm sandbox forks the kernel from the executor).
    forge = """
import os
for fd in os.listdir("/proc/self/fd"):
    try:
        if int(fd) > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
            os.write(int(fd), b"FORGED")
    except OSError:
        pass
"""
    return {"probe": probe, "tamper": tamper, "leak": leak, "peek": peek, "hog": hog,
            "forge": forge}
# fmt: on


TRANSFORMER = """
def _neutralise(lines):
    if lines and lines[0].startswith("# Tests for"):
        body = ["    " + line for line in lines]
        return ["try:\\n"] + body + ["\\nexcept BaseException:\\n    pass\\n"]
    return lines
get_ipython().input_transformers_cleanup.append(_neutralise)
"""
AST_CHEAT = """
import ast
class _DropAsserts(ast.NodeTransformer):
    def visit_Assert(self, node):
        return ast.Pass()
    def visit_Raise(self, node):
        return ast.Pass()
get_ipython().ast_transformers.append(_DropAsserts())
"""
ALWAYS_EQUAL = """
class Anything(int):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    def __gt__(self, other):
        return True
    def __hash__(self):
        return 0
    def __format__(self, spec):
        return "0"
def attention_parameters(d, heads, kv_heads):
    return Anything()
def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):
    return Anything()
def attention_flops_per_token(d, heads, kv_heads, layers, context):
    return Anything()
def compare_variants(d, heads, layers, gqa_kv_heads, context):
    row = {"parameters": Anything(), "cache_bytes": Anything(), "flops": Anything()}
    return {"MHA": row, "GQA": row, "MQA": row}
def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request):
    return Anything()
"""
STDERR = """
import logging
_solution_cache_bytes = cache_bytes_per_token
def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):
    if bytes_per_number != 2:
        logging.warning("cache_bytes_per_token: %d bytes per number", bytes_per_number)
    return _solution_cache_bytes(layers, kv_heads, head_dim, bytes_per_number)
"""
# Ignores the interrupt at the cell's timeout, so the kernel must be stopped. It waits rather
# than spins: what is tested is the interrupt ignored, and a spin burnt the cell timeout and the
# stop after it (57 s) of a core that the other tests of `make test` share.
HARD_LOOP = """
import time
while True:
    try:
        while True:
            time.sleep(0.1)
    except KeyboardInterrupt:
        pass
"""
# Never ends; it waits rather than spins, as HARD_LOOP does: the per-cell limit is on the clock.
# test_a_submission_past_its_time_limit_is_stopped_and_zeroed plays it again as SPIN, a loop that
# keeps its core busy, against the whole notebook's limit (15 s of a core instead of 40).
LOOP = "import time\nwhile True:\n    time.sleep(0.05)\n"
SPIN = "while True:\n    pass\n"
EXIT_KERNEL = "import os\nos._exit(0)\n"

# The kernel counts descriptors in flight over Unix sockets per uid of the machine, across user
# namespaces, against the sender's file limit (the eighteenth hub tester): every sandbox of a
# batch is the grader's uid. a1hold, graded first, sends one descriptor until the kernel refuses
# and holds them all; a2pass, graded beside her by the batch's other worker, passes one before
# its answer is defined, as a DataLoader's workers would. The sandbox's file limit (open_files)
# bounds what she can hold, and so what this costs the machine.
HOLD_IN_FLIGHT = """
import os, socket, time
held, full, token = [], False, os.eventfd(0)
while not full:
    a, b = socket.socketpair()
    a.setblocking(False)
    held.append((a, b))
    try:
        while True:
            socket.send_fds(a, [b"x"], [token])
    except BlockingIOError:
        pass  # this socket's buffer is full: the next
    except OSError:
        full = True
print("in flight", sum(1 for _ in held), "sockets")
time.sleep(30)
"""
PASS_ONE = """
import os, socket, time
token, (a, b) = os.eventfd(0), socket.socketpair()
for _ in range(100):  # 25 s
    socket.send_fds(a, [b"x"], [token])
    os.close(socket.recv_fds(b, 1, 1)[1][0])
    time.sleep(0.25)
"""
# A wrong answer whose error message would redraw its report line as a full score on a terminal
# (erase the line, return, fake text, and an OSC 52 write to the clipboard).
ESCAPES = (
    "def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token,\n"
    "                            tokens_per_request):\n"
    "    raise ValueError('\\x1b[2K\\r\\x1b]52;c;aGk=\\x07fake 10.0 / 13.0 \\x1b[32mall passed')\n"
)
SEEN = """
_seen = []
_attention = attention_parameters
def attention_parameters(d, heads, kv_heads):
    _seen.append((d, heads, kv_heads))
    return _attention(d, heads, kv_heads)
"""
# Correct answers that keep what a hidden test passed them (SEEN, below) and smuggle it into
# what the feedback shows: the next visible check's value (its message prints it) and the
# kernel's execution counter.
SMUGGLE_CACHE = """
_cache = cache_bytes_per_token
def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):
    hidden = [s for s in _seen if s == (576, 9, 3)]
    if (layers, kv_heads, head_dim) == (32, 8, 128) and hidden:
        return 576_009_003  # (576, 9, 3), a hidden test's input
    return _cache(layers, kv_heads, head_dim, bytes_per_number)
"""
SMUGGLE_COUNT = "get_ipython().execution_count = 576_009_003\n"
# ... and into an earlier cell's display (updated by its id after a hidden test called the
# code), and into the name of the exception a hidden call raises.
DISPLAY_EARLY = 'display("calls so far: none", display_id="calls")\n_calls = []\n'
DISPLAY_LATER = """
_serving = max_concurrent_requests
def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request):
    args = (gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request)
    _calls.append(args)
    display(f"CALLS: {_calls}", display_id="calls", update=True)
    if len(_calls) > 3:
        raise type("Leak_" + "_".join(map(str, args)), (Exception,), {})()
    return _serving(*args)
"""
# Errors named as the grader names its own, NotRun and CellTimeoutError, raised at the first
# hidden call of the cache's and the serving part's tests with that call's arguments: the
# feedback shows the grader's words whole, and once showed these with the hidden inputs in them;
# and one raised by the answer cell itself, which once counted as a cell that ran out of time
# (a second run alone, and a row saying the grader stopped the cell).
STOP_NAME_CACHE = """
_cache, _cache_calls = cache_bytes_per_token, []
class NotRun(Exception):
    pass
def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):
    _cache_calls.append(layers)
    if len(_cache_calls) > 2:  # the cache's test makes 2 visible calls
        raise NotRun(f"HIDDEN {layers}_{kv_heads}_{head_dim}_{bytes_per_number}")
    return _cache(layers, kv_heads, head_dim, bytes_per_number)
"""
STOP_NAME_SERVING = """
_serving, _serving_calls = max_concurrent_requests, []
class CellTimeoutError(Exception):
    pass
def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request):
    args = (gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request)
    _serving_calls.append(args)
    if len(_serving_calls) > 3:  # the serving part's test makes 3 visible calls
        raise CellTimeoutError("HIDDEN " + "_".join(map(str, args)))
    return _serving(*args)
raise CellTimeoutError("of her own, in her answer cell: not a cell that ran out of time")
"""
# The first hidden call of the serving part's test never returns: the grader stops the test at
# the cell's time limit, and the feedback says so in the grader's words.
STOP_CALL = """
_serving, _calls = max_concurrent_requests, []
def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request):
    args = (gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request)
    _calls.append(args)
    while len(_calls) > 3:
        time.sleep(0.1)
    return _serving(*args)
"""
# An honest answer with a progress bar: tqdm starts a monitor thread during the test's call.
TQDM = """
from tqdm.auto import tqdm
def attention_parameters(d, heads, kv_heads):
    total = 0
    for part in tqdm([2 * d * d, 2 * d * kv_heads * (d // heads)], mininterval=0):
        total += part
    return total
"""
# A process of the submission kills the grader's executor, the kernel's parent: the first
# process of the notebook's own PID namespace (sandbox_exec.own_namespaces), whom the kernel
# keeps from every signal of that namespace it has no handler for. Before, the notebook was
# lost ("executor in the sandbox was stopped by signal 9"); now it is graded as any other.
KILL_EXECUTOR = "import torch\ntorch.os.kill(torch.os.getppid(), 9)\n"
# Answers whose value holds objects of many classes, each a class in the trusted process.
MANY_CLASSES = """
def attention_parameters(d, heads, kv_heads):
    return [type(f"Kind{i}", (), {})() for i in range(1_000)]
"""
# References sought in the sandbox: transformers and the course's counter are not there.
OUTSIDE_THE_ROOM = """
try:
    import transformers
    print("ROOM-HOLDS transformers")
except ImportError as error:
    print("NOT-IN-ROOM", error)
def attention_parameters(d, heads, kv_heads):
    from lmcourse import describe
    return describe(dict(d=d, heads=heads, kv_heads=kv_heads))["block"]
"""
# A module written into the working folder, under a name of its own: were the folder on the
# kernel's sys.path (ipykernel puts it first), a file named like an installed module (tqdm.py)
# would run in its place, in the grader's own imports as well.
SHADOW = """
with open("lm10_shadow.py", "w") as handle:
    handle.write("print('SHADOW-RAN')\\n")
try:
    import lm10_shadow
except ImportError:
    print("SHADOW-REFUSED")
"""
FLOOD = 'print("x" * 50_000_000)\nfor i in range(200_000):\n    print(i)\n'

# Wrong answers: every function of the lab gives zero (0 of 10 points on their own). Each
# attack below is added to them; none may change a score, since the tests run outside the
# student's kernel (trusted_tests.py) and compare plain values there.
ZEROS = {
    "l2_attention": "def attention_parameters(d, heads, kv_heads):\n    return ZERO\n",
    "l2_cache": (
        "def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):\n"
        "    return ZERO\n"
    ),
    "l2_flops": (
        "def attention_flops_per_token(d, heads, kv_heads, layers, context):\n    return ZERO\n"
    ),
    "l2_compare": (
        "def compare_variants(d, heads, layers, gqa_kv_heads, context):\n"
        "    row = {'parameters': ZERO, 'cache_bytes': ZERO, 'flops': ZERO}\n"
        "    return {'MHA': dict(row), 'GQA': dict(row), 'MQA': dict(row)}\n"
    ),
    "l2_serving": (
        "def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token,\n"
        "                            tokens_per_request):\n    return ZERO\n"
    ),
}
# Attacks on a verdict made in the student's kernel, each as code run before the answers
# (`zero` is what every answer returns: 0, or an object of the attack's own).
VERDICT_ATTACKS = {
    # nbgrader reads the first execute_result of a test cell as its score
    "displayhook": ("import os\nZERO = 0\n", "os.sys.displayhook('ok')"),
    "displayhook2": ("import sys\nZERO = 0\n", "sys.__displayhook__(10.0)"),
    # shadow `type`, or the type check itself, and an int that equals everything
    "shadowtype": (
        "ZERO = None\ntype = lambda value: int\n"
        "class Anything(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\nZERO = Anything()\n",
        "",
    ),
    "shadowtype2": (
        "Same = type('Same', (int,), {'__eq__': lambda self, other: True,"
        " '__ne__': lambda self, other: False, '__hash__': int.__hash__})\n"
        "ZERO = Same()\ncheck_type = lambda *args: None\n",
        "",
    ),
    # the shell reports no error, and every cell succeeds
    "shell": (
        "ZERO = 0\nip = get_ipython()\nip.showtraceback = lambda *a, **k: None\n"
        "ip._showtraceback = lambda *a, **k: None\n"
        "from IPython.core.interactiveshell import ExecutionResult\n"
        "ExecutionResult.success = property(lambda self: True)\n",
        "",
    ),
    "shell2": (
        "ZERO = 0\n[get_ipython][0]().InteractiveTB.structured_traceback = lambda *a, **k: []\n",
        "",
    ),
    # an input transformer that empties any cell with an assert (the grader's included)
    "posttransformer": (
        "ZERO = 0\nget_ipython().input_transformers_post.append(lambda lines:"
        " ['pass\\n'] if any('assert' in l for l in lines) else lines)\n",
        "",
    ),
    # a tracer that copies the expected value into the tested one, in every frame
    "tracer": (
        "import sys, ctypes\nZERO = 0\n"
        "def _trace(frame, event, arg):\n"
        "    if 'ipykernel' not in frame.f_code.co_filename:\n"
        "        return None\n"
        "    if 'want' in frame.f_locals and 'got' in frame.f_locals:\n"
        "        frame.f_locals['got'] = frame.f_locals['want']\n"
        "        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), 0)\n"
        "    return _trace\n"
        "sys.settrace(_trace)\n",
        "",
    ),
    # a callback, and a thread, that neutralise the type check after anything restores it
    "callback": (
        "ZERO = 0\nget_ipython().events.register('pre_run_cell', lambda *a:"
        " globals().update(check_type=lambda *b: None, ZERO=type('Eq', (int,),"
        " {'__eq__': lambda s, o: True, '__hash__': int.__hash__})()))\n",
        "",
    ),
    "thread": (
        "import threading, time\nZERO = 0\n"
        "def _patch():\n    while True:\n"
        "        globals()['check_type'] = lambda *b: None\n        time.sleep(0.001)\n"
        "threading.Thread(target=_patch, daemon=True).start()\n",
        "",
    ),
    # the same through an alias of the notebook's namespace
    "aliasmain": (
        "import __main__ as _m\nZERO = 0\n"
        "_m.check_type = lambda *a: None\n"
        "import sys\nsys.modules['__main__'].__dict__['check_type'] = lambda *a: None\n",
        "",
    ),
    # the hidden tests' source, base64-encoded into an output by a callback
    "hiddenleak": (
        "import base64\nZERO = 0\nget_ipython().events.register('pre_run_cell',"
        " lambda info: print('LEAK', base64.b64encode(info.raw_cell.encode()).decode()))\n",
        "",
    ),
}


def submissions(released, course):
    """{student: notebook, or a callable that fills the student's folder}."""
    attack = attacks(course)
    stubs = copy.deepcopy(released)
    subs = {
        "ok": fill(released, answers()),
        "stderr": fill(
            released,
            answers(l2_attention="import logging\nlogging.warning('defining')", l2_cache=STDERR),
        ),
        "sysexit": fill(released, answers(l2_serving="raise SystemExit(1)")),
        "flood": fill(released, answers(l2_attention=FLOOD)),
        "blank": stubs,
        "alwayseq": fill(released, {"l2_attention": ALWAYS_EQUAL}),
        "transformer": fill(released, {"l2_attention": TRANSFORMER + released.cells[3].source}),
        "astcheat": fill(released, {"l2_attention": AST_CHEAT + released.cells[3].source}),
        "loop": fill(released, dict(answers(), l2_flops=LOOP + answers()["l2_flops"])),
        "hardloop": fill(released, answers(l2_serving=HARD_LOOP)),
        "exitkernel": fill(released, answers(l2_serving=EXIT_KERNEL)),
        "tamper": fill(released, answers(l2_attention=attack["tamper"])),
        "leak": fill(released, answers(l2_attention=attack["probe"], l2_serving=attack["leak"])),
        "peek": fill(released, {"l2_attention": attack["peek"]}),
        "hog": fill(released, answers(l2_cache=attack["hog"])),
        "forge": fill(released, answers(l2_attention=attack["forge"])),
    }
    kernel = fill(released, answers())
    kernel.metadata["kernelspec"] = {
        "name": "no-such-kernel",
        "display_name": "nothing",
        "language": "python",
    }
    subs["badkernel"] = kernel
    # A correct notebook of 10 MB (two charts pasted into markdown): the size grading/README.md
    # promises on the fast path, far past one pipe read (64 KiB).
    big = fill(released, answers())
    chart = base64.b64encode(random.Random(0).randbytes(3_800_000)).decode()
    for name in ("chart.png", "again.png"):
        cell = nbformat.v4.new_markdown_cell(f"![chart](attachment:{name})")
        cell.attachments = {name: {"image/png": chart}}
        big.cells.append(cell)
    subs["bigchart"] = big
    # nbgrader metadata that is not a mapping, on cells of the student's own, and a cell pasted
    # from another lab with its grade_id: graded as ordinary cells (nbgrader alone fails the
    # whole notebook on each)
    odd = fill(released, answers())
    odd.cells.append(nbformat.v4.new_markdown_cell("my notes", metadata={"nbgrader": "mine"}))
    odd.cells.append(nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": ["a", "list"]}))
    pasted = {"grade": False, "solution": True, "locked": False, "grade_id": "l1_gelu"}
    pasted["schema_version"] = 3
    odd.cells.append(nbformat.v4.new_code_cell("y = 2", metadata={"nbgrader": pasted}))
    # and metadata the instructor's pages would read: her notebook's (a widget state, an
    # exporter for nbconvert's script export), her code cells' (hidden source, tags)
    odd.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    odd.metadata["language_info"] = {"name": "python", "nbconvert_exporter": "os.system"}
    for cell in odd.cells:
        if cell.cell_type == "code":
            cell.metadata.update(jupyter={"source_hidden": True}, tags=["hers"], collapsed=True)
    subs["oddmeta"] = odd
    subs["escapes"] = fill(released, answers(l2_serving=ESCAPES))
    for name, (prelude, inside) in VERDICT_ATTACKS.items():
        cells = {
            grade_id: code.replace("    return ZERO", f"    {inside}\n    return ZERO")
            if inside
            else code
            for grade_id, code in ZEROS.items()
        }
        cells["l2_attention"] = prelude + cells["l2_attention"]
        subs[name] = fill(released, cells)
    subs["zeros"] = fill(released, dict(ZEROS, l2_attention="ZERO = 0\n" + ZEROS["l2_attention"]))
    # An answer cell marked locked, as the lab's own cells are (a flag reader that trusted the
    # mark would skip it).
    locked = fill(
        released,
        dict(
            ZEROS,
            l2_attention="import os\nos.sys.displayhook(10)\nZERO = 0\n" + ZEROS["l2_attention"],
        ),
    )
    cell = next(c for c in locked.cells if c.metadata.get("nbgrader", {}).get("solution"))
    cell.metadata["nbgrader"]["locked"] = True
    subs["lockedcell"] = locked
    # Correct answers that keep the hidden tests' inputs and print them in a later cell: the
    # instructor sees them, the feedback does not.
    keep = fill(
        released,
        answers(
            l2_attention=SEEN,
            l2_serving="print('SEEN', sorted(set(_seen)))",
        ),
    )
    subs["inputs"] = keep
    subs["smuggle"] = fill(
        released,
        answers(l2_attention=SEEN, l2_cache=SMUGGLE_CACHE, l2_serving=SMUGGLE_COUNT),
    )
    subs["smuggle2"] = fill(released, answers(l2_attention=DISPLAY_EARLY, l2_serving=DISPLAY_LATER))
    subs["tqdm"] = fill(released, dict(answers(), l2_attention=TQDM))
    subs["killexec"] = fill(released, answers(l2_serving=KILL_EXECUTOR))
    subs["manyclasses"] = fill(released, dict(answers(), l2_attention=MANY_CLASSES))
    subs["noroom"] = fill(released, dict(answers(), l2_attention=OUTSIDE_THE_ROOM))
    subs["shadow"] = fill(released, answers(l2_serving=SHADOW))
    subs["stopnames"] = fill(
        released, answers(l2_cache=STOP_NAME_CACHE, l2_serving=STOP_NAME_SERVING)
    )
    subs["stoploop"] = fill(released, answers(l2_serving="import time\n" + STOP_CALL))
    # the first two graded, each by a worker of its own, at one time (students go in name order)
    subs["a1hold"] = fill(released, answers(l2_attention=HOLD_IN_FLIGHT))
    subs["a2pass"] = fill(
        released, dict(answers(), l2_attention=PASS_ONE + answers()["l2_attention"])
    )
    deleted = copy.deepcopy(released)
    deleted.cells = []
    subs["nocells"] = deleted
    return subs


def tree_digest(folder, skip=()):
    """{relative path: sha256} of every file under `folder`, except under `skip` prefixes."""
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if any(relative.startswith(s) for s in skip):
            continue
        if path.is_symlink():
            found[relative] = f"link to {os.readlink(path)}"
        elif path.is_file():
            found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def marked_processes():
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if MARKER in command and "pytest" not in command:
                found.append(f"{entry.name}: {command[:120]}")
    return found


@pytest.fixture(scope="module")
def batch(tmp_path_factory, sandbox_installed):
    course = tmp_path_factory.mktemp("hostile-course")
    grading = course_copy(course)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", "generate_assignment", LAB, "--force"],
        cwd=grading,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    released = nbformat.read(course / "labs" / LAB / f"{LAB}.ipynb", as_version=4)
    submitted = grading / "submitted"
    for student, nb in submissions(released, course).items():
        (submitted / student / LAB).mkdir(parents=True)
        nbformat.write(nb, submitted / student / LAB / f"{LAB}.ipynb")

    def folder(student):
        (submitted / student / LAB).mkdir(parents=True)
        return submitted / student / LAB

    nbformat.write(fill(released, answers()), folder("renamed") / f"{LAB} (1).ipynb")
    (folder("badjson") / f"{LAB}.ipynb").write_text('{"cells": [ this is not json')
    (folder("emptydir") / "notes.txt").write_text("I forgot to attach it")
    nbformat.write(released, folder("twonotebooks") / "draft.ipynb")
    nbformat.write(released, submitted / "twonotebooks" / LAB / "final.ipynb")
    nbformat.write(fill(released, answers()), folder("dirnotebook") / f"{LAB}.ipynb")
    (submitted / "dirnotebook" / LAB / "draft.ipynb").mkdir()  # a folder, not a notebook
    (folder("dirlab") / f"{LAB}.ipynb").mkdir()
    (folder("link") / f"{LAB}.ipynb").symlink_to(grading / "gradebook.db")

    with Gradebook(f"sqlite:///{grading / 'gradebook.db'}", course_id="LM10") as gradebook:
        source_cells = {c.name: c.source for c in gradebook.find_notebook(LAB, LAB).source_cells}
    outside = {PRIVATE_TMP: Path(PRIVATE_TMP).exists()}
    skip = (
        "grading/autograded/",
        "grading/feedback/",
        "grading/gradebook.db",
        "grading/autograde-",
        "grading/__pycache__/",
    )
    before = tree_digest(course, skip)
    repository_before = tree_digest(ROOT / "solutions")

    results = {
        r.student: r
        for r in autograde.autograde(
            LAB, grading=grading, jobs=2, timeout=400, cell_timeout=CELL_TIMEOUT, alone_time=1
        )
    }
    survivors = marked_processes()
    after = tree_digest(course, skip)

    with Gradebook(f"sqlite:///{grading / 'gradebook.db'}", course_id="LM10") as gradebook:
        scores = {}
        manual = {}
        for student in results:
            notebook = gradebook.find_submission_notebook(LAB, LAB, student)
            scores[student] = sum(g.score for g in notebook.grades)
            manual[student] = [g.name for g in notebook.grades if g.manual_score is not None]
        source_after = {c.name: c.source for c in gradebook.find_notebook(LAB, LAB).source_cells}
    feedback = subprocess.run(
        [sys.executable, "-m", "nbgrader", "generate_feedback", LAB, "--force"],
        cwd=grading,
        env=env,
        capture_output=True,
        text=True,
    )
    return {
        "course": course,
        "results": results,
        "scores": scores,
        "manual": manual,
        "survivors": survivors,
        "before": before,
        "after": after,
        "repository_before": repository_before,
        "outside": outside,
        "source_cells": source_cells,
        "source_after": source_after,
        "feedback": feedback,
        "autograde": autograde,
        "env": env,
    }


EXPECTED = {  # student: (status, autograded points of 10, words the report must contain)
    "ok": ("graded", 10, "all autograded tests passed"),
    "renamed": ("graded", 10, f"graded {LAB} (1).ipynb as {LAB}.ipynb"),
    "badkernel": ("graded", 10, "all autograded tests passed"),
    # logging is outside the labs' vocabulary (its config module finds modules by name): a
    # person reads it; its stderr still costs nothing
    "stderr": ("flagged", 10, "stderr (not penalised) in l2_attention"),
    "sysexit": ("graded", 10, "all autograded tests passed"),
    "flood": ("graded", 10, "all autograded tests passed"),
    "blank": ("graded", 0, "first failure l2_test_attention: NotImplementedError"),
    "alwayseq": ("flagged", 0, "must give exactly type int, got __main__.Anything"),
    "transformer": ("flagged", 0, "uses get_ipython"),
    "astcheat": ("flagged", 0, "uses get_ipython"),
    # loop's FLOP count is never defined: the comparison, which calls it, meets its right
    # values while its test runs (lmcourse.standins) and keeps its points. Both ran out of
    # time beside other submissions (a classmate's memory may have slowed them): hardloop,
    # first in the students' order, is graded again alone; that spends the batch's 1 s of
    # --alone-time, so loop is flagged for a person instead
    "loop": (
        "flagged",
        8,
        "FLAGGED for review: it ran out of the per-cell time limit (l2_flops) beside other "
        "submissions, one of which may have slowed it, and was not graded again alone: the "
        "batch's --alone-time (1 s) was spent",
    ),
    "hardloop": (
        "graded",
        8,
        "graded again alone: its first run, beside other submissions, ran out of the per-cell "
        "time limit (l2_serving), which a submission graded beside it may have caused | "
        "stopped l2_serving: it ran past",
    ),
    "exitkernel": ("flagged", 8, "stopped l2_serving: the kernel died"),
    # tamper and hog leave processes running (a python retrying the gradebook, `sleep 600`):
    # alive during every graded call, each stops it (offlimits.PROGRAM), as a process of hers
    # could compute what the guard cannot see (a test that declares nothing arms no guard: hog 2)
    "tamper": ("flagged", 0, "imports sqlite3"),
    "leak": ("flagged", 10, "reads In"),
    "peek": ("flagged", 0, "opens a file"),
    "hog": ("flagged", 2, "imports subprocess"),
    "forge": ("flagged", 10, "imports os"),
    "badjson": ("error", 0, "NotJSONError"),
    "emptydir": ("error", 0, "no notebook in the submission folder"),
    "twonotebooks": (
        "error",
        0,
        f"2 notebooks (draft.ipynb, final.ipynb) and none named {LAB}.ipynb",
    ),
    "link": ("error", 0, "is a link, not a notebook file"),
    "dirlab": ("error", 0, f"{LAB}.ipynb is a folder (or another non-file), not a notebook"),
    "dirnotebook": ("graded", 10, "all autograded tests passed"),
    "bigchart": ("graded", 10, "all autograded tests passed"),
    "oddmeta": ("graded", 10, "all autograded tests passed"),
    "escapes": ("graded", 8, "first failure l2_test_serving: ValueError: fake 10.0 / 13.0 all"),
    "nocells": ("error", 0, "none of the lab's answer cells"),
    "zeros": ("graded", 0, "first failure l2_test_attention: AssertionError"),
    # every attack on the verdict leaves the wrong answers at 0; flags are information only
    # (shell2 reaches the shell with get_ipython as a value: flagged since the thirtieth hub
    # tester, as the shell's run_cell runs any string unread)
    "displayhook": ("flagged", 0, "imports os"),
    "displayhook2": ("flagged", 0, "imports sys"),
    "shadowtype": ("flagged", 0, "must give exactly type int, got __main__.Anything"),
    "shadowtype2": ("flagged", 0, "must give exactly type int, got __main__.Same"),
    "shell": ("flagged", 0, "uses get_ipython"),
    "shell2": ("flagged", 0, "get_ipython passed around as a value"),
    "posttransformer": ("flagged", 0, "uses get_ipython"),
    "tracer": ("flagged", 0, "imports sys"),
    "callback": ("flagged", 0, "uses get_ipython"),
    "thread": ("flagged", 0, "imports threading"),
    "aliasmain": ("flagged", 0, "imports sys"),
    "hiddenleak": ("flagged", 0, "imports base64"),
    "lockedcell": ("flagged", 0, "l2_attention line 1: imports os"),
    "inputs": ("graded", 10, "all autograded tests passed"),
    # the smuggled value fails the cache's visible check; the comparison, which holds what
    # that cache function gives, keeps its points (a slip costs its own part): the feedback
    # shows neither the value nor the counter
    # (test_nothing_a_hidden_input_reached_is_in_the_feedback). manyclasses and noroom lose
    # the attention part only: the two parts that call it meet its right values while their
    # tests run (lmcourse.standins).
    "smuggle": ("flagged", 8, "uses get_ipython"),
    "smuggle2": ("graded", 8, "first failure l2_test_serving"),
    "tqdm": ("graded", 10, "all autograded tests passed"),
    "killexec": ("flagged", 10, "reaches the module os through another module's attribute"),
    "manyclasses": ("graded", 8, "more than 256 kinds"),
    "noroom": ("graded", 8, "first failure l2_test_attention: ImportError"),
    "shadow": ("flagged", 10, "imports lm10_shadow, no installed module"),
    # errors of her own named NotRun and CellTimeoutError: ordinary failures, never the grader's
    # (not in the feedback with their hidden inputs, not a cell that ran out of time: graded,
    # not flagged as one that ran out of time beside others)
    "stopnames": ("graded", 6, "first failure l2_test_cache: NotRun: HIDDEN"),
    # a hidden call that never returns: the test stopped at its limit (and not graded again
    # alone: the batch's 1 s of --alone-time went to hardloop)
    "stoploop": (
        "flagged",
        8,
        "FLAGGED for review: it ran out of the per-cell time limit (l2_test_serving) beside",
    ),
    # a2pass lost its first run's attention part to a1hold's descriptors in flight (ETOOMANYREFS,
    # a machine's limit per uid); graded again alone, it earns every point
    "a1hold": ("flagged", 10, "imports os"),
    "a2pass": (
        "flagged",
        10,
        "graded again alone: its first run, beside other submissions, failed on "
        "'[Errno 109] Too many references",
    ),
}


def test_every_submission_scores_what_it_earned(batch):
    results, scores = batch["results"], batch["scores"]
    assert set(results) == set(EXPECTED), sorted(set(results) ^ set(EXPECTED))
    wrong = {}
    for student, (status, points, reason) in EXPECTED.items():
        r = results[student]
        if (
            (r.status, r.score, scores[student]) != (status, points, points)
            or (reason not in r.message)
            or not r.message
        ):
            wrong[student] = (r.status, r.score, scores[student], r.message)
    assert not wrong, "\n".join(f"{s}: got {w}, expected {EXPECTED[s]}" for s, w in wrong.items())


def test_no_grade_was_written_by_a_student(batch):
    assert not any(batch["manual"].values()), f"manual scores appeared: {batch['manual']}"
    assert batch["source_after"] == batch["source_cells"], "the gradebook's source cells changed"
    for student, r in batch["results"].items():
        assert r.max_score == 13.0, f"{student}: maximum {r.max_score}"


def test_nothing_outside_the_grading_outputs_changed(batch):
    before, after = batch["before"], batch["after"]
    added = sorted(set(after) - set(before))
    assert added == [f"grading/submitted/renamed/{LAB}/{LAB}.ipynb"], added
    changed = sorted(p for p in before if after.get(p) != before[p])
    assert not changed, f"files changed or removed by grading: {changed}"
    assert tree_digest(ROOT / "solutions") == batch["repository_before"]
    assert not Path(PRIVATE_TMP).exists() or batch["outside"][PRIVATE_TMP], (
        f"a submission wrote {PRIVATE_TMP} on the grader's machine"
    )


def test_nothing_outside_the_submission_was_readable(batch):
    autograded = batch["course"] / "grading" / "autograded"
    for student in ("tamper", "leak", "peek"):
        nb = nbformat.read(autograded / student / LAB / f"{LAB}.ipynb", as_version=4)
        text = "\n".join(
            o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
        )
        # The sandbox's own /tmp is private and writable: the host's is checked elsewhere.
        reached = [
            line
            for line in text.split("\n")
            if re.match(r"(READ|WRITE|COPY)-OK", line) and PRIVATE_TMP not in line
        ]
        assert not reached, f"{student} reached out: {reached}"
        assert student == "peek" or re.search(r"(READ|WRITE|COPY)-DENIED", text), (
            f"blind check: {student}'s attack did not run:\n{text[:2000]}"
        )


def test_the_autograded_notebook_keeps_none_of_her_metadata(batch):
    """nbconvert's ClearMetadataPreprocessor, listed among the autograde steps, came disabled
    and cleared nothing: every key of her notebook's and her code cells' metadata reached the
    autograded notebook the instructor's pages render (the eighty-second hub tester's). It
    runs now: the notebook keeps its language's name and the grader's `lm10`, a code cell
    nbgrader's own and the grader's feedback mark."""
    nb = nbformat.read(
        batch["course"] / "grading" / "autograded" / "oddmeta" / LAB / f"{LAB}.ipynb",
        as_version=4,
    )
    assert set(nb.metadata) == {"language_info", "lm10"}, nb.metadata.keys()
    assert nb.metadata["language_info"] == {"name": "python"}, nb.metadata["language_info"]
    kept = {k for c in nb.cells if c.cell_type == "code" for k in c.metadata}
    assert kept <= {"nbgrader", "lm10_feedback"} and "nbgrader" in kept, kept


def test_no_process_outlived_the_batch(batch):
    assert not batch["survivors"], f"still running after the batch: {batch['survivors']}"


def test_resource_limits_held(batch):
    nb = nbformat.read(
        batch["course"] / "grading" / "autograded" / "hog" / LAB / f"{LAB}.ipynb", as_version=4
    )
    text = "\n".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    assert "64 GB: MemoryError" in text and "File too large" in text, text[:2000]
    group = sandbox.ProcessGroup(8)
    limited = group.path is not None or os.getuid() != 0  # RLIMIT_NPROC does not bind root
    group.close()
    if limited:
        assert re.search(r"\d+ processes, then", text), text[:2000]
    flood = batch["course"] / "grading" / "autograded" / "flood" / LAB / f"{LAB}.ipynb"
    assert flood.stat().st_size < 1_000_000, f"flood's notebook is {flood.stat().st_size:,} bytes"


def test_feedback_holds_only_pages_without_hidden_tests(batch):
    assert batch["feedback"].returncode == 0, batch["feedback"].stderr[-3000:]
    feedback = batch["course"] / "grading" / "feedback"
    files = [p for p in feedback.rglob("*") if p.is_file()]
    assert files and all(p.suffix == ".html" for p in files), sorted(map(str, files))
    hidden = set()
    for source in batch["source_cells"].values():
        inside = False
        for line in source.split("\n"):
            inside = inside or BEGIN in line
            if inside and len(line.strip()) >= 12 and BEGIN not in line and END not in line:
                hidden.add(line.strip())
            inside = inside and END not in line
    released = (batch["course"] / "labs" / LAB / f"{LAB}.ipynb").read_text()
    released = "\n".join(c.source for c in nbformat.reads(released, as_version=4).cells)
    hidden = {line for line in hidden if line not in released}
    assert len(hidden) > 10, "blind check: no hidden-only lines found"
    for page in files:
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        shown = [line for line in hidden if line in text]
        assert not shown, f"{page.relative_to(feedback)} shows hidden tests: {shown[:3]}"
    # The student's kernel never ran a test: what it printed of its history (leak) or of each
    # cell it was about to run (hiddenleak, base64) holds no hidden line, even for the
    # instructor.
    autograded = batch["course"] / "grading" / "autograded"
    for student, marker in (("leak", "print("), ("hiddenleak", "LEAK ")):
        printed = outputs_text(autograded / student / LAB / f"{LAB}.ipynb")
        assert marker in printed, f"blind check: {student}'s printout is not there"
        decoded = printed + "\n".join(
            base64.b64decode(token + "=" * (-len(token) % 4)).decode("utf-8", "replace")
            for token in re.findall(r"LEAK (\S+)", printed)
        )
        shown = [line for line in hidden if line in decoded]
        assert not shown, f"{student}'s kernel saw hidden tests: {shown[:3]}"
    from grading.host.course_preprocessors import AFTER_HIDDEN_STOP

    stopped = html.unescape((feedback / "hardloop" / LAB / f"{LAB}.html").read_text())
    # her loop stopped the last part, after hidden tests had called her code: the feedback
    # says the grader stopped it, in fixed words, and not why (the seventy-sixth hub tester's
    # 95416c1: why was her values' choice); the instructor's notebook says why
    assert AFTER_HIDDEN_STOP in stopped, "the feedback should say the grader stopped the test"
    assert "ignored the interrupt" not in stopped
    stderr = html.unescape((feedback / "stderr" / LAB / f"{LAB}.html").read_text())
    assert "never costs points" in stderr, "the feedback should say stderr cost nothing"


def outputs_text(path):
    """Every output text of a notebook's code cells, joined."""
    nb = nbformat.read(path, as_version=4)
    return "\n".join(
        str(o.get("text", "")) + str(o.get("evalue", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )


def test_hidden_inputs_reach_the_instructor_but_not_the_feedback(batch):
    """A correct answer that records the hidden tests' arguments and prints them in a later
    cell: the instructor's copy shows them; the feedback replaces that cell's outputs."""
    autograded = batch["course"] / "grading" / "autograded" / "inputs" / LAB / f"{LAB}.ipynb"
    printed = outputs_text(autograded)
    assert "SEEN [(" in printed and "(576, 9, 3)" in printed, "blind check: nothing printed"
    page = batch["course"] / "grading" / "feedback" / "inputs" / LAB / f"{LAB}.html"
    text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
    assert "SEEN [(" not in text, "the feedback shows the hidden tests' inputs"
    assert "outputs not shown in feedback" in text


def test_nothing_a_hidden_input_reached_is_in_the_feedback(batch):
    """smuggle encodes a hidden test's input (576, 9, 3) in the value a later visible check
    prints and in the kernel's execution counter: the instructor's copy shows the value, the
    feedback neither (nor any execution count the kernel chose)."""
    course = batch["course"] / "grading"
    graded = outputs_text(course / "autograded" / "smuggle" / LAB / f"{LAB}.ipynb")
    assert "576,009,003" in graded, "blind check: the smuggled value is not in the notebook"
    page = (course / "feedback" / "smuggle" / LAB / f"{LAB}.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    for smuggled in ("576,009,003", "576009003", "576_009_003"):
        assert smuggled not in text.replace("576_009_003", ""), f"the feedback shows {smuggled}"
    assert "This visible check failed after a hidden test had called your code" in text
    page = (course / "feedback" / "smuggle2" / LAB / f"{LAB}.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "calls so far: none" in text, "blind check: the early display is not there"
    # (the student's own source, which the feedback shows, spells "CALLS: {" and "Leak_" + ...)
    assert "CALLS: [(" not in text, "the feedback shows the calls an earlier display recorded"
    assert not re.search(r"Leak_\d", text), "the feedback shows a hidden call's exception name"
    graded = nbformat.read(course / "autograded" / "smuggle2" / LAB / f"{LAB}.ipynb", 4)
    names = [o.get("ename") for c in graded.cells if c.cell_type == "code" for o in c.outputs]
    leaked = [n for n in names if n and re.fullmatch(r"Leak_\d+_\d+_\d+_\d+", n)]
    assert leaked, f"blind check: the hidden call raised, carrying its arguments: {names}"
    shadow = outputs_text(course / "autograded" / "shadow" / LAB / f"{LAB}.ipynb")
    assert "SHADOW-REFUSED" in shadow and "SHADOW-RAN" not in shadow, shadow[:2000]
    room = outputs_text(course / "autograded" / "noroom" / LAB / f"{LAB}.ipynb")
    assert "NOT-IN-ROOM transformers is not available to your code" in room, room[:2000]
    # errors named as the grader's own, carrying a hidden call's arguments: shown to the
    # instructor, not in the feedback; the grader's own stop of a test keeps its words there
    named = outputs_text(course / "autograded" / "stopnames" / LAB / f"{LAB}.ipynb")
    assert len(re.findall(r"HIDDEN \d", named)) >= 2, (
        f"blind check: nothing raised: {named[-2000:]}"
    )
    page = (course / "feedback" / "stopnames" / LAB / f"{LAB}.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert not re.search(r"HIDDEN \d", text), "the feedback shows a hidden call's arguments"
    page = (course / "feedback" / "stoploop" / LAB / f"{LAB}.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert f"CellTimeoutError: the grader stopped this test after {CELL_TIMEOUT} s" in text
    counts = nbformat.read(course / "autograded" / "smuggle" / LAB / f"{LAB}.ipynb", 4)
    numbers = [c.execution_count for c in counts.cells if c.cell_type == "code"]
    assert all(n is None or n < 100 for n in numbers), numbers


def test_report_csv_lists_every_student_with_a_reason(batch):
    report = batch["course"] / "grading" / f"autograde-{LAB}.csv"
    rows = {row["student"]: row for row in csv.DictReader(report.open())}
    assert set(rows) == set(EXPECTED)
    assert all(row["message"] for row in rows.values()), [
        s for s, r in rows.items() if not r["message"]
    ]
    text = report.read_text()
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", text), "control characters"
    assert rows["escapes"]["score"] == "8.0" and "\x1b" not in rows["escapes"]["message"]
    assert all(
        row["isolated"] == ("" if row["status"] == "error" else "yes") for row in rows.values()
    ), {s: (r["status"], r["isolated"]) for s, r in rows.items()}


def test_printed_report_has_no_terminal_escapes(batch):
    """A student's error text shows as text: no escape sequence reaches the terminal."""
    done = grader(batch, *AUTOGRADE, LAB, "--student", "escapes", "--cell-timeout", "40")
    assert done.returncode == 0, done.stdout + done.stderr
    printed = done.stdout + done.stderr
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", printed), printed[-2000:]
    line = next(line for line in printed.splitlines() if line.startswith("escapes "))
    assert re.search(r"graded\s+8\.0 / 13\.0", line), line


def grader(batch, *arguments, env=None, timeout=600):
    """`python ARGUMENTS` (autograde.py, or -m nbgrader ...) in the batch's grading folder, with
    the batch's environment unless `env` is given."""
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=batch["course"] / "grading",
        env=env or batch["env"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def hidden_bwrap(env):
    """`env` with a PATH that holds this environment's commands and no bwrap."""
    return dict(env, PATH=str(Path(sys.executable).parent))


def test_without_bubblewrap_nothing_is_graded(batch, tmp_path):
    """bwrap hidden from PATH: autograde.py and nbgrader's own autograde (the formgrader's)
    stop before any submission runs, and name the fix and the knowing choice."""
    grading = batch["course"] / "grading"
    canary = tmp_path / "canary.txt"  # written by the student's code, were it ever run
    released = nbformat.read(batch["course"] / "labs" / LAB / f"{LAB}.ipynb", as_version=4)
    folder = grading / "submitted" / "canary" / LAB
    folder.mkdir(parents=True)
    nbformat.write(
        fill(released, answers(l2_attention=f"open({str(canary)!r}, 'w').write('ran')")),
        folder / f"{LAB}.ipynb",
    )
    before = tree_digest(grading, skip=("submitted/canary", "__pycache__"))
    env = hidden_bwrap(batch["env"])
    assert shutil.which("bwrap", path=env["PATH"]) is None
    try:
        for command in (
            [*AUTOGRADE, LAB, "--student", "canary", "ok"],
            ["-m", "nbgrader", "autograde", LAB, "--student", "canary"],
        ):
            done = grader(batch, *command, env=env, timeout=300)
            said = done.stdout + done.stderr
            assert done.returncode != 0, said
            assert "bubblewrap (bwrap) is not installed" in said, said[-3000:]
            assert "sudo apt-get install bubblewrap" in said, said[-3000:]
            assert "LM10_GRADE_WITHOUT_ISOLATION=1" in said, said[-3000:]
            assert not canary.exists(), f"{command[:2]} ran the student's code unsandboxed"
            if "grading.batch.autograde" in command:
                assert done.returncode == 2, said
                assert tree_digest(grading, skip=("submitted/canary", "__pycache__")) == before, (
                    "autograde.py wrote to the gradebook, the report or the autograded folders"
                )
    finally:
        shutil.rmtree(grading / "submitted" / "canary")
        shutil.rmtree(grading / "autograded" / "canary", ignore_errors=True)
        url = f"sqlite:///{grading / 'gradebook.db'}"
        with Gradebook(url, course_id="LM10") as gradebook, contextlib.suppress(MissingEntry):
            gradebook.remove_student("canary")


def test_without_isolation_by_choice_grading_runs_and_says_so(batch):
    """`ok` again with LM10_GRADE_WITHOUT_ISOLATION=1 and no bwrap on PATH: graded, loudly not
    isolated in the printed row, the report CSV and the grades export; report merged."""
    grading = batch["course"] / "grading"
    env = dict(hidden_bwrap(batch["env"]), LM10_GRADE_WITHOUT_ISOLATION="1")
    done = grader(
        batch, *AUTOGRADE, LAB, "--student", "ok", "--cell-timeout", str(CELL_TIMEOUT), env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "submissions run WITHOUT isolation" in done.stderr, done.stderr[-2000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("ok "))
    assert re.search(r"graded\s+10\.0 / 13\.0", line), line
    assert "NOT ISOLATED" in line, line
    rows = {
        row["student"]: row for row in csv.DictReader((grading / f"autograde-{LAB}.csv").open())
    }
    assert set(rows) == set(EXPECTED), "rerunning one student must keep the batch's other rows"
    assert "NOT ISOLATED" in rows["ok"]["message"] and rows["ok"]["isolated"] == "no"
    assert rows["stderr"]["status"] == EXPECTED["stderr"][0] and rows["stderr"]["isolated"] == "yes"
    assert rows["badjson"]["isolated"] == "", "a notebook that never ran has no isolation"
    assert rows["ok"]["score"] == "10.0"
    exported = grader(batch, "-m", "nbgrader", "export", "--to", "grades.csv", timeout=300)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    grades = {
        row["student_id"]: row
        for row in csv.DictReader((grading / "grades.csv").open())
        if row["assignment"] == LAB
    }
    assert grades["ok"]["isolated"] == "no" and float(grades["ok"]["raw_score"]) == 10.0
    assert grades["stderr"]["isolated"] == "yes" and float(grades["stderr"]["raw_score"]) == 10.0
    assert grades["badjson"]["isolated"] == "" and float(grades["badjson"]["score"]) == 0.0


def test_a_submission_past_its_time_limit_is_stopped_and_zeroed(batch):
    """`loop` again, now a loop that keeps its core busy, with a 15 s limit for the whole
    notebook and 100 s per cell."""
    grading = batch["course"] / "grading"
    path = grading / "submitted" / "loop" / LAB / f"{LAB}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    spun = [cell for cell in notebook.cells if LOOP in cell.source]
    assert len(spun) == 1, "the loop submission's answer cell is not where it was"
    spun[0].source = spun[0].source.replace(LOOP, SPIN)
    nbformat.write(notebook, path)
    done = grader(
        batch, *AUTOGRADE, LAB, "--student", "loop", "--timeout", "15", "--cell-timeout", "100",
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("loop "))
    assert re.search(r"timeout\s+0\.0 / 13\.0", line), line
    assert "still running after 15 s; stopped" in line, line
    with Gradebook(f"sqlite:///{grading / 'gradebook.db'}", course_id="LM10") as gradebook:
        notebook = gradebook.find_submission_notebook(LAB, LAB, "loop")
        assert sum(g.score for g in notebook.grades) == 0


def test_a_broken_bubblewrap_stops_the_batch_with_the_reason(batch, tmp_path):
    """A bwrap that cannot make namespaces (as in some containers) must not zero everyone."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    grading = batch["course"] / "grading"
    report = (grading / f"autograde-{LAB}.csv").read_text()
    env = dict(batch["env"], PATH=f"{tmp_path}{os.pathsep}{batch['env']['PATH']}")
    done = grader(batch, *AUTOGRADE, LAB, "--student", "ok", env=env, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot make a sandbox here: bwrap: No permissions" in done.stderr, done.stderr
    assert "kernel.unprivileged_userns_clone=1" in done.stderr, done.stderr
    assert "LM10_GRADE_WITHOUT_ISOLATION=1" in done.stderr, done.stderr
    assert (grading / f"autograde-{LAB}.csv").read_text() == report, "nothing may be graded"


def test_the_warm_sandbox_empties_tmp_around_read_only_mounts(tmp_path):
    """A course cloned under /tmp (as CI clones it) has its library bound read-only inside the
    sandbox's own /tmp: between students everything else there goes, the binds stay."""
    # the interpreter itself, not the virtual environment, which may sit under /tmp too: the
    # empty /tmp hides everything there but the bind
    python = os.path.realpath(sys.executable)
    library = tmp_path / "library"
    library.mkdir()
    (library / "module.py").write_text("VALUE = 1\n")
    script = (
        "import os, sys\n"
        "sys.path.insert(0, '/tmp/grader')\n"
        "import sandbox_exec\n"
        "os.makedirs('/tmp/left/behind')\n"
        "open('/tmp/course/student.txt', 'w').write('x')\n"
        "open('/tmp/file.txt', 'w').write('y')\n"
        "sandbox_exec.empty('/tmp', sandbox_exec.mount_points())\n"
        "print(sorted(os.listdir('/tmp')), sorted(os.listdir('/tmp/course')),\n"
        "      os.listdir('/tmp/course/library'))\n"
    )
    done = subprocess.run(
        [
            "bwrap",
            "--unshare-all",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--ro-bind",
            str(library),
            "/tmp/course/library",
            "--ro-bind",
            str(ROOT / "grading" / "in_sandbox"),
            "/tmp/grader",
            python,
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "['course', 'grader'] ['library'] ['module.py']", (
        done.stdout
    )


def grader_script(script):
    """Run `script` in a Python whose working folder is grading/, nbgrader's (it imports
    grading.host.sandbox as the graders do); its finished process, which must have succeeded."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT / "grading",
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return done


def test_only_the_capped_folders_are_writable_in_the_sandbox():
    """/dev (a memory file system of half the machine's RAM) and the root are read-only; the
    home, /tmp and /dev/shm are writable and each capped at Limits.home_bytes, and at
    Limits.files files and folders: empty files, which no byte count sees, took about 1 KiB of
    the machine's memory each, millions of them (the fourteenth hub tester)."""
    script = (
        "import subprocess\n"
        "from grading.host import sandbox\n"
        "limits = sandbox.Limits(home_bytes=8 << 20, files=300)\n"
        "probe = '''\n"
        "for path in ('/dev/note', '/note', '/home/student/n', '/tmp/n', '/dev/shm/n'):\n"
        "    try:\n"
        "        with open(path, 'wb') as handle:\n"
        "            handle.write(bytes(16 << 20))\n"
        "        print(path, 'wrote 16 MB')\n"
        "    except OSError as error:\n"
        "        print(path, error.strerror)\n"
        "for folder in ('/home/student', '/tmp', '/dev/shm'):\n"
        "    made = 0\n"
        "    try:\n"
        "        while made < 5000:\n"
        "            open(f'{folder}/empty-{made}', 'x').close()\n"
        "            made += 1\n"
        "        print(folder, 'made', made)\n"
        "    except OSError as error:\n"
        "        print(folder, 'made', made, error.strerror)\n"
        "'''\n"
        "program = (sandbox.PYTHON, '-c', probe)\n"
        "command = sandbox.bwrap_command(sandbox.bwrap(), limits, program=program)\n"
        "print(subprocess.run(command, capture_output=True, text=True, timeout=60).stdout)\n"
    )
    done = grader_script(script)
    lines = done.stdout.strip().splitlines()
    said = dict(line.split(" ", 1) for line in lines[:5])
    assert said == {
        "/dev/note": "Read-only file system",
        "/note": "Read-only file system",
        "/home/student/n": "No space left on device",
        "/tmp/n": "No space left on device",
        "/dev/shm/n": "No space left on device",
    }, done.stdout
    made = [line.split(" made ") for line in lines[5:]]
    assert [folder for folder, _ in made] == ["/home/student", "/tmp", "/dev/shm"], done.stdout
    for folder, count in made:  # its root, the 8 MiB file and what bubblewrap made count too
        assert count.endswith(" No space left on device"), (folder, count)
        assert 250 < int(count.split()[0]) < 300, (folder, count)


def test_system_v_ipc_cannot_be_made_in_the_sandbox():
    """A System V segment is memory no process limit counts: the sandbox's seccomp filter
    refuses shmget, semget and msgget (ENOSYS), while POSIX shared memory (files in the capped
    /dev/shm, what torch and multiprocessing use) and torch work as before."""
    probe = (
        "import ctypes, os\n"
        "from multiprocessing import shared_memory\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "for name, call in (('shmget', lambda: libc.shmget(0, 64 << 20, 0o1600)),\n"
        "                   ('semget', lambda: libc.semget(0, 1, 0o1600)),\n"
        "                   ('msgget', lambda: libc.msgget(0, 0o1600))):\n"
        "    print(name, call(), os.strerror(ctypes.get_errno()))\n"
        "memory = shared_memory.SharedMemory(create=True, size=1 << 20)\n"
        "memory.buf[:3] = b'abc'\n"
        "print('posix', bytes(memory.buf[:3]).decode())\n"
        "memory.close()\n"
        "memory.unlink()\n"
        "import torch\n"
        "print('torch', int(torch.arange(4).sum()))\n"
    )
    script = (
        "import subprocess, sys, tempfile\n"
        "from grading.host import sandbox\n"
        "rules = tempfile.TemporaryFile()\n"
        "rules.write(sandbox.ipc_filter())\n"
        "rules.seek(0)\n"
        f"command = sandbox.bwrap_command(sandbox.bwrap(), sandbox.Limits(), rules.fileno(), "
        f"(sandbox.PYTHON, '-c', {probe!r}))\n"
        "done = subprocess.run(command, capture_output=True, text=True, timeout=120,\n"
        "                      pass_fds=[rules.fileno()])\n"
        "print(done.stdout, done.stderr, file=sys.stderr if done.returncode else sys.stdout)\n"
        "sys.exit(done.returncode)\n"
    )
    done = grader_script(script)
    said = dict(line.split(" ", 1) for line in done.stdout.strip().splitlines())
    assert said == {
        "shmget": "-1 Function not implemented",
        "semget": "-1 Function not implemented",
        "msgget": "-1 Function not implemented",
        "posix": "abc",
        "torch": "6",
    }, done.stdout
    # the same calls without the filter succeed: the test sees the filter, not a missing libc
    unfiltered = script.replace("rules.fileno(), (", "None, (")
    assert unfiltered != script
    done = grader_script(unfiltered)
    assert "shmget -1" not in done.stdout and "shmget 0" in done.stdout, done.stdout


def test_no_key_of_the_graders_user_is_read_in_the_sandbox():
    """The kernel's keys belong to a uid, not to a namespace: a submission that joins a session
    keyring of its own and links its uid's user keyring into it possesses, and reads, every key
    the grader's user keeps there (a Kerberos ticket, a stored passphrase). The sandbox's filter
    refuses the three keyring calls (ENOSYS); without it, the same probe reads the key planted
    here for the test (the attack is real on this machine)."""
    calls = seccomp.KEYRINGS[seccomp.NATIVE[platform.machine()]]
    secret = f"lm10-secret-{os.getpid()}"
    probe = (
        "import ctypes, errno, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"add_key, request_key, keyctl = {calls!r}\n"
        "def call(*args):\n"
        "    done = libc.syscall(*args)\n"
        "    if done < 0:\n"
        "        raise SystemExit(errno.errorcode[ctypes.get_errno()])\n"
        "    return done\n"
        "call(keyctl, 1, None)\n"  # KEYCTL_JOIN_SESSION_KEYRING: a new one, hers
        "for line in open('/proc/keys'):\n"  # every user keyring of her uid, by serial
        "    fields = line.split()\n"
        "    if fields[7] == 'keyring' and fields[8].startswith('_uid.'):\n"
        "        call(keyctl, 8, int(fields[0], 16), -3)\n"  # KEYCTL_LINK it into hers
        "found = call(keyctl, 10, -3, b'user', b'lm10-hostile-key', 0)\n"  # KEYCTL_SEARCH
        "buffer = ctypes.create_string_buffer(256)\n"
        "size = call(keyctl, 11, found, buffer, 256)\n"  # KEYCTL_READ
        "print('read', buffer.raw[:size].decode())\n"
    )
    script = (
        "import ctypes, subprocess, sys, tempfile\n"
        "from grading.host import sandbox\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"add_key, request_key, keyctl = {calls!r}\n"
        f"secret = {secret!r}.encode()\n"
        "key = libc.syscall(add_key, b'user', b'lm10-hostile-key', secret, len(secret), -4)\n"
        "assert key > 0, ctypes.get_errno()\n"
        "try:\n"
        "    rules = tempfile.TemporaryFile()\n"
        "    rules.write(sandbox.ipc_filter())\n"
        "    rules.seek(0)\n"
        f"    command = sandbox.bwrap_command(sandbox.bwrap(), sandbox.Limits(), rules.fileno(), "
        f"(sandbox.PYTHON, '-c', {probe!r}))\n"
        "    done = subprocess.run(command, capture_output=True, text=True, timeout=120,\n"
        "                          pass_fds=[rules.fileno()])\n"
        "    print((done.stdout + done.stderr).strip())\n"
        "finally:\n"
        "    libc.syscall(keyctl, 3, key)\n"  # KEYCTL_REVOKE: nothing left of the test
        "    libc.syscall(keyctl, 9, key, -4)\n"  # KEYCTL_UNLINK from the user keyring
    )
    assert grader_script(script).stdout.strip().splitlines()[-1] == "ENOSYS"
    unfiltered = script.replace("rules.fileno(), (", "None, (")
    assert unfiltered != script
    unfiltered = grader_script(unfiltered)
    assert unfiltered.stdout.strip().splitlines()[-1] == f"read {secret}", unfiltered.stdout


# Two submissions graded at one time, each in a sandbox of its own, as `make autograde`'s two
# workers grade them: hers (the hog), and `wait` seconds later the classmate's (the mate). The
# script prints {name: [its cell's first output, or the sandbox's log; seconds it took]}.
BESIDE = """
import json, sys, threading, time
import nbformat
from grading.host import sandbox

processes, wait = sys.argv[1], float(sys.argv[2])
limits = sandbox.Limits(processes=int(processes)) if processes else sandbox.Limits()
said = {}


def grade(name, source):
    text = json.dumps(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)]))
    box = sandbox.Sandbox("", limits)
    try:
        start = time.monotonic()
        ran = box.execute(text, 90, 120)
        cells = json.loads(ran.notebook)["cells"] if ran.notebook else None
        # the first output's text, or its error's name and message (a hog that failed to start
        # its processes under load printed nothing, and said only '')
        first = (cells[0]["outputs"] or [{}])[0] if cells else {}
        error = f"{first.get('ename', '')}: {first.get('evalue', '')}"[:300]
        out = (first.get("text") or error).strip() if cells else ran.log[-300:]
        said[name] = [out, round(time.monotonic() - start, 1)]
    finally:
        box.close()


hers = threading.Thread(target=grade, args=("hog", sys.argv[3]))
hers.start()
time.sleep(wait)  # what she holds, she holds while the classmate's notebook runs
grade("mate", sys.argv[4])
hers.join()
print(json.dumps(said))
"""


def beside(hog, mate, processes=None, wait=10, prefix=()):
    """The command that runs BESIDE for her notebook `hog` and the classmate's `mate` (each one
    cell's source), with the sandbox's default limits or `processes` at most, as `prefix` says
    (another user)."""
    return [*prefix, sys.executable, "-c", BESIDE, str(processes or ""), str(wait), hog, mate]


HOLD_THREADS = (
    "import threading, time\n"
    "held = [threading.Thread(target=time.sleep, args=(25,), daemon=True) for _ in range(40)]\n"
    "[t.start() for t in held]\n"
    "print('holding', len(held))\n"
    "time.sleep(25)"
)
START_THREADS = (
    "import threading\n"
    "done = [threading.Thread(target=lambda: None) for _ in range(30)]\n"
    "[t.start() for t in done]\n"
    "[t.join() for t in done]\n"
    "print('started', len(done))"
)


def test_a_submissions_threads_leave_a_classmates_sandbox_its_own():
    """make autograde grades several submissions at once, all as the instructor's user, and the
    kernel counts RLIMIT_NPROC over every task of the uid in the user namespace it is checked
    in. Set before bubblewrap, it counted all of them: one answer holding 40 threads under a
    limit of 64 left the classmate's executor, graded beside it, unable to fork (EAGAIN, her
    notebook lost). Set inside the sandbox, each counts its own: both run. Played as an
    unprivileged user (root is not bound by the limit): the current one, or `nobody` let
    through the folders on the way to this Python."""
    prefix = []
    home = Path(tempfile.mkdtemp(prefix="lm10-classmates-"))  # the grader's HOME and TMPDIR
    closed, bare = [], []
    if os.geteuid() == 0:
        closed = closed_folders()
        bare = let_through(closed, ["nobody"])
        shutil.chown(home, "nobody")
        prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    try:
        done = subprocess.run(
            beside(HOLD_THREADS, START_THREADS, 64, 12, prefix),
            cwd=ROOT,
            env=dict(os.environ, HOME=str(home), TMPDIR=str(home), LMCOURSE_CACHE=str(home)),
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        close_again(closed, bare, ["nobody"])
        shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert (said["hog"][0], said["mate"][0]) == ("holding 40", "started 30"), said


SPIN_SESSIONS = (
    "import subprocess, sys, time\n"
    "spin = [sys.executable, '-c', 'while True: pass']\n"
    "try:\n"
    "    held = [subprocess.Popen(spin, start_new_session=True) for _ in range(100)]\n"
    "except PermissionError:  # no session of her own (sandbox_exec.no_new_sessions)\n"
    "    held = [subprocess.Popen(spin) for _ in range(100)]\n"
    "print('spinning', len(held))\n"
    "time.sleep(18)"  # the classmate's notebook starts 5 s after hers: 13 s or more beside hers
)


def test_a_submissions_sessions_leave_a_classmate_her_share_of_the_cores():
    """The scheduler shares the cores between sessions (autogroups) in the machine's root CPU
    cgroup: a submission whose 100 processes each made a session of their own took 100 shares,
    and the classmate's notebook, graded beside it, waited until hers ended (49 s here for what
    takes 1 s alone: a cell of that classmate's would have run out of its 120 s with a longer
    sleep, its tests scored 0, and no error named a limit for the batch to grade it again). In
    a CPU cgroup of its own each run gets one share (the nineteenth hub tester); and no process
    of a notebook makes a session of its own (sandbox_exec.no_new_sessions), so hers are one
    session wherever the grader runs (tests/test_warm_sandbox_neighbours.py tests each alone)."""
    done = subprocess.run(
        beside(SPIN_SESSIONS, "print(sum(range(10_000_000)))", wait=5),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["hog"][0] == "spinning 100", said
    assert said["mate"][0] == "49999995000000", said
    assert said["mate"][1] < 10, said  # seconds; 1 alone, about 20 or more without the cgroup


def test_no_user_namespace_can_be_made_in_the_sandbox():
    """In a user namespace of its own a submission is "root" and reaches the parts of the
    kernel only root reaches (netfilter, many file systems' mounts): the sandbox makes none
    possible (bubblewrap's --disable-userns: ENOSPC), as the hub does for students' servers."""
    probe = (
        "import ctypes, errno, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    done = libc.unshare(0x10000000 | 0x40000000) == 0\n"  # CLONE_NEWUSER | CLONE_NEWNET
        "    os._exit(0 if done else ctypes.get_errno())\n"
        "code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])\n"
        "print('made' if code == 0 else errno.errorcode.get(code, code))\n"
    )
    script = (
        "import subprocess\n"
        "from grading.host import sandbox\n"
        f"command = sandbox.bwrap_command(sandbox.bwrap(), sandbox.Limits(), "
        f"program=(sandbox.PYTHON, '-c', {probe!r}))\n"
        "print(subprocess.run(command, capture_output=True, text=True, timeout=60).stdout)\n"
    )
    done = grader_script(script)
    assert done.stdout.strip() == "ENOSPC", (done.stdout, done.stderr)


def test_feedback_names_no_exception_the_students_code_chose():
    """After a hidden input reached the student's code, which exception it raised could spell
    bits of that input (a hidden width modulo 4 as one of four of Python's names): the
    feedback says "Error", except for a failed check."""
    from grading.host.course_preprocessors import shown_name

    for name in ("BufferError", "LookupError", "ValueError", "Leak_576", "OffLimitsError"):
        assert shown_name(name) == "Error", name
    assert shown_name("AssertionError") == "AssertionError"


def test_the_warm_sandbox_empties_a_tree_of_any_depth(tmp_path):
    """A student's tree 3,000 folders deep, some read-only, in a folder the warm sandbox
    empties between students: Python's own walkers recurse and stopped on it."""
    from grading.in_sandbox import sandbox_exec

    root = tmp_path / "home"
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    for depth in range(3000):
        os.mkdir("d", dir_fd=fd)
        if depth % 500 == 0:
            os.open("f", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        if depth % 700 == 0:
            os.chmod("d", 0o500, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    (root / "plain.txt").write_text("x")
    sandbox_exec.empty(str(root), set())
    assert list(root.iterdir()) == []
