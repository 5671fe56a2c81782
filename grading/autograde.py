"""Autograde every submission of one lab in parallel, each in a sandbox, and report honestly.

    python grading/autograde.py LM10-L2 [--jobs N] [--timeout S] [--cell-timeout S]
                                        [--retries R] [--student ID ...]

`nbgrader autograde` grades one submission after another in one process, and one bad notebook
stops the run. This script starts `--jobs` grader workers (default: every core), each
`autograde.py LAB --worker`, and hands each the next submission when it is free. A worker
imports nbgrader once and grades one submission at a time with nbgrader's autograde step, so a
crash, a notebook that does not parse or one that runs past `--timeout` seconds affects only
its own student (a worker that dies or hangs is replaced). Inside, the student's code runs in a
sandbox (course_preprocessors.SandboxedExecute, grading/sandbox.py): the worker's warm sandbox,
which imported the lab's modules once and forks a fresh kernel for every submission. Only the
workers read submissions and write the gradebook.

Nothing runs without a sandbox: where bubblewrap is missing or cannot make one, the batch
stops before the gradebook is opened, naming the fix (sandbox.require); only
`--without-isolation` (LM10_GRADE_WITHOUT_ISOLATION=1) grades anyway, and every row then says
"NOT ISOLATED".

Before grading, each submission folder must hold the lab's notebook: a single notebook under
another name (`LM10-L2 (1).ipynb`) is graded as the lab's, with a note; none, several, or a
link instead of a file is reported with the reason.

A submission's status comes from the gradebook, not from words in a log: `graded` when every
autograded cell has a score, `flagged` when it is graded but its code reaches past the lab
(IPython hooks, files, processes, redefined references: see submission_checks.py; a person
should read it), `timeout` when it ran past --timeout, `error` otherwise. Submissions not
graded get zero in the gradebook (so exports and feedback never miss a student). Every line of
the report says why: the first failing test and its message, cells stopped, stderr, flags.

The gradebook is one SQLite file and every process writes to it. Writers take turns:
nbgrader_config.py gives SQLite a busy timeout, a process that still fails on a locked
database is retried, and at the end this script reads the gradebook back.

The report is printed, with a progress line per submission on stderr, and merged into
grading/autograde-LAB.csv: a rerun replaces the rows of the students it graded and keeps the
others, so grading one student again never loses the batch's report.
"""

import argparse
import ast
import contextlib
import csv
import ctypes
import json
import os
import queue
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, fields
from pathlib import Path

import nbformat
import submission_checks  # beside this file (grading/ is on sys.path for it and its callers)
from sanitise import plain

GRADING = Path(__file__).resolve().parent
LOCKED = "database is locked"
SLACK = 120  # seconds the grader process gets beyond the sandbox's --timeout


@dataclass
class Result:
    student: str
    status: str  # graded | flagged | error | timeout
    score: float = 0.0
    max_score: float = 0.0
    attempts: int = 0
    seconds: float = 0.0
    message: str = ""
    isolated: str = ""  # yes | no (LM10_GRADE_WITHOUT_ISOLATION=1) | "" (never ran)


def course_paths(grading=GRADING):
    """Course root, submitted and autograded folders, gradebook URL and course id, read from
    the course's nbgrader_config.py."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(grading)).load_config()
    course = config.CourseDirectory
    root = Path(course.root)
    return (
        root / course.submitted_directory,
        root / course.autograded_directory,
        course.db_url,
        course.course_id,
        root,
    )


def submitted_students(submitted, lab):
    """Students with a folder grading/submitted/<student>/<lab>/."""
    if not submitted.is_dir():
        return []
    return sorted(p.name for p in submitted.iterdir() if (p / lab).is_dir())


def find_notebook(folder, lab):
    """(note, problem) for a submission folder: the lab's notebook must be there as a plain
    file; a single notebook under another name is copied to the lab's name and noted."""
    want = folder / f"{lab}.ipynb"
    named = sorted(p for p in folder.iterdir() if p.suffix == ".ipynb")
    links = [p.name for p in named if p.is_symlink()]
    if links:
        return "", f"{', '.join(links)} is a link, not a notebook file: not graded"
    if want.exists() and not want.is_file():
        return "", f"{want.name} is a folder (or another non-file), not a notebook: not graded"
    notebooks = [p for p in named if p.is_file()]  # a folder named draft.ipynb is no notebook
    if want.is_file():
        # Graded before under another name: say so again, so a rerun reports the same.
        same = [p.name for p in notebooks if p != want and p.read_bytes() == want.read_bytes()]
        return (f"graded {same[0]} as {lab}.ipynb" if len(same) == 1 else ""), ""
    if not notebooks:
        others = sorted(p.name for p in folder.iterdir())[:5]
        return "", (
            f"no notebook in the submission folder (expected {lab}.ipynb; found "
            f"{', '.join(others) if others else 'nothing'})"
        )
    if len(notebooks) > 1:
        names = ", ".join(p.name for p in notebooks[:5])
        return "", (
            f"{len(notebooks)} notebooks ({names}) and none named {lab}.ipynb: "
            f"rename the one to grade to {lab}.ipynb"
        )
    shutil.copyfile(notebooks[0], want)
    return f"graded {notebooks[0].name} as {lab}.ipynb", ""


