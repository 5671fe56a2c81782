"""The instructor's class report (grading/instructor/class_report.py,
`make report`) for a synthetic class.

A course copy releases LM10-L2 with a due date, the class of tests/lab_cases/class_l2.py (77
submissions: correct, every catalogued slip, late, blank, broken, flagged, hostile) is handed
in beside two students of the gradebook who handed in nothing, `make autograde`'s command
grades it for real, and a person's marks for some written answers go into the gradebook as the
formgrader puts them. Then the report is built, and every number on the page is checked
against what the test computes itself from the gradebook, the autograde report and what each
student was made to do: the counts, the score distribution, each part's full, partial and no
marks, each test's pass rate, each slip's count, the submissions that need a look, the time.
Chromium opens the pages from disk and in JupyterLab: figures load, no console error, no
request leaves the page, a click on a heading sorts.
"""

from __future__ import annotations

import csv
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from browsing import SHOTS, VIEWPORT, jupyterlab
from lab_cases import AUTOGRADE, class_l2, course_copy, fill, solution_answers
from nbgrader.api import Gradebook

LAB = class_l2.LAB
DUE = "2026-11-21 23:59:00 UTC"  # between class_l2.TIMESTAMP and LATE_TIMESTAMP
PARTS = {  # the lab's numbered parts and their graded cells, as the release has them
    "1.": ["l2_test_attention"],
    "2.": ["l2_test_cache"],
    "3.": ["l2_test_flops"],
    "4.": ["l2_test_compare"],
    "5.": ["l2_test_serving"],
    "6.": ["l2_written_tradeoff"],
}
WRITTEN = "l2_written_tradeoff"
# A person's marks for some written answers (of 3), as the formgrader records them.
MANUAL = {"correct-00": 3.0, "correct-01": 3.0, "correct-02": 1.5, "slip-cache-0-0": 0.0}
NUMERIC = {"lab", "score", "part", "test", "slip", "time", "slowest"}  # tagged on the page


def run(*command, cwd):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(
        [sys.executable, *command], cwd=cwd, env=env, capture_output=True, text=True, timeout=1800
    )


def read_rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory, sandbox_installed):
    root = tmp_path_factory.mktemp("class")
    grading = course_copy(root, [LAB])
    done = run("-m", "nbgrader", "generate_assignment", LAB, "--force", cwd=grading)
    assert done.returncode == 0, done.stderr[-3000:]
    db_url = f"sqlite:///{grading / 'gradebook.db'}"
    with Gradebook(db_url, course_id="LM10") as gradebook:
        gradebook.update_or_create_assignment(LAB, duedate=DUE)
        for student in class_l2.MISSING:
            gradebook.update_or_create_student(student)
    released = nbformat.read(root / "labs" / LAB / f"{LAB}.ipynb", as_version=4)
    submissions, design = class_l2.build(released)
    for student, (nb, files) in submissions.items():
        folder = grading / "submitted" / student / LAB
        folder.mkdir(parents=True)
        if nb is not None:
            nbformat.write(nb, folder / f"{LAB}.ipynb")
        for name, text in files.items():
            (folder / name).write_text(text)
    done = run(*AUTOGRADE, LAB, cwd=grading)
    assert done.returncode == 0, done.stderr[-3000:]
    with Gradebook(db_url, course_id="LM10") as gradebook:
        for student, score in MANUAL.items():
            grade = gradebook.find_grade(WRITTEN, LAB, LAB, student)
            grade.manual_score, grade.needs_manual_grade = score, False
        gradebook.db.commit()
    start = time.monotonic()
    built = run("-m", "grading.instructor.class_report", "--grading", ".", cwd=grading)
    seconds = time.monotonic() - start
    assert built.returncode == 0, built.stderr[-3000:]
    reports = grading / "reports"
    print(f"class report of {len(submissions)} submissions built in {seconds:.1f} s")
    return {
        "root": root,
        "grading": grading,
        "design": design,
        "db_url": db_url,
        "autograde": {r["student"]: r for r in read_rows(grading / f"autograde-{LAB}.csv")},
        "rows": read_rows(reports / f"{LAB}.csv"),
        "course_rows": read_rows(reports / "course.csv"),
        "page": reports / f"{LAB}.html",
        "course_page": reports / "course.html",
        "stdout": built.stdout,
    }


