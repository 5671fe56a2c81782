"""The gradebook's scores as the CSV file that Canvas or Moodle imports (`make grades` writes
nbgrader's own CSV).

    python -m grading.instructor.lms canvas --roster ROSTER.csv [--grading DIR] [--lab LM10-L2 ...]
                                 [--match-on COLUMN] [--out FILE]
    python -m grading.instructor.lms moodle --roster ROSTER.csv [...]

writes grading/exports/canvas-grades.csv (moodle-grades.csv) or --out, and beside it
<out stem>-mismatch.csv and <out stem>-flagged.csv. One column per lab (--lab, repeated;
default every lab of the gradebook), holding what `make grades` calls score: nbgrader's score
after the late penalty, max(0, score - penalty), and 0 for a student of the gradebook without
a submission, as nbgrader's export gives. The roster is the LMS's own export of the class;
its column --match-on holds nbgrader's student ids (the JupyterHub user names) and pairs the two.

Canvas, Grades > Import (the gradebook's export layout: instructure/canvas-lms,
lib/gradebook_exporter.rb and app/models/gradebook_importer.rb, which reads it back):
`Student, ID, SIS User ID, SIS Login ID, Section`, then one column per assignment titled
`Name (assignment id)`, and a second row `    Points Possible`. The import finds the student by
ID (Canvas's user id), then SIS User ID, SIS Login ID, name; an empty score changes nothing; a
column without an id is matched to an assignment of exactly that title or else creates a new
assignment with the Points Possible row's points ("New assignment columns in the Gradebook
generate new assignments", The Ohio State University, "Import CSV File for Carmen Grades",
teaching.resources.osu.edu). Lab LM10-L2's column is the roster's `LM10-L2 (<id>)`; without
one it is `LM10-L2` (said on stderr). Where the roster's Points Possible differs from the lab's
maximum in nbgrader, nothing is written: Canvas would read the score out of its own points.
--match-on: SIS Login ID (default: the login name, usually the JupyterHub user), SIS User ID, ID.

Moodle, Grades > Import > CSV file (MoodleDocs, "Grade import", docs.moodle.org/en/Grade_import;
grade/import/csv/classes/load_data.php): any columns; on import "Identify user by" maps one of
them to username, email address or ID number, and each other column to a grade item (or a new
one, or feedback). Written: `Username, Email address`, then one column per lab named as the lab
(map it to the grade item of that name). --match-on: Username (default), Email address, ID number.
Moodle reads an empty cell as "no grade" and sets it (load_data.php: `$value = null; // No
grade.`), so a roster student without a score in the gradebook is left out of the file (their
Moodle grade stays as it is) rather than written empty; and a row whose user field is empty takes
the user of the row above, so a student of the export without a Username or e-mail is an error.

Roster mismatch, never dropped: a student of the gradebook without a roster row (no LMS user to
import into) and a roster row without a student of the gradebook are each a row of the
mismatch file (student, where: `gradebook only` / `roster only`, detail) and counted on stderr;
roster-only students stay in Canvas's file with empty scores. Exit status 0 with a mismatch,
2 with a message for bad input: no roster, no match column, a key twice in the roster, an
unknown lab, points that differ.

Flagged, never silent: a submission flagged for a person to read (`make grades`'s `flagged`
column, grades_export.flagged: its row in the autograde report says `flagged`, or
submission_checks or the room's names flag its autograded notebook) is a row of
<out stem>-flagged.csv beside the upload (student, lab, score, detail), counted on stderr, with
its score in the upload as before, and so is one the autograde report says was not graded
(`error`, `timeout`: the gradebook's score, 0 for a first run, went to the LMS unsaid, an
honest student's 0 among them): neither LMS has a column for it (Canvas's import reads an
extra column as a new assignment, Moodle's maps each column to a grade item), so the flag stays
beside the file the grades leave in, for a person to read before importing (the seventy-fifth
hub tester). The file is written, with its header, where nothing is flagged too.

Every text from a roster or the gradebook (names, e-mails, ids, sections) is made plain
(sanitise.plain, no escape sequences or control characters) and put on one line, and the
course's CSV writer (grading/instructor/csvout.py) gives one that starts with =, +, -, @ (after
spaces) or a tab a leading ' so that a spreadsheet shows it as text instead of running it as a
formula (OWASP ASVS 5.0, 1.2.10; one that starts with ' gets one more).
Canvas finds students by the numeric ID first, so a guarded name never stops a match; a Moodle
username or e-mail that starts with one of those characters would not be found by the import
(which then stops and names it). Scores are plain numbers.
"""

import argparse
import csv
import io
import re
import sys
from pathlib import Path

