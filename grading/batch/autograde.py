"""Autograde every submission of one lab in parallel, each in a sandbox, and report honestly.

    python -m grading.batch.autograde LM10-L2 [--jobs N] [--timeout S] [--cell-timeout S]
                                        [--alone-time S] [--retries R] [--student ID ...]

`nbgrader autograde` grades one submission after another in one process, and one bad notebook
stops the run. This command starts `--jobs` grader workers (default: every core; workers.py)
and hands each the next submission when it is free. A worker imports nbgrader once and grades
one submission at a time with nbgrader's autograde step, so a crash, a notebook that does not
parse or one that runs past `--timeout` seconds affects only its own student. Inside, the
student's code runs in a sandbox (course_preprocessors.SandboxedExecute, sandbox.py): the
worker's warm sandbox, which imported the lab's modules once and forks a fresh kernel for every
submission. Only the workers read submissions and write the gradebook.

Nothing runs without a sandbox: where bubblewrap is missing or cannot make one, the batch
stops before the gradebook is opened, naming the fix (sandbox.require); only
`--without-isolation` (LM10_GRADE_WITHOUT_ISOLATION=1) grades anyway, and every row then says
"NOT ISOLATED".

The steps, each in its own module: intake.py decides which notebook of a submission folder is
graded (or why none is), workers.py grades it, gradebook.py reads the scores back (zero for
every submission not graded, so exports and feedback never miss a student) and report.py says
why: the first failing test and its message, cells stopped, stderr, flags.

A submission's status comes from the gradebook, not from words in a log: `graded` when every
autograded cell has a score, `flagged` when it is graded but its code reaches past the lab
(IPython hooks, files, processes, redefined references: see submission_checks.py; a person
should read it), `timeout` when it ran past --timeout, `error` otherwise.

Every sandbox runs as the grader's uid, and the kernel counts some things per uid whatever the
namespace (epoll watches, descriptors in flight), and the OOM killer ends whichever process is
largest when the machine's memory runs out: a submission can fail the classmates graded beside
it, and a submission that holds memory just short of the OOM killer slows them until their
cells run out of time. Each submission that ran beside others and failed with an error naming
such a limit, or whose kernel, sandbox, trusted test process or grader process was killed
(report.machine_limit), is graded again, alone, after the rest; then each that ran out of time
(report.out_of_time), while those second runs take at most --alone-time seconds in all (a
submission that loops forever costs its --timeout twice); past that, its row is flagged and
says how to grade it again. A second run's row says so.

The gradebook is one SQLite file and every process writes to it. Writers take turns:
nbgrader_config.py gives SQLite a busy timeout, a process that still fails on a locked
database is retried, and at the end the batch reads the gradebook back.

The report is printed, with a progress line per submission on stderr, and merged into
grading/autograde-LAB.csv: a rerun replaces the rows of the students it graded and keeps the
others, so grading one student again never loses the batch's report.
"""

import argparse
import os
import queue
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from grading.batch.gradebook import check_released, course_paths, record
from grading.batch.intake import (
    answer_cells,
    find_notebook,
    keep_only_notebook,
    notebook_problem,
    submitted_students,
)
from grading.batch.report import (
    explain,
    machine_limit,
    out_of_time,
    progress,
    write_batch,
    write_report,
)
from grading.batch.results import Notes, Result
from grading.batch.workers import Worker, environment, run_nbgrader
from grading.host import sandbox
from grading.instructor.sanitise import plain

GRADING = Path(__file__).resolve().parents[1]  # grading/, the course's data


