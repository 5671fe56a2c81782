"""Grader processes: each imports nbgrader once, keeps a warm sandbox (sandbox.Sandbox) and a
warm trusted test process (trusted_tests.TrustedHost), and autogrades the submissions it is sent,
one at a time, with nbgrader's own autograde step, in its own process, so that a crash or a
hang costs only its own student (a worker that dies or runs past its time is replaced).

The protocol is one JSON line each way: {"student"} in; {"success", "log", "notes"} out, the
notes being the `results.Notes` the sandboxed execution left (course_preprocessors.take_notes).
"""

import contextlib
import ctypes
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grading.batch.intake import warm_imports
from grading.batch.results import Notes, Result

LOCKED = "database is locked"
# The gradebook's lock as nbgrader's log names it: the exception line of its last traceback
# (log_reason), never words anywhere in the log, which holds text of the submission's own (a
# grade id nbgrader warns about, the last line the sandbox printed, in a SandboxError): her
# notebook that printed "database is locked" and then failed was run 6 times, each up to
# --timeout (the twenty-third hub tester's table, grading/JUPYTERHUB.md).
GRADEBOOK_LOCKED = re.compile(
    r"(?:sqlalchemy\.exc\.OperationalError: \(sqlite3\.OperationalError\)"
    r"|sqlite3\.OperationalError:) database is locked"
)
SLACK = 120  # seconds the grader process gets beyond the sandbox's --timeout
STARTUP = 600  # seconds a new worker may take to import nbgrader and warm its sandbox


def log_reason(log):
    """Why nbgrader failed, from its log: the exception line of the last traceback, else the
    first ERROR line that is not nbgrader's generic wrapper."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    generic = (
        "There was an error processing",
        "Please see the",
        "Traceback (most recent",
        "nbgrader.",
        "ERROR | Failed",
        "Interrupting kernel",
        "Timeout waiting",
    )
    exceptions = [
        line
        for line in lines
        if re.match(r"^[A-Za-z_.]*(Error|Exception|Exit)\b.*:", line)
        and not line.startswith("nbgrader.converters.base.NbGraderException")  # its wrapper
    ]
    if exceptions:
        return exceptions[-1][:400]
    errors = [
        line
        for line in lines
        if ("ERROR" in line or "WARNING" in line) and not any(g in line for g in generic)
    ]
    return (errors[0] if errors else (lines[-1] if lines else "no output"))[:400]


def environment(threads=None):
    """This environment with its bin first on PATH (nbgrader shells out to `alembic`), and, for
    parallel workers, `threads` torch threads each: workers that each start one thread per core
    oversubscribe the machine, and torch then runs several times slower than single-threaded."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    if threads is not None:
        env.setdefault("OMP_NUM_THREADS", str(threads))
    return env


class Worker:
    """The batch's handle on one grader process (`python -m grading.batch.workers`, which runs
    `serve`), started when first asked and replaced after it dies or is stopped."""

    def __init__(self, lab, grading, timeout, cell_timeout, threads):
        self.command = [
            sys.executable,
            "-m",
            "grading.batch.workers",
            lab,
            str(grading),
            "--timeout",
            str(timeout),
        ]
        if cell_timeout:
            self.command += ["--cell-timeout", str(cell_timeout)]
        self.grading, self.env, self.process = grading, environment(threads), None

    def start(self):
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 (kept while the worker runs)
        # A session of its own, so that a timeout stops the sandbox it started as well.
        self.process = subprocess.Popen(
            self.command,
            cwd=self.grading,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            start_new_session=True,
        )
        self.buffer = b""

    def ask(self, student, wait):
        """The reply {"success", "log", "notes"} for `student`; TimeoutError after `wait`
        seconds, EOFError (with the worker's last words) when it died."""
        if self.process is None:
            self.start()
        deadline = time.monotonic() + wait
        try:
            self.process.stdin.write((json.dumps({"student": student}) + "\n").encode())
            self.process.stdin.flush()
            while b"\n" not in self.buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.process.stdout], [], [], left)[0]:
                    raise TimeoutError
                chunk = os.read(self.process.stdout.fileno(), 1 << 16)
                if not chunk:
                    raise BrokenPipeError
                self.buffer += chunk
        except BrokenPipeError:
            self.errors.seek(0)
            last = self.errors.read().decode("utf-8", "replace").strip().splitlines()[-1:]
            raise EOFError(
                f"the grader process died ({last[0][:300] if last else 'silently'})"
            ) from None
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def stop(self, kill=False):
        if self.process is None:
            return
        if not kill:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                kill = True
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.errors):
            with contextlib.suppress(OSError):
                stream.close()
        self.process = None