from grading.batch.gradebook import course_paths
from grading.instructor import csvout
from grading.instructor.grades_export import field
from grading.instructor.sanitise import plain

GRADING = Path(__file__).resolve().parents[1]  # grading/, the course's data
CANVAS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE = ["Username", "Email address"]
MATCH = {
    "canvas": ["SIS Login ID", "SIS User ID", "ID"],
    "moodle": ["Username", "Email address", "ID number"],
}
NAME = {"canvas": "Canvas", "moodle": "Moodle"}
# Canvas's second row, as its export writes it (its import looks for the words), and the rule
# by which its import skips the row that marks manually posted assignments (and empty rows)
POINTS_POSSIBLE = "    Points Possible"
HIDDEN_ROW = re.compile(r"\s*(Muted|Manual Posting.*)?\s*", re.IGNORECASE)


def text(value):
    """One CSV field from a roster or the gradebook: plain, on one line (the course's CSV
    writer, csvout, then guards a formula)."""
    return field(value)


def number(value):
    """A score as a plain number: 7.5, 10, 0.333333."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def read_gradebook(db_url, course_id, labs=None):
    """(maxima, students, scores, waiting, handed): each chosen lab's maximum score (lab ->
    points, in the gradebook's order), every student (id -> name), (lab, id) -> score after the
    late penalty (0 without a submission), lab -> ids of submissions still waiting for a person
    and the (lab, id) pairs with a submission."""
    from nbgrader.api import Gradebook

    if db_url.startswith("sqlite:///"):
        database = Path(db_url.removeprefix("sqlite:///").split("?")[0])
        if not database.is_file():
            raise ValueError(f"no gradebook at {database}: release a lab first (make release)")
    with Gradebook(db_url, course_id=course_id) as gradebook:
        known = [a.name for a in gradebook.assignments]
        if not known:
            raise ValueError("the gradebook has no lab yet: release one (make release LAB=...)")
        unknown = [lab for lab in labs or [] if lab not in known]
        if unknown:
            raise ValueError(
                f"no lab {', '.join(unknown)} in the gradebook; it has {', '.join(known)}"
            )
        students = {
            s.id: f"{s.first_name or ''} {s.last_name or ''}".strip() for s in gradebook.students
        }
        maxima, scores, waiting, handed = {}, {}, {}, []
        for lab in dict.fromkeys(labs or known):
            assignment = gradebook.find_assignment(lab)
            maxima[lab] = float(assignment.max_score)
            submitted = {s.student_id: s for s in assignment.submissions}
            for student in students:
                submission = submitted.get(student)
                if submission is None:  # nothing submitted: zero, as nbgrader's export
                    scores[lab, student] = 0.0
                    continue
                handed.append((lab, student))
                penalty = submission.late_submission_penalty or 0.0
                scores[lab, student] = max(0.0, submission.score - penalty)
                if submission.needs_manual_grade:
                    waiting.setdefault(lab, []).append(student)
    return maxima, students, scores, waiting, handed


def flagged_rows(grading, handed, scores):
    """The flagged file's rows: each submission of `handed` that `make grades` calls flagged
    (grades_export.flagged, on the course's autograde report and autograded notebooks), and
    each the autograde report says was not graded (`error`, `timeout`: its score is what the
    gradebook held, 0 for a first run)."""
    from grading.instructor import class_report
    from grading.instructor.grades_export import flagged

    _, autograded, _, _, root = course_paths(grading)
    table = [["student", "lab", "score", "detail"]]
    reports = {}
    for lab, student in handed:
        if lab not in reports:
            reports[lab] = class_report.autograde_rows(Path(grading), lab)
        row = reports[lab].get(student, {})
        status, message = row.get("status"), row.get("message") or ""
        release = root / "labs" / lab / f"{lab}.ipynb"
        if status in ("error", "timeout"):
            detail = f"not graded (the autograde report says {status}): grade it again"
        elif flagged(autograded / student / lab, lab, release, status) == "yes":
            detail = "flagged for a person to read (make report shows why)"
        else:
            continue
        detail += f": {message}" if message and status != "graded" else ""
        table.append([text(student), text(lab), number(scores[lab, student]), text(detail)])
    return table


def read_roster(path, key, lms):
    """(header, rows, points): the roster's column names, its student rows as (row number,
    dict) and Canvas's Points Possible row (a dict, or {}); an error for a missing file, a
    missing `key` column or a key on two rows."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no roster file {path}: export the class from {NAME[lms]} as CSV")
    try:
        content = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"roster {path} is not UTF-8 text: save it as CSV (UTF-8)") from None
    first = content.splitlines()[:1]
    if not first:
        raise ValueError(f"roster {path} is empty")
    delimiter = max(",;\t", key=lambda d: len(next(csv.reader(first, delimiter=d))))
    records = list(csv.reader(io.StringIO(content, newline=""), delimiter=delimiter))
    header = [name.strip() for name in records[0]]
    if key not in header:
        present = [c for c in MATCH[lms] if c in header]
        would = f"; this roster has {', '.join(present)}" if present else ""
        raise ValueError(
            f"roster {path} has no column {key!r} to match nbgrader's student ids on; its "
            f"columns: {', '.join(header)}. --match-on takes {', '.join(MATCH[lms])}{would}"
        )
    if lms == "moodle" and not set(MOODLE) & set(header):
        raise ValueError(f"roster {path} has no Username or Email address column for Moodle")
    rows, points, seen = [], {}, {}
    for at, record in enumerate(records[1:], start=2):
        row = {name: value.strip() for name, value in zip(header, record, strict=False)}
        if lms == "canvas" and "Points Possible" in (record[:1] or [""])[0]:
            points = row
        elif not all(HIDDEN_ROW.fullmatch(value) for value in row.values()):
            if row.get(key) and row[key] in seen:
                raise ValueError(
                    f"roster {path}: {key} {row[key]!r} is on rows {seen[row[key]]} and "
                    f"{at}: each student must be on one row"
                )
            if row.get(key):
                seen.setdefault(row[key], at)
            rows.append((at, row))
    return header, rows, points


