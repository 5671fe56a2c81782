"""A class played through nbgrader's exchange on one machine, with real nbgrader commands.

A temporary course (this repository's grading tools and lab LM10-L2) and a temporary exchange
root. The instructor releases the lab to the exchange; three students, each with a home of
their own and their own student id (`--CourseDirectory.student_id`: they all share this
machine's system user, whose name nbgrader would otherwise take), fetch it, answer it
(correct, one mistake, nothing) and submit; the instructor collects, autogrades with
grading/batch/autograde.py (what `make autograde` runs), generates feedback and releases it; every
student fetches their feedback. The gradebook and each student's feedback page must show the
scores their answers earned.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from lab_cases import AUTOGRADE, course_copy, l2
from nbgrader.api import Gradebook

ROOT = Path(__file__).resolve().parents[1]
LAB = "LM10-L2"
STUDENTS = {"alice": l2.correct, "bob": l2.mistake, "carol": lambda nb: nb}  # carol: blank


pytestmark = pytest.mark.usefixtures("sandbox_installed")  # tests/conftest.py


def nbgrader(*args, cwd, user, home, exchange):
    """One nbgrader command as `user`, in their home. Every user here is the same system user,
    whose name nbgrader would take as the student id: students name themselves."""
    env = dict(
        os.environ,
        HOME=str(home),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbgrader",
            *args,
            "--course",
            "LM10",
            f"--Exchange.root={exchange}",
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, (
        f"nbgrader {' '.join(args)} as {user}:\n{done.stdout}{done.stderr[-3000:]}"
    )
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    base = tmp_path_factory.mktemp("exchange-class")
    course, exchange = base / "course", base / "exchange"
    grading = course_copy(course, [LAB])
    exchange.mkdir()
    instructor = dict(cwd=grading, user="instructor", home=base / "instructor", exchange=exchange)
    (base / "instructor").mkdir()

    nbgrader("generate_assignment", LAB, "--force", **instructor)
    nbgrader("release_assignment", LAB, **instructor)
    homes = {}
    for student, answer in STUDENTS.items():
        home = homes[student] = base / student
        home.mkdir()
        me = dict(cwd=home, user=student, home=home, exchange=exchange)
        nbgrader("fetch_assignment", LAB, **me)
        path = home / LAB / f"{LAB}.ipynb"
        nbformat.write(answer(nbformat.read(path, as_version=4)), path)
        nbgrader("submit", LAB, f"--CourseDirectory.student_id={student}", **me)
    nbgrader("collect", LAB, **instructor)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    graded = subprocess.run(
        [sys.executable, *AUTOGRADE, LAB],
        cwd=grading,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert graded.returncode == 0, graded.stdout + graded.stderr[-3000:]
    nbgrader("generate_feedback", LAB, "--force", **instructor)
    nbgrader("release_feedback", LAB, **instructor)
    pages = {}
    for student, home in homes.items():
        nbgrader(
            "fetch_feedback",
            LAB,
            f"--CourseDirectory.student_id={student}",
            cwd=home,
            user=student,
            home=home,
            exchange=exchange,
        )
        pages[student] = sorted((home / LAB / "feedback").glob(f"*/{LAB}.html"))
    with Gradebook(f"sqlite:///{grading / 'gradebook.db'}", course_id="LM10") as gradebook:
        scores = {s: gradebook.find_submission(LAB, s).score for s in STUDENTS}
        maximum = gradebook.find_assignment(LAB).max_score
    return {
        "scores": scores,
        "maximum": maximum,
        "pages": pages,
        "report": graded.stdout,
        "grading": grading,
    }


def test_collect_finds_every_submission(played):
    submitted = played["grading"] / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == sorted(STUDENTS)


def test_scores_are_what_the_answers_earned(played):
    scores, report = played["scores"], played["report"]
    assert scores["alice"] == 10, report  # every autograded point; 3 more are graded by hand
    assert 0 < scores["bob"] < scores["alice"], report
    assert scores["carol"] == 0, report
    assert played["maximum"] == 13


def test_every_student_fetched_their_own_feedback(played):
    for student, score in played["scores"].items():
        pages = played["pages"][student]
        assert len(pages) == 1, (student, pages)
        page = pages[0].read_text()
        found = re.search(r"Score:\s*([\d.]+)\s*/\s*([\d.]+)", page)
        assert found, f"no score on {student}'s feedback page"
        assert (float(found[1]), float(found[2])) == (score, played["maximum"]), student
        assert "### BEGIN HIDDEN TESTS" not in page
