"""Autograde one lab's class two ways in one run: plain nbgrader, then `make autograde`'s path.

    python -m benchmarks.autograde [--lab LM10-L2] [--submissions 40] [--jobs N]

(from the repository's root, as `make bench` runs it).

A temporary course gets the lab's release (nbgrader generate_assignment) and N submissions
built from tests/lab_cases: correct answers, answers with one mistake, answers hard-coded to
the visible tests, the blank release (every answer raises) and answers that do not parse, in
turn. The same submissions are graded

  1. by plain `nbgrader autograde LAB`, one process, one submission after another, with
     nbgrader's default pipeline (a course configuration that only names the folders and the
     course's 120 s cell timeout); and
  2. by grading.batch.autograde (what `make autograde` runs): warm grader workers, every notebook
     in its own bubblewrap sandbox with a kernel forked from a process that imported the lab
     once.

Every submission must get the same score for every autograded cell from both; the script
prints seconds per submission for each and the ratio, and exits with status 1 when a score
differs or a submission was not graded.
"""

import argparse
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook

from tools.course_copy import AUTOGRADE, course_copy, fill

PLAIN_CONFIG = """c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "LM10"
c.CourseDirectory.root = {root!r}
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "labs"
c.CourseDirectory.submitted_directory = "grading/submitted"
c.CourseDirectory.autograded_directory = "grading/autograded"
c.CourseDirectory.db_url = "sqlite:///{root}/grading/gradebook.db"
c.Execute.timeout = 120
"""


def environment():
    return dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def submissions(lab, released, count):
    """`count` notebooks named by student: the lab's cases in turn."""
    cases = importlib.import_module(f"tests.lab_cases.l{lab.rsplit('L', 1)[1]}")
    first_answer = next(
        c for c in released.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")
    )
    makers = {
        "correct": cases.correct,
        "mistake": cases.mistake,
        "hardcoded": cases.hardcoded,
        "blank": lambda nb: nb,
        "broken": lambda nb: fill(
            nb, {first_answer.metadata.nbgrader.grade_id: "def half_written(:\n    return"}
        ),
    }
    names = list(makers)
    return {
        f"{names[i % len(names)]}{i:02d}": makers[names[i % len(names)]](
            nbformat.from_dict(released)
        )
        for i in range(count)
    }


def make_course(folder, lab, notebooks):
    """A course in `folder` with the course's configuration, `lab` released and submitted."""
    grading = course_copy(folder, [lab])
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", "generate_assignment", lab, "--force"],
        cwd=grading,
        env=environment(),
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"generate_assignment failed:\n{done.stdout}{done.stderr}")
    released = nbformat.read(folder / "labs" / lab / f"{lab}.ipynb", as_version=4)
    for student, nb in notebooks(released).items():
        (grading / "submitted" / student / lab).mkdir(parents=True)
        nbformat.write(nb, grading / "submitted" / student / lab / f"{lab}.ipynb")
    return grading


def scores(grading, lab):
    """{student: {grade_id: autograded score}} of every submission, from the gradebook."""
    with Gradebook(f"sqlite:///{grading / 'gradebook.db'}", course_id="LM10") as gradebook:
        return {
            submission.student_id: {
                grade.name: grade.auto_score
                for notebook in submission.notebooks
                for grade in notebook.grades
            }
            for submission in gradebook.find_assignment(lab).submissions
        }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab", default="LM10-L2")
    parser.add_argument("--submissions", type=int, default=40)
    parser.add_argument(
        "--jobs", type=int, help="grading.batch.autograde workers (default: every core)"
    )
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="lm10-bench-autograde-"))
    try:

        def notebooks(released):
            return submissions(args.lab, released, args.submissions)

        plain = make_course(scratch / "plain", args.lab, notebooks)
        (plain / "nbgrader_config.py").write_text(PLAIN_CONFIG.format(root=str(plain.parent)))
        course = make_course(scratch / "course", args.lab, notebooks)

        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "nbgrader", "autograde", args.lab],
            cwd=plain,
            env=environment(),
            capture_output=True,
            text=True,
        )
        plain_s = time.monotonic() - start
        start = time.monotonic()
        command = [sys.executable, *AUTOGRADE, args.lab]
        ours = subprocess.run(
            command + (["--jobs", str(args.jobs)] if args.jobs else []),
            cwd=course,
            env=environment(),
            capture_output=True,
            text=True,
        )
        ours_s = time.monotonic() - start
        if ours.returncode:
            raise SystemExit(f"grading.batch.autograde failed:\n{ours.stdout}{ours.stderr[-3000:]}")
        expected, got = scores(plain, args.lab), scores(course, args.lab)
        differ = sorted(s for s in set(expected) | set(got) if expected.get(s) != got.get(s))
        missing = sorted(set(got) ^ set(expected))
        count = args.submissions
        print(
            f"{count} submissions of {args.lab} (correct, mistake, hardcoded, blank, broken "
            f"in turn), {os.cpu_count()} cores"
        )
        print(
            f"  plain nbgrader autograde, sequential:     {plain_s:7.1f} s  "
            f"{plain_s / count:5.2f} s per submission (exit status {done.returncode})"
        )
        print(
            f"  make autograde (grading.batch.autograde): {ours_s:7.1f} s  "
            f"{ours_s / count:5.2f} s per submission"
        )
        print(f"  ratio: {plain_s / ours_s:.2f}x")
        totals = sorted({round(sum(v or 0 for v in s.values()), 3) for s in got.values()})
        print(
            f"  scores identical for {count - len(differ)} of {count} submissions "
            f"(totals seen: {totals})"
        )
        if differ or missing or len(got) != count:
            for student in differ[:10]:
                print(
                    f"  DIFFERENT {student}: plain {expected.get(student)} ours {got.get(student)}"
                )
            print(done.stdout[-2000:], done.stderr[-2000:], ours.stdout[-2000:])
            raise SystemExit(1)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