def canvas_columns(maxima, header, points):
    """lab -> its column title in Canvas's file, and the notes for stderr; an error for two
    columns of one lab or points that differ from nbgrader's."""
    columns, notes = {}, []
    for lab, maximum in maxima.items():
        found = [c for c in header if re.fullmatch(re.escape(lab) + r"( \(\d+\))?", c)]
        if len(found) > 1:
            raise ValueError(f"the roster has {len(found)} columns for {lab}: {', '.join(found)}")
        if not found:
            notes.append(
                f"{lab}: the roster has no column {lab!r} or '{lab} (<id>)'; written as {lab!r}, "
                f"which Canvas's import fills into an assignment of exactly that name or creates "
                f"(with {number(maximum)} points)"
            )
        columns[lab] = found[0] if found else lab
        possible = points.get(columns[lab], "")
        if "read only" in possible:
            raise ValueError(f"the roster's column {columns[lab]!r} is read only in Canvas")
        try:
            canvas = float(possible.replace(",", ".")) if possible else maximum
        except ValueError:
            raise ValueError(f"Points Possible of {columns[lab]!r} is {possible!r}") from None
        if abs(canvas - maximum) > 0.005:  # Canvas writes two decimals
            raise ValueError(
                f"{columns[lab]} is out of {number(canvas)} points in Canvas, {lab} out of "
                f"{number(maximum)} in nbgrader: give the assignment {number(maximum)} points "
                f"in Canvas and export the roster again"
            )
    return columns, notes


def export(lms, roster, db_url, course_id, out, labs=None, match_on=None, grading=None):
    """Write the LMS file, its mismatch file and (with `grading`, the course's grading folder)
    its flagged file; returns (students written, of them with scores, mismatch rows, notes for
    stderr)."""
    key = match_on or MATCH[lms][0]
    if key not in MATCH[lms]:
        raise ValueError(f"--match-on {key!r}: {lms} takes {', '.join(MATCH[lms])}")
    header, rows, points = read_roster(roster, key, lms)
    maxima, students, scores, waiting, handed = read_gradebook(db_url, course_id, labs)
    notes = [
        f"{lab}: {len(ids)} submission(s) still wait for manual grading, exported with those "
        f"cells at 0: {', '.join(text(i) for i in ids)}"
        for lab, ids in waiting.items()
    ]
    matched = {row[key] for _, row in rows if row.get(key) in students}
    if lms == "canvas":
        columns, column_notes = canvas_columns(maxima, header, points)
        notes += column_notes
        table = [CANVAS + list(columns.values())]
        table.append([POINTS_POSSIBLE] + [""] * 4 + [number(m) for m in maxima.values()])
        for _, row in rows:
            student = row.get(key) if row.get(key) in students else None
            grades = [number(scores[lab, student]) if student else "" for lab in maxima]
            table.append([text(row.get(c, "")) for c in CANVAS] + grades)
    else:
        table = [MOODLE + list(maxima)]
        for at, row in rows:
            if row.get(key) not in matched:
                continue  # an empty cell would clear the Moodle grade: leave the row out
            for column in [c for c in MOODLE if c in header]:
                if not row.get(column):
                    raise ValueError(
                        f"roster row {at} ({text(row[key])}) has no {column}: Moodle "
                        f"would import its grades for the user of the row above"
                    )
            grades = [number(scores[lab, row[key]]) for lab in maxima]
            table.append([text(row.get(c, "")) for c in MOODLE] + grades)
    mismatches = mismatch(lms, key, rows, students, scores, maxima, matched)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    files = [(out, table), (mismatch_path(out), mismatches)]
    if grading is not None:
        flags = flagged_rows(grading, handed, scores)
        files.append((flagged_path(out), flags))
        if len(flags) > 1:
            notes.append(
                f"{len(flags) - 1} submission(s) flagged for a person to read or not graded, "
                f"their scores in the upload: read them before importing "
                f"(see {flagged_path(out)}): "
                + ", ".join(f"{student} {lab}" for student, lab, _, _ in flags[1:])
            )
    for path, content in files:
        with open(path, "w", newline="", encoding="utf-8") as handle:
            csvout.writer(handle).writerows(content)
    return len(table) - 1 - (lms == "canvas"), len(matched), mismatches[1:], notes