def test_a_submission_autograded_after_its_report_row_is_flagged(tmp_path, sandbox_installed):
    # the seventy-first hub tester: the formgrader's Autograde (nbgrader autograde, as
    # NbGraderAPI.autograde runs it) grades in the sandbox, but its flags go to no one (only
    # the batch's worker takes them): a submission graded clean by the batch, then handed in
    # again with code the batch flags and autograded from the formgrader, showed "graded" and
    # the old row's message on the class report, with the new score; one never batch-graded
    # showed "not autograded", no flag
    from grading.instructor import class_report

    grading = course_copy(tmp_path, [LAB])
    assert run("-m", "nbgrader", "generate_assignment", LAB, "--force", cwd=grading).returncode == 0
    released = nbformat.read(tmp_path / "labs" / LAB / f"{LAB}.ipynb", as_version=4)
    answers = solution_answers(LAB)
    honest = fill(nbformat.from_dict(released), dict(answers))
    answers["l2_serving"] += "\nimport os\nprint(os.listdir('.'))\n"
    peek = fill(nbformat.from_dict(released), answers)

    def hand_in(student, nb):
        folder = grading / "submitted" / student / LAB
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, folder / f"{LAB}.ipynb")
        (folder / "timestamp.txt").write_text(class_l2.TIMESTAMP)

    hand_in("mallory", honest)
    hand_in("eve", peek)
    done = run(*AUTOGRADE, LAB, "--student", "mallory", cwd=grading)
    assert done.returncode == 0, done.stderr[-3000:]
    hand_in("mallory", peek)  # handed in again, collected again
    formgrader = (
        "from nbgrader.apps import NbGraderAPI; from nbgrader.apps.nbgraderapp import NbGrader;"
        "from nbgrader.auth import Authenticator; from nbgrader.coursedir import CourseDirectory;"
        "app = NbGrader(); app.load_config_file(); c = app.config;"
        "api = NbGraderAPI(CourseDirectory(config=c), Authenticator(config=c), config=c);"
        f"assert all(api.autograde('{LAB}', s)['success'] for s in ('mallory', 'eve'))"
    )
    done = run("-c", formgrader, cwd=grading)
    assert done.returncode == 0, done.stderr[-3000:]
    hand_in("bob", honest)  # a later batch of one student rewrites the whole report
    done = run(*AUTOGRADE, LAB, "--student", "bob", cwd=grading)
    assert done.returncode == 0, done.stderr[-3000:]
    _, _, students, _ = class_report.read_lab(LAB, grading)
    seen = {s.id: s for s in students}
    for student in ("mallory", "eve"):
        assert seen[student].status == "flagged", (student, seen[student].status)
        assert seen[student].message.startswith("FLAGGED for review: l2_serving line 7: imports os")
        assert seen[student].score == 10.0
    assert "all autograded tests passed" in seen["mallory"].message  # the old row, after
    assert (seen["bob"].status, seen["bob"].message) == (
        "graded",
        "all autograded tests passed; the rest is graded by hand",
    )


def table(rows):
    return {(r["section"], r["key"], r["measure"]): r["value"] for r in rows}


def number(value):
    return float(value) if value != "" else ""


def gradebook_view(trip):
    """{student: (score after penalty, late, {grade_id: (score, max, awaiting a person)})} of
    every submission, read here from nbgrader's own API."""
    found = {}
    with Gradebook(trip["db_url"], course_id="LM10") as gradebook:
        for submission in gradebook.assignment_submissions(LAB):
            grades = {
                g.name: (g.score, g.max_score, bool(g.needs_manual_grade))
                for n in submission.notebooks
                for g in n.grades
            }
            score = max(0.0, submission.score - (submission.late_submission_penalty or 0.0))
            found[submission.student.id] = (score, submission.total_seconds_late > 0, grades)
    return found