def autograde(
    lab,
    students=None,
    jobs=None,
    timeout=900,
    retries=5,
    grading=GRADING,
    cell_timeout=None,
    show_progress=True,
    alone_time=1800,
):
    """Autograde `students` (default: every submission of `lab`); return one Result each.
    `grading` is the folder of the course's nbgrader_config.py (default: the repository's);
    `alone_time` bounds the seconds spent grading again, alone, submissions that ran out of
    time beside others (see `alone` below)."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", lab):
        raise ValueError(f"lab must be a folder name such as LM10-L2, got {lab!r}")
    start = time.monotonic()
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if not alone_time >= 0:
        raise ValueError(f"alone_time must be 0 or more seconds, got {alone_time}")
    submitted, autograded, db_url, course_id, root = course_paths(grading)
    students = students or submitted_students(submitted, lab)
    if not students:
        raise ValueError(f"no submissions of {lab} under {submitted}/<student>/{lab}/")
    unknown = [s for s in students if not (submitted / s / lab).is_dir()]
    if unknown:
        raise ValueError(f"no folder {submitted}/<student>/{lab}/ for {', '.join(unknown)}")
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

    running, beside = set(), set()  # graded now; graded while another was too

    def grade(student):
        try:
            note, problem = find_notebook(submitted / student / lab, lab)
            if not problem:
                problem = notebook_problem(submitted / student / lab / f"{lab}.ipynb", answer_ids)
        except OSError as error:  # unreadable files or folders: this student's row says so
            note, problem = "", f"the submission folder could not be read: {error}"
        if problem:
            result, found = Result(student, "error", attempts=0, message=problem), Notes()
        else:
            worker = workers.get()
            with lock:
                running.add(student)
                if len(running) > 1:
                    beside.update(running)
            try:
                result, found = run_nbgrader(worker, lab, student, timeout, retries)
            finally:
                with lock:
                    running.discard(student)
                workers.put(worker)
        keep_only_notebook(autograded / student / lab, lab)
        with lock:
            done[0] += 1
            if show_progress:
                progress(done[0], len(students), result)
        return result, found, note

    def alone():
        """Grade again, one after another, each submission that ran beside others and failed in
        a way one of them may have caused: first those whose errors name a limit the machine
        counts for the grader's uid as a whole, memory, or a killed process
        (report.machine_limit), every one of them; then those that ran out of time
        (report.out_of_time), while the time they take stays within `alone_time` seconds. Its
        first run's grade is replaced, and its row says so; a row past that time is flagged,
        and says how to grade it again."""
        worker = workers.get()
        spent = 0.0
        try:
            first, then = [], []  # (student, why, ran out of time)
            for student in (s for s in students if s in beside):
                notebook = autograded / student / lab / f"{lab}.ipynb"
                if why := machine_limit(results[student], notes[student], notebook):
                    first.append((student, why, False))
                elif why := out_of_time(results[student], notes[student]):
                    then.append((student, why, True))
            for student, why, timed in first + then:
                if timed and spent >= alone_time:
                    notes[student].flags.append(
                        f"it ran out of {why} beside other submissions, one of which may have "
                        f"slowed it, and was not graded again alone: the batch's --alone-time "
                        f"({alone_time:g} s) was spent; grade it again with --student and "
                        f"--jobs 1"
                    )
                    continue
                start = time.monotonic()
                results[student], notes[student] = run_nbgrader(
                    worker, lab, student, timeout, retries
                )
                if timed:
                    spent += time.monotonic() - start
                keep_only_notebook(autograded / student / lab, lab)
                met = f"ran out of {why}" if timed else f"failed on {why!r}"
                again = (
                    f"graded again alone: its first run, beside other submissions, {met}, "
                    f"which a submission graded beside it may have caused"
                )
                extra[student] = "; ".join(filter(None, [extra[student], again]))
                if show_progress:
                    progress(done[0], len(students), results[student])
        finally:
            workers.put(worker)

    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for future in as_completed([pool.submit(grade, s) for s in students]):
                result, found, note = future.result()
                results[result.student], notes[result.student] = result, found
                extra[result.student] = note
            # in the pool: a worker dies with the thread that started it (PR_SET_PDEATHSIG)
            pool.submit(alone).result()
    finally:
        while not workers.empty():
            workers.get().stop()
    sandbox.sweep_groups()
    sandbox.sweep_homes()
    ordered = [results[s] for s in students]
    record(ordered, lab, db_url, course_id)
    for r in ordered:
        found = notes[r.student]
        if r.status == "graded" and found.flags:
            r.status = "flagged"
        r.message = explain(
            r, found, extra[r.student], autograded / r.student / lab / f"{lab}.ipynb"
        )
        r.seconds = round(r.seconds, 1)
        if found.isolated is not None:
            r.isolated = "yes" if found.isolated else "no"
    write_report(grading / f"autograde-{lab}.csv", ordered)
    write_batch(
        grading / f"autograde-{lab}-batch.json",
        lab,
        submissions=len(ordered),
        jobs=min(jobs, len(students)),
        wall_seconds=round(time.monotonic() - start, 1),
    )
    return ordered


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lab", help="lab folder name, e.g. LM10-L2")
    parser.add_argument(
        "--grading",
        type=Path,
        default=GRADING,
        help="the course's grading folder, with its nbgrader_config.py (default: this one)",
    )
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
        "--alone-time",
        type=float,
        default=1800,
        help="seconds the batch may spend grading again, alone, submissions that ran out of "
        "time beside others (default 1800); one past it is flagged",
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
    args = parser.parse_args(argv)
    if args.without_isolation:  # the workers inherit it
        os.environ["LM10_GRADE_WITHOUT_ISOLATION"] = "1"
    start = time.monotonic()
    try:
        results = autograde(
            args.lab,
            args.student,
            args.jobs,
            args.timeout,
            args.retries,
            grading=args.grading.resolve(),
            cell_timeout=args.cell_timeout,
            alone_time=args.alone_time,
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