def serve(lab, grading, timeout, cell_timeout):
    """The worker's side: read {"student"} lines, autograde each in this process with
    nbgrader's API (its Autograde app, the configuration in `grading`), answer one JSON line
    with nbgrader's verdict and the run's Notes."""
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever else prints goes to the log, never into the answers
    with contextlib.suppress(OSError, AttributeError):  # die with the batch (Linux)
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(grading)).load_config()
    config.SandboxedExecute.total_timeout = timeout
    if cell_timeout:
        config.Execute.timeout = cell_timeout
    from grading.host import course_preprocessors, sandbox, trusted_tests

    root = Path(config.CourseDirectory.root)
    imports, room_imports = warm_imports(root / "labs" / lab / f"{lab}.ipynb")
    limits = sandbox.SandboxLimits(config=config)  # as SandboxedExecute reads them
    if room_imports is None:
        sandbox.warm(imports, limits.limits())
    else:  # the lab declares a room (grading/host/room.py): its sandbox imports what it holds
        sandbox.warm(room_imports, limits.limits(room=True))
    trusted_tests.warm(imports)
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    try:
        for line in sys.stdin:
            request = json.loads(line)
            course_preprocessors.take_notes()  # nothing left from before
            done = api.autograde(lab, request["student"], force=True, create=True)
            notes = course_preprocessors.take_notes() or Notes()
            reply = {
                "success": bool(done["success"]),
                "log": "\n".join([done.get("log") or "", done.get("error") or ""]),
                "notes": notes.to_json(),
            }
            protocol.write(json.dumps(reply) + "\n")
            protocol.flush()
    finally:
        sandbox.cool()
        trusted_tests.cool()


def run_nbgrader(worker, lab, student, timeout, retries):
    """Autograde one submission in `worker`; retry only when the gradebook was locked
    (GRADEBOOK_LOCKED).

    Returns (Result, Notes): the notes are what the sandboxed execution reported (flags, cells
    stopped, stderr), empty when the worker died or ran out of time."""
    start = time.monotonic()
    stopped = f"still running after {timeout} s; stopped"

    def result(status, attempt, message=""):
        return Result(
            student, status, attempts=attempt, seconds=time.monotonic() - start, message=message
        )

    for attempt in range(1, retries + 2):
        wait = timeout + SLACK + (STARTUP if worker.process is None else 0)
        try:
            reply = worker.ask(student, wait)
            notes = Notes.from_json(reply["notes"])
            log, success = str(reply["log"]), reply["success"] is True
        except TimeoutError:
            worker.stop(kill=True)
            return result("timeout", attempt, stopped), Notes()
        except EOFError as error:
            worker.stop(kill=True)
            return result("error", attempt, str(error)), Notes()
        except (KeyError, TypeError, ValueError) as error:  # a reply not as `serve` writes it
            worker.stop(kill=True)
            return result("error", attempt, f"the grader process replied badly: {error}"), Notes()
        if notes.timeout:
            return result("timeout", attempt, stopped), notes
        if success or not GRADEBOOK_LOCKED.match(log_reason(log)):
            if success:
                return result("graded", attempt), notes
            return result("error", attempt, log_reason(log)), notes
        time.sleep(attempt * 2.0)  # the lock holder finishes a short transaction meanwhile
    return result("error", attempt, f"{LOCKED} after {attempt} attempts"), notes


def main(argv=None):
    """`python -m grading.batch.workers LAB GRADING [--timeout S] [--cell-timeout S]`: a worker
    process, as Worker starts it (not a command for people)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__.split(":")[0])
    parser.add_argument("lab")
    parser.add_argument("grading", type=Path, help="the folder of the course's nbgrader_config.py")
    parser.add_argument("--timeout", type=int, required=True)
    parser.add_argument("--cell-timeout", type=int)
    args = parser.parse_args(argv)
    serve(args.lab, args.grading, args.timeout, args.cell_timeout)


if __name__ == "__main__":
    main()