def expected_status(case):
    return {"broken": "error", "flagged": "flagged"}.get(case, "graded")


def test_the_class_is_large_and_varied_and_graded_by_the_real_autograde(graded_class):
    design, report = graded_class["design"], graded_class["autograde"]
    assert len(design) >= 60
    assert {student: report[student]["status"] for student in design} == {
        student: expected_status(d["case"]) for student, d in design.items()
    }
    every_slip = {sentence for slips in class_l2.SLIPS.values() for sentence, _, _ in slips}
    from lmcourse import slips

    catalogued = {s for part in class_l2.SLIPS for s in slips.sentences(part)}
    assert every_slip == catalogued, "the class must make every slip of the lab's catalogue"


def test_counts_scores_and_parts_match_the_gradebook(graded_class):
    got, design = table(graded_class["rows"]), graded_class["design"]
    book = gradebook_view(graded_class)
    graded = [s for s in design if expected_status(design[s]["case"]) != "error"]
    lab = lambda m: number(got[("lab", LAB, m)])  # noqa: E731
    assert lab("students") == len(design) + len(class_l2.MISSING)
    assert lab("submitted") == len(design) == len(book)
    assert lab("missing") == len(class_l2.MISSING)
    assert lab("error") == sum(d["case"] == "broken" for d in design.values())
    assert lab("flagged") == sum(d["case"] == "flagged" for d in design.values())
    assert lab("graded") == len(graded) - lab("flagged")
    assert (
        lab("late") == sum(d["late"] for d in design.values()) == sum(b[1] for b in book.values())
    )
    assert lab("max_score") == 13.0
    scores = [book[s][0] for s in graded]
    assert lab("median_score") == statistics.median(scores)
    distribution = {float(k): int(v) for (sec, k, _), v in got.items() if sec == "score"}
    assert distribution == dict(Counter(scores))
    for number_, cells in PARTS.items():
        (title,) = {k for sec, k, _ in got if sec == "part" and k.startswith(number_ + " ")}
        kinds = Counter()
        for s in graded:
            marks = [book[s][2][c] for c in cells]
            total, top = sum(m[0] for m in marks), sum(m[1] for m in marks)
            waiting = any(m[2] for m in marks)
            kinds[
                "awaiting"
                if waiting
                else "full"
                if total == top
                else "partial"
                if total
                else "none"
            ] += 1
        for kind in ("full", "partial", "none", "awaiting"):
            assert int(got[("part", title, kind)]) == kinds[kind], (title, kind)
    written = [k for sec, k, _ in got if sec == "part" and k.startswith("6. ")][0]
    assert int(got[("part", written, "partial")]) == 1  # correct-02's 1.5 of 3
    # Waiting for a person: the written answers not marked yet (an answer left as released is
    # scored 0 by nbgrader and waits for no one).
    waiting = [s for s in graded if book[s][2][WRITTEN][2]]
    assert not set(waiting) & set(MANUAL) and len(waiting) > len(graded) // 2
    assert int(got[("to grade", WRITTEN, "submissions")]) == len(waiting)
    for s in graded:
        assert got[("student", s, "to_grade")] == (WRITTEN if s in waiting else ""), s


def test_pass_rates_and_slips_most_common_first(graded_class):
    got, design = graded_class["rows"], graded_class["design"]
    values = table(got)
    book = gradebook_view(graded_class)
    graded = [s for s in design if expected_status(design[s]["case"]) != "error"]
    for test in [c for cells in PARTS.values() for c in cells if c != WRITTEN]:
        failed = [s for s in graded if book[s][2][test][0] < book[s][2][test][1]]
        assert int(values[("test", test, "passed")]) == len(graded) - len(failed)
        assert float(values[("test", test, "pass_rate")]) == round(
            (len(graded) - len(failed)) / len(graded), 4
        )
        named = Counter()
        for s in failed:
            slip = design[s]["slip"]
            if slip and slip[0] == test:
                named.update({slip[1], class_l2.SAME_VALUE.get(slip[1], slip[1])})
        unnamed = len(failed) - sum(
            1 for s in failed if design[s]["slip"] and design[s]["slip"][0] == test
        )
        rows = [r for r in got if r["section"] == "slip" and r["key"].startswith(f"{test}: ")]
        counts = [
            (r["key"][len(test) + 2 :], int(r["value"])) for r in rows if r["measure"] == "students"
        ]
        want = sorted(named.items(), key=lambda item: (-item[1], item[0]))
        want += [("(no catalogued slip)", unnamed)] if unnamed else []
        assert counts == want, test
        for r in rows:
            if r["measure"] == "share":
                key = r["key"]
                assert float(r["value"]) == round(
                    int(values[("slip", key, "students")]) / len(graded), 4
                )


