"""Autograde every submission of one lab in parallel, surviving broken submissions.

    python grading/autograde.py LM10-L2 [--jobs N] [--timeout S] [--retries R] [--student ID ...]

`nbgrader autograde` grades one submission after another in one process, and one bad notebook
stops the run. This script starts one `nbgrader autograde LAB --student ID` process per
submission, `--jobs` at a time (default: every core), so a crash, a notebook that does not
parse or one that runs past `--timeout` seconds affects only its own student.

The gradebook is one SQLite file and every process writes to it. Writers take turns:
nbgrader_config.py gives SQLite a busy timeout (a writer waits for the lock instead of failing),
a process that still fails on a locked database is retried, and at the end this script reads
the gradebook back and checks that every submission it reports as graded has a score for every
autograded cell. Submissions that could not be graded get zero in the gradebook (so exports
and feedback never miss a student) and an `error` or `timeout` line in the report.

The report, one line per submission, is printed and written to grading/autograde-LAB.csv.
"""

import argparse
import csv
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path

GRADING = Path(__file__).resolve().parent
LOCKED = "database is locked"


@dataclass
class Result:
    student: str
    status: str  # graded | error | timeout
    score: float = 0.0
    max_score: float = 0.0
    attempts: int = 0
    seconds: float = 0.0
    message: str = ""


def course_paths(grading=GRADING):
    """Submitted folder, gradebook URL and course id, read from the course's nbgrader_config.py."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(grading)).load_config()
    course = config.CourseDirectory
    return Path(course.root) / course.submitted_directory, course.db_url, course.course_id


def submitted_students(submitted, lab):
    """Students with a folder grading/submitted/<student>/<lab>/."""
    if not submitted.is_dir():
        return []
    return sorted(p.name for p in submitted.iterdir() if (p / lab).is_dir())


def last_error(log, lines=3):
    """The last few ERROR lines of an nbgrader log, for the report."""
    errors = [line for line in log.splitlines() if "ERROR" in line or "Error" in line]
    return " | ".join(line.strip() for line in (errors or log.splitlines())[-lines:])[:500]


def environment(threads=None):
    """This environment with its bin first on PATH (nbgrader shells out to `alembic`), and, for
    parallel workers, `threads` torch threads each: workers that each start one thread per core
    oversubscribe the machine, and torch then runs several times slower than single-threaded."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    if threads is not None:
        env.setdefault("OMP_NUM_THREADS", str(threads))
    return env


def run_nbgrader(lab, student, timeout, retries, grading=GRADING, threads=None):
    """Autograde one submission in its own process; retry only when the gradebook was locked."""
    env = environment(threads)
    command = [sys.executable, "-m", "nbgrader", "autograde", lab, "--student", student,
               "--force"]
    start = time.monotonic()
    for attempt in range(1, retries + 2):
        # A session of its own, so that a timeout stops the kernel nbgrader started as well.
        process = subprocess.Popen(command, cwd=grading, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            log, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return Result(student, "timeout", attempts=attempt,
                          seconds=time.monotonic() - start,
                          message=f"still running after {timeout} s; stopped")
        if process.returncode == 0 and "ERROR" not in log:
            return Result(student, "graded", attempts=attempt, seconds=time.monotonic() - start)
        if LOCKED not in log:
            return Result(student, "error", attempts=attempt, seconds=time.monotonic() - start,
                          message=last_error(log))
        time.sleep(attempt * 2.0)  # the lock holder finishes a short transaction meanwhile
    return Result(student, "error", attempts=attempt, seconds=time.monotonic() - start,
                  message=f"{LOCKED} after {attempt} attempts")


def check_released(lab, db_url, course_id):
    """The lab must be in the gradebook (which also creates the database before any worker)."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url, course_id=course_id) as gradebook:
        try:
            gradebook.find_assignment(lab)
        except MissingEntry:
            raise ValueError(f"lab {lab} is not in the gradebook: run `make release LAB={lab}` "
                             "first") from None


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
            if result.status == "graded" and missing:
                result.status = "error"
                result.message = f"no score in the gradebook for {', '.join(missing)}"
            if result.status != "graded":
                for grade in grades:
                    grade.auto_score, grade.needs_manual_grade = 0.0, False
                gradebook.db.commit()
            result.score = float(sum(g.score for g in grades))
            result.max_score = float(sum(g.max_score for g in grades))


def autograde(lab, students=None, jobs=None, timeout=900, retries=5, grading=GRADING):
    """Autograde `students` (default: every submission of `lab`); return one Result each."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", lab):
        raise ValueError(f"lab must be a folder name such as LM10-L2, got {lab!r}")
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    submitted, db_url, course_id = course_paths(grading)
    students = students or submitted_students(submitted, lab)
    if not students:
        raise ValueError(f"no submissions of {lab} under {submitted}/<student>/{lab}/")
    os.environ.update(PATH=environment()["PATH"])  # for the gradebook opened here too
    check_released(lab, db_url, course_id)
    threads = max(1, (os.cpu_count() or 1) // min(jobs, len(students)))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(
            lambda s: run_nbgrader(lab, s, timeout, retries, grading, threads), students))
    record(results, lab, db_url, course_id)
    with open(grading / f"autograde-{lab}.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([f.name for f in fields(Result)])
        for r in results:
            r.seconds = round(r.seconds, 1)
            writer.writerow([getattr(r, f.name) for f in fields(Result)])
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lab", help="lab folder name, e.g. LM10-L2")
    parser.add_argument("--student", nargs="*", help="grade only these students")
    parser.add_argument("--jobs", type=int, help="parallel submissions (default: every core)")
    parser.add_argument("--timeout", type=int, default=900,
                        help="seconds one submission may take in all (default 900)")
    parser.add_argument("--retries", type=int, default=5,
                        help="retries of a submission that met a locked gradebook (default 5)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    results = autograde(args.lab, args.student, args.jobs, args.timeout, args.retries)
    for r in results:
        line = (f"{r.student:<24} {r.status:<8} {r.score:5.1f} / {r.max_score:<5.1f} "
                f"{r.seconds:6.1f} s")
        print(line + (f"  {r.message}" if r.message else ""))
    failed = sum(r.status != "graded" for r in results)
    print(f"{len(results)} submissions of {args.lab} in {time.monotonic() - start:.0f} s, "
          f"{failed} not graded (zero recorded); report: grading/autograde-{args.lab}.csv")


if __name__ == "__main__":
    main()