def notebook_problem(path, answer_ids):
    """Why the notebook at `path` cannot be graded, or "" (nbgrader's own errors are cryptic)."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as error:  # noqa: BLE001 (nbformat raises many kinds on bad input)
        return f"not a readable notebook: {type(error).__name__}: {first_line(error, 300)}"
    present = {submission_checks.meta(c).get("grade_id") for c in nb.cells}
    missing = [grade_id for grade_id in answer_ids if grade_id not in present]
    if answer_ids and len(missing) == len(answer_ids):
        return (
            f"none of the lab's answer cells ({', '.join(missing)}) is in the notebook: "
            "was it emptied or replaced by another notebook?"
        )
    if missing:
        return (
            f"answer cell{'s' if len(missing) > 1 else ''} {', '.join(missing)} deleted: "
            "put the cell back (copy it from the released notebook) and grade again"
        )
    return ""


def answer_cells(release):
    """grade_ids of the answer cells of the released notebook."""
    try:
        nb = nbformat.read(release, as_version=4)
    except OSError:
        return []
    found = (submission_checks.meta(c) for c in nb.cells)
    return [m["grade_id"] for m in found if m.get("solution") and m.get("grade_id")]


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
        line for line in lines if re.match(r"^[A-Za-z_.]*(Error|Exception|Exit)\b.*:", line)
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


STARTUP = 600  # seconds a new worker may take to import nbgrader and warm its sandbox


def warm_imports(release):
    """The import statements of the released notebook's setup cells (neither answers nor
    tests: the instructor's code), which a warm sandbox runs once for every submission."""
    try:
        nb = nbformat.read(release, as_version=4)
    except (OSError, ValueError):
        return ""
    found = []
    for cell in nb.cells:
        meta = submission_checks.meta(cell)
        if cell.cell_type != "code" or meta.get("solution") or meta.get("grade"):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        found += [ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    return "\n".join(found)


class Worker:
    """A grader process (`autograde.py LAB --worker`) that imports nbgrader once, keeps one warm
    sandbox (sandbox.Sandbox) and one warm trusted test process (trusted_tests.TrustedHost),
    and autogrades the submissions it is sent one at a time, with nbgrader's own autograde
    step, in its own process."""

    def __init__(self, lab, grading, timeout, cell_timeout, threads):
        self.command = [
            sys.executable,
            str(Path(grading) / "autograde.py"),
            lab,
            "--worker",
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

    def ask(self, student, notes_path, wait):
        """nbgrader's {"success", "log"} for `student`; TimeoutError after `wait` seconds,
        EOFError (with the worker's last words) when it died."""
        if self.process is None:
            self.start()
        deadline = time.monotonic() + wait
        try:
            self.process.stdin.write(
                (json.dumps({"student": student, "notes": notes_path}) + "\n").encode()
            )
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
    """The worker's side: read {"student", "notes"} lines, autograde each in this process with
    nbgrader's API (its Autograde app, this course's configuration), answer one JSON line."""
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
    import sandbox  # the modules course_preprocessors uses (grading/ is on sys.path)
    import trusted_tests

    root = Path(config.CourseDirectory.root)
    imports = warm_imports(root / "labs" / lab / f"{lab}.ipynb")
    sandbox.warm(imports)
    trusted_tests.warm(imports)
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    try:
        for line in sys.stdin:
            request = json.loads(line)
            os.environ["LM10_NOTES"] = request["notes"]
            done = api.autograde(lab, request["student"], force=True, create=True)
            protocol.write(
                json.dumps(
                    {
                        "success": bool(done["success"]),
                        "log": "\n".join([done.get("log") or "", done.get("error") or ""]),
                    }
                )
                + "\n"
            )
            protocol.flush()
    finally:
        sandbox.cool()
        trusted_tests.cool()


def run_nbgrader(worker, lab, student, timeout, retries):
    """Autograde one submission in `worker`; retry only when the gradebook was locked.

    Returns (Result, notes): notes are what the sandboxed execution reported (flags, cells
    stopped, stderr), read from a file the grader process writes."""
    start = time.monotonic()
    stopped = f"still running after {timeout} s; stopped"

    def result(status, attempt, message=""):
        return Result(
            student, status, attempts=attempt, seconds=time.monotonic() - start, message=message
        )

    descriptor, notes_path = tempfile.mkstemp(prefix="lm10-notes-", suffix=".json")
    os.close(descriptor)
    try:
        for attempt in range(1, retries + 2):
            Path(notes_path).write_text("{}")
            wait = timeout + SLACK + (STARTUP if worker.process is None else 0)
            try:
                reply = worker.ask(student, notes_path, wait)
            except TimeoutError:
                worker.stop(kill=True)
                return result("timeout", attempt, stopped), {}
            except EOFError as error:
                worker.stop(kill=True)
                return result("error", attempt, str(error)), {}
            notes = json.loads(Path(notes_path).read_text() or "{}")
            if notes.get("timeout"):
                return result("timeout", attempt, stopped), notes
            log = reply["log"]
            if reply["success"] or LOCKED not in log:
                if reply["success"]:
                    return result("graded", attempt), notes
                return result("error", attempt, log_reason(log)), notes
            time.sleep(attempt * 2.0)  # the lock holder finishes a short transaction meanwhile
        return result("error", attempt, f"{LOCKED} after {attempt} attempts"), notes
    finally:
        os.unlink(notes_path)


def check_released(lab, db_url, course_id):
    """The lab must be in the gradebook (which also creates the database before any worker)."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url, course_id=course_id) as gradebook:
        try:
            gradebook.find_assignment(lab)
        except MissingEntry:
            raise ValueError(
                f"lab {lab} is not in the gradebook: run `make release LAB={lab}` first"
            ) from None


def first_line(text, limit=160):
    text = plain(text).strip()
    return (text.splitlines() or [""])[0][:limit]


def failures(notebook_path):
    """(grade_id, reason) of each autograded test cell that failed, in notebook order."""
    try:
        nb = nbformat.read(notebook_path, as_version=4)
    except Exception:  # noqa: BLE001 (no autograded notebook: nothing to explain)
        return []
    found = []
    for cell in nb.cells:
        m = submission_checks.meta(cell)
        if cell.get("cell_type") != "code" or not m.get("grade") or m.get("solution"):
            continue
        outputs = cell.get("outputs") if isinstance(cell.get("outputs"), list) else []
        errors = [o for o in outputs if isinstance(o, dict) and o.get("output_type") == "error"]
        if errors:
            error = errors[-1] if errors[-1].get("ename") != "KeyboardInterrupt" else errors[0]
            reason = f"{error.get('ename')}: {first_line(error.get('evalue', ''))}".rstrip(": ")
            found.append((m.get("grade_id"), reason))
    return found


def explain(result, notes, note, autograded_notebook):
    """The report message: why the submission scored what it did, most important first."""
    parts = [note] if note else []
    if result.status in ("graded", "flagged"):
        failed = failures(autograded_notebook)
        if notes.get("stopped"):
            parts.append(f"stopped {notes['stopped']}")
        timed = [c for c in notes.get("timed_out_cells", [])]
        if timed:
            parts.append(
                f"cell{'s' if len(timed) > 1 else ''} {', '.join(timed)} stopped "
                "after the per-cell time limit"
            )
        if failed:
            grade_id, reason = failed[0]
            more = f" (+{len(failed) - 1} more failed)" if len(failed) > 1 else ""
            parts.append(f"first failure {grade_id}: {reason}{more}")
        elif result.score < result.max_score and not failed:
            parts.append("all autograded tests passed; the rest is graded by hand")
        if notes.get("stderr"):
            parts.append(f"stderr (not penalised) in {', '.join(notes['stderr'][:3])}")
    elif result.message:
        parts.append(result.message)
    if notes.get("flags"):
        parts.append(
            "FLAGGED for review: "
            + "; ".join(notes["flags"][:4])
            + (f" (+{len(notes['flags']) - 4} more)" if len(notes["flags"]) > 4 else "")
        )
    if notes and notes.get("isolated") is False:
        parts.append("NOT ISOLATED (graded without a sandbox: LM10_GRADE_WITHOUT_ISOLATION=1)")
    return " ".join(plain(" | ".join(parts)).split())[:1000]


def record(results, lab, db_url, course_id):
    """Read scores back from the gradebook; give ungraded submissions zero, visibly."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url, course_id=course_id) as gradebook:
        for result in results:
            try:
                submission = gradebook.find_submission(lab, result.student)
            except MissingEntry:
                gradebook.update_or_create_student(result.student)
                submission = gradebook.add_submission(lab, result.student)
            grades = [g for n in submission.notebooks for g in n.grades]
            missing = [g.name for g in grades if g.auto_score is None and not g.needs_manual_grade]
            if result.status in ("graded", "flagged") and (missing or not grades):
                result.status = "error"
                result.message = (
                    f"no score in the gradebook for {', '.join(missing)}"
                    if missing
                    else "no grades in the gradebook"
                )
            if result.status not in ("graded", "flagged"):
                for grade in grades:
                    grade.auto_score, grade.needs_manual_grade = 0.0, False
                    grade.manual_score = None
                gradebook.db.commit()
            result.score = float(sum(g.score for g in grades))
            result.max_score = float(sum(g.max_score for g in grades))


def keep_only_notebook(folder, lab):
    """Leave nothing in the autograded folder but the notebook and nbgrader's two small files
    (the submission's time and the secret `nbgrader release_feedback` names the feedback by),
    so feedback never carries other files."""
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if (
            path.is_file()
            and not path.is_symlink()
            and (
                path.name == f"{lab}.ipynb"
                or (
                    path.name in ("timestamp.txt", "submission_secret.txt")
                    and path.stat().st_size <= 1024
                )
            )
        ):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def write_report(path, results):
    """Merge `results` into the CSV at `path`: their rows replace the students' old ones."""
    names = [f.name for f in fields(Result)]
    rows = {}
    if path.is_file():
        with open(path, newline="") as handle:
            for row in csv.DictReader(handle):
                if row.get("student"):
                    rows[row["student"]] = [row.get(name, "") for name in names]
    for r in results:
        rows[r.student] = [round(r.seconds, 1) if f == "seconds" else getattr(r, f) for f in names]
    rows = {
        plain(s): [plain(v) if isinstance(v, str) else v for v in row] for s, row in rows.items()
    }
    scratch = path.with_suffix(".csv.tmp")
    with open(scratch, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        for student in sorted(rows):
            writer.writerow(rows[student])
    scratch.replace(path)


def progress(done, total, result, stream=sys.stderr):
    width = 20
    bar = "#" * (width * done // total) + "-" * (width - width * done // total)
    print(
        f"[{bar}] {done}/{total} {plain(result.student)}: {result.status} ({result.seconds:.0f} s)",
        file=stream,
        flush=True,
    )


def autograde(
    lab,
    students=None,
    jobs=None,
    timeout=900,
    retries=5,
    grading=GRADING,
    cell_timeout=None,
    show_progress=True,
):
    """Autograde `students` (default: every submission of `lab`); return one Result each."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", lab):
        raise ValueError(f"lab must be a folder name such as LM10-L2, got {lab!r}")
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    submitted, autograded, db_url, course_id, root = course_paths(grading)
    students = students or submitted_students(submitted, lab)
    if not students:
        raise ValueError(f"no submissions of {lab} under {submitted}/<student>/{lab}/")
    unknown = [s for s in students if not (submitted / s / lab).is_dir()]
    if unknown:
        raise ValueError(f"no folder {submitted}/<student>/{lab}/ for {', '.join(unknown)}")
    sys.path.insert(0, str(grading))
    try:
        import sandbox
    finally:
        sys.path.remove(str(grading))
    try:  # before the gradebook is opened or any submission runs
        isolated = sandbox.require()
    except sandbox.SandboxUnavailable as error:
        raise ValueError(str(error)) from None
    if not isolated:
        print(sandbox.NOT_ISOLATED, file=sys.stderr, flush=True)
    os.environ.update(PATH=environment()["PATH"])  # for the gradebook opened here too
    check_released(lab, db_url, course_id)
    source = root / "solutions" / lab / f"{lab}.ipynb"
    if source.is_file() and "pretrained" in source.read_text():
        # The sandbox reads the SmolLM2 cache read-only: convert it here, once, if needed.
        subprocess.run(
            [sys.executable, "-c", "from lmcourse.pretrained import convert; convert()"],
            env=environment(),
            check=True,
        )
    threads = max(1, (os.cpu_count() or 1) // min(jobs, len(students)))
    lock, done, results, notes, extra = threading.Lock(), [0], {}, {}, {}

    answer_ids = answer_cells(root / "labs" / lab / f"{lab}.ipynb")
    workers = queue.Queue()
    for _ in range(min(jobs, len(students))):
        workers.put(Worker(lab, grading, timeout, cell_timeout, threads))

    def grade(student):
        try:
            note, problem = find_notebook(submitted / student / lab, lab)
            if not problem:
                problem = notebook_problem(submitted / student / lab / f"{lab}.ipynb", answer_ids)
        except OSError as error:  # unreadable files or folders: this student's row says so
            note, problem = "", f"the submission folder could not be read: {error}"
        if problem:
            result, found = Result(student, "error", attempts=0, message=problem), {}
        else:
            worker = workers.get()
            try:
                result, found = run_nbgrader(worker, lab, student, timeout, retries)
            finally:
                workers.put(worker)
        keep_only_notebook(autograded / student / lab, lab)
        with lock:
            done[0] += 1
            if show_progress:
                progress(done[0], len(students), result)
        return result, found, note

    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for future in as_completed([pool.submit(grade, s) for s in students]):
                result, found, note = future.result()
                results[result.student], notes[result.student] = result, found
                extra[result.student] = note
    finally:
        while not workers.empty():
            workers.get().stop()
    sandbox.sweep_groups()
    sandbox.sweep_homes()
    ordered = [results[s] for s in students]
    record(ordered, lab, db_url, course_id)
    for r in ordered:
        found = notes[r.student]
        if r.status == "graded" and found.get("flags"):
            r.status = "flagged"
        r.message = explain(
            r, found, extra[r.student], autograded / r.student / lab / f"{lab}.ipynb"
        )
        r.seconds = round(r.seconds, 1)
        if "isolated" in found:
            r.isolated = "yes" if found["isolated"] else "no"
    write_report(grading / f"autograde-{lab}.csv", ordered)
    return ordered


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lab", help="lab folder name, e.g. LM10-L2")
    parser.add_argument("--student", nargs="*", help="grade only these students")
    parser.add_argument("--jobs", type=int, help="parallel submissions (default: every core)")
    parser.add_argument(
        "--timeout",
        type=int,
        default=900,
        help="seconds one submission may run in all (default 900)",
    )
    parser.add_argument(
        "--cell-timeout", type=int, help="seconds one cell may run (default: Execute.timeout, 120)"
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=5,
        help="retries of a submission that met a locked gradebook (default 5)",
    )
    parser.add_argument(
        "--without-isolation",
        action="store_true",
        help="run student code WITHOUT a sandbox, with the grader's rights (the same as "
        "LM10_GRADE_WITHOUT_ISOLATION=1); only for trusted submissions",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.without_isolation:  # the workers inherit it
        os.environ["LM10_GRADE_WITHOUT_ISOLATION"] = "1"
    if args.worker:
        serve(args.lab, GRADING, args.timeout, args.cell_timeout)
        return
    start = time.monotonic()
    try:
        results = autograde(
            args.lab,
            args.student,
            args.jobs,
            args.timeout,
            args.retries,
            cell_timeout=args.cell_timeout,
        )
    except ValueError as error:
        parser.exit(2, f"autograde: {error}\n")
    for r in results:
        line = (
            f"{plain(r.student):<24} {r.status:<8} {r.score:5.1f} / {r.max_score:<5.1f} "
            f"{r.seconds:6.1f} s"
        )
        print(line + (f"  {plain(r.message)}" if r.message else ""))
    failed = sum(r.status in ("error", "timeout") for r in results)
    flagged = sum(r.status == "flagged" for r in results)
    print(
        f"{len(results)} submissions of {args.lab} in {time.monotonic() - start:.0f} s, "
        f"{failed} not graded (zero recorded), {flagged} flagged for review; "
        f"report: grading/autograde-{args.lab}.csv"
    )


if __name__ == "__main__":
    main()