def test_submissions_that_need_a_look_and_the_time(graded_class):
    got, design, report = graded_class["rows"], graded_class["design"], graded_class["autograde"]
    look = {(r["key"], r["measure"]): r["value"] for r in got if r["section"] == "look"}
    want = {
        (s, report[s]["status"]): report[s]["message"]
        for s in design
        if report[s]["status"] in ("flagged", "error")
    }
    assert look == want
    assert all("FLAGGED" in v for (s, m), v in look.items() if m == "flagged")
    values = table(got)
    seconds = {s: float(r["seconds"]) for s, r in report.items()}
    assert float(values[("time", LAB, "seconds_summed")]) == pytest.approx(
        sum(seconds.values()), abs=0.05
    )
    assert float(values[("time", LAB, "median_seconds")]) == statistics.median(seconds.values())
    each = {
        r["key"]: r["value"] for r in got if (r["section"], r["measure"]) == ("student", "seconds")
    }
    assert {s: float(each[s]) for s in seconds} == seconds
    slowest = [(r["key"], float(r["value"])) for r in got if r["section"] == "slowest"]
    assert slowest == sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    assert int(values[("time", LAB, "batch_workers")]) >= 1
    assert 0 < float(values[("time", LAB, "batch_wall_seconds")]) <= sum(seconds.values()) + 120
    students = {
        r["key"]: r["value"] for r in got if r["section"] == "student" and r["measure"] == "status"
    }
    assert {s: students[s] for s in class_l2.MISSING} == {s: "missing" for s in class_l2.MISSING}


class Page(HTMLParser):
    """Every tagged number (data-m, data-v), the tags and attributes, the images."""

    def __init__(self, text):
        super().__init__()
        self.numbers, self.tags, self.images, self.attributes = {}, Counter(), [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags[tag] += 1
        self.attributes += [(tag, name, value) for name, value in attrs.items()]
        if "data-m" in attrs:
            self.numbers[attrs["data-m"]] = attrs.get("data-v")
        if tag == "img":
            self.images.append(attrs.get("src", ""))


def test_every_number_on_the_page_is_the_csv_s(graded_class):
    """Each number the page shows is tagged with its row of the CSV and holds its value; every
    number of the CSV is on the page (the texts: statuses, messages, lists of ids, are not)."""
    page = Page(graded_class["page"].read_text())
    shown = {("to grade", "submissions"), ("student", "score"), ("student", "seconds")}
    want = {
        f"{r['section']}|{r['key']}|{r['measure']}": r["value"]
        for r in graded_class["rows"]
        if r["section"] in NUMERIC or (r["section"], r["measure"]) in shown
    }
    assert page.numbers == want
    assert len(page.images) == 3
    assert all(src.startswith("data:image/png;base64,") for src in page.images)


def test_nothing_a_student_wrote_becomes_markup(graded_class):
    for path in (graded_class["page"], graded_class["course_page"]):
        text = path.read_text()
        page = Page(text)
        assert page.tags["script"] == 1, path  # the page's own sorting script
        assert not [a for a in page.attributes if a[1].startswith("on")], path
        assert not [a for a in page.attributes if "javascript:" in (a[2] or "")], path
        assert "&lt;img src=x onerror=alert(1)&gt;" in text
        assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in graded_class["page"].read_text()


def test_the_course_page_per_student_and_lab(graded_class):
    got = table(graded_class["course_rows"])
    book = gradebook_view(graded_class)
    design = graded_class["design"]
    graded = sorted(book[s][0] for s in design if expected_status(design[s]["case"]) != "error")
    q1, _, q3 = statistics.quantiles(graded, n=4, method="inclusive")
    lab = lambda m: got[("lab", LAB, m)]  # noqa: E731
    assert int(lab("graded")) == len(graded)
    assert (float(lab("median")), float(lab("q1")), float(lab("q3"))) == (
        statistics.median(graded),
        q1,
        q3,
    )
    assert (float(lab("min")), float(lab("max"))) == (graded[0], graded[-1])
    for student in list(design) + list(class_l2.MISSING):
        status = got[("student", f"{student}|{LAB}", "status")]
        if student in class_l2.MISSING:
            assert status == "missing"
            continue
        want = expected_status(design[student]["case"]) + (
            ", late" if design[student]["late"] else ""
        )
        assert status == want, student
        assert float(got[("student", f"{student}|{LAB}", "score")]) == book[student][0]
    page = Page(graded_class["course_page"].read_text())
    assert page.numbers[f"student|late-0|{LAB}|score"] == got[("student", f"late-0|{LAB}", "score")]


def test_bad_lab_names_are_refused(graded_class):
    done = run(
        "-m",
        "grading.instructor.class_report",
        "LM10-L9",
        "--grading",
        ".",
        cwd=graded_class["grading"],
    )
    assert (
        done.returncode == 2
        and "LM10-L9 is not in the gradebook (labs there: LM10-L2)" in done.stderr
    )
    done = run(
        "-m",
        "grading.instructor.class_report",
        "../x",
        "--grading",
        ".",
        cwd=graded_class["grading"],
    )
    assert done.returncode == 2 and "folder name" in done.stderr


def visit(page, address):
    requests, problems = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: m.type in ("error", "warning") and problems.append(m.text))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(address)
    return requests, problems