def mismatch(lms, key, rows, students, scores, maxima, matched):
    """The mismatch file's rows: every gradebook student without a roster row and every roster
    row without a gradebook student, with what to know about them."""
    table = [["student", "where", "detail"]]
    unmatched = {row.get(key, "").casefold(): row.get(key) for _, row in rows}
    for student, name in students.items():
        if student in matched:
            continue
        marks = ", ".join(f"{lab} {number(scores[lab, student])}" for lab in maxima)
        detail = f"{field(name) or 'no name'} ({marks}): no roster row with {key} {field(student)}"
        detail += f", so no {NAME[lms]} user to import into: enter by hand"
        if unmatched.get(student.casefold()) not in (None, student):
            detail += f"; the roster has {field(unmatched[student.casefold()])}, differing in case"
        table.append([text(student), "gradebook only", text(detail)])
    kept = "in the export with empty scores (Canvas keeps what it has)"
    if lms == "moodle":
        kept = "left out of the export (Moodle would clear a grade for an empty cell)"
    for at, row in rows:
        if row.get(key) in matched:
            continue
        who = row.get(key) or row.get("Student") or f"roster row {at}"
        name = row.get("Student") or " ".join(row.get(c, "") for c in ("First name", "Last name"))
        why = "not in nbgrader's gradebook" if row.get(key) else f"no {key} in the roster"
        table.append([text(who), "roster only", text(f"{field(name).strip()}: {why}; {kept}")])
    return table


def mismatch_path(out):
    return Path(out).with_name(f"{Path(out).stem}-mismatch.csv")


def flagged_path(out):
    return Path(out).with_name(f"{Path(out).stem}-flagged.csv")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m grading.instructor.lms", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("lms", choices=sorted(MATCH), help="the learning-management system")
    parser.add_argument("--roster", type=Path, required=True, help="the LMS's export of the class")
    parser.add_argument("--grading", type=Path, default=GRADING, help="the course's grading folder")
    parser.add_argument("--lab", action="append", help="a lab (repeat it; default every lab)")
    parser.add_argument(
        "--match-on",
        help="the roster column holding nbgrader's student ids (canvas: "
        + ", ".join(MATCH["canvas"])
        + "; moodle: "
        + ", ".join(MATCH["moodle"])
        + "; default the first)",
    )
    parser.add_argument("--out", type=Path, help="default: GRADING/exports/<lms>-grades.csv")
    args = parser.parse_args(argv)
    out = args.out or args.grading / "exports" / f"{args.lms}-grades.csv"
    try:
        if not (args.grading / "nbgrader_config.py").is_file():
            raise ValueError(f"no nbgrader_config.py in {args.grading}: give the grading folder")
        _, _, db_url, course_id, _ = course_paths(args.grading)
        written, scored, mismatches, notes = export(
            args.lms, args.roster, db_url, course_id, out, args.lab, args.match_on, args.grading
        )
    except ValueError as error:
        parser.exit(2, f"lms: {plain(error)}\n")
    for note in notes:
        print(f"lms: {plain(note)}", file=sys.stderr)
    wheres = [where for _, where, _ in mismatches]
    print(
        f"lms: roster mismatch: {wheres.count('gradebook only')} in the gradebook only (not "
        f"exported: no {NAME[args.lms]} user), {wheres.count('roster only')} in the roster only; "
        f"see {mismatch_path(out)}"
        if mismatches
        else f"lms: roster and gradebook match: {scored} students",
        file=sys.stderr,
    )
    print(
        f"wrote {out} ({written} students, {scored} with scores), {mismatch_path(out)} and "
        f"{flagged_path(out)}"
    )


if __name__ == "__main__":
    main()