def test_the_page_opens_from_disk_loads_its_figures_and_requests_nothing(graded_class, browser):  # noqa: F811
    page = browser.new_page(viewport=VIEWPORT)
    requests, problems = visit(page, graded_class["page"].as_uri())
    loaded = page.evaluate("[...document.images].map(i => i.complete && i.naturalWidth > 0)")
    assert loaded == [True, True, True]
    assert problems == []
    assert [u for u in requests if not u.startswith(("file://", "data:"))] == []
    # A click on the Students table's "score" heading sorts it, lowest first.
    students = page.locator("table.sortable").last
    students.locator("th", has_text="score").click()
    shown = students.locator("tbody tr td:nth-child(3)").all_text_contents()
    blank = len(class_l2.MISSING)  # nothing handed in: no score, first
    assert shown[:blank] == [""] * blank
    assert [float(v) for v in shown[blank:]] == sorted(float(v) for v in shown[blank:])
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1200, "height": 1400})
    page.goto(graded_class["page"].as_uri())
    page.screenshot(
        path=str(SHOTS / "class-report.png"), clip={"x": 0, "y": 0, "width": 1200, "height": 1400}
    )
    page.close()
    page = browser.new_page(viewport=VIEWPORT)
    requests, problems = visit(page, graded_class["course_page"].as_uri())
    assert problems == [] and [u for u in requests if not u.startswith("file://")] == []
    page.close()


def test_the_instructor_s_jupyterlab_shows_the_page(graded_class, browser, tmp_path):  # noqa: F811
    """JupyterLab opens grading/reports/LM10-L2.html in its HTML viewer: the figures show (the
    viewer runs no script of an untrusted page; the tables read the same unsorted)."""
    root = graded_class["root"]
    with jupyterlab(root, root / "grading", tmp_path) as lab:
        problems = []
        page = lab.page(browser, "/lab/tree/grading/reports/LM10-L2.html", problems)
        frame = page.frame_locator("iframe").first
        frame.locator("h1", has_text="the class at a glance").wait_for()
        loaded = frame.locator("img").evaluate_all(
            "l => l.map(i => i.complete && i.naturalWidth > 0)"
        )
        assert loaded == [True, True, True]
        page.close()
