"""`nbgrader export` (`make grades`) with a column saying whether each submission ran isolated.

nbgrader's CsvExportPlugin writes one line per student and lab. `GradesExport` writes the same
columns, quoted as CSV (a name with a comma stays one field), plus `isolated`: `yes` where
every notebook of the submission ran in the sandbox, `no` where the instructor graded it
without isolation (LM10_GRADE_WITHOUT_ISOLATION=1, grading/host/sandbox.py), empty where it has no
autograded notebook that says (not submitted, not autograded, or never run). SandboxedExecute
writes that fact into the autograded notebook's metadata (`lm10.isolated`), so it holds for
submissions graded by `make autograde`, the formgrader and `nbgrader autograde` alike.

And `flagged`: `yes` where the submission is flagged for a person to read, as the class report
flags it (its row in the autograde report, grading/autograde-<lab>.csv, says `flagged`, or
submission_checks flags its autograded notebook: class_report.graded_later), `no` where it has
an autograded notebook and neither holds, empty where it has none. The grades were the one view
of a score without its flag: a submission the batch flags, autograded again from the
formgrader, was read as clean (the seventy-third hub tester).
"""

import json
import re
from pathlib import Path

from nbgrader.api import MissingEntry
from nbgrader.plugins import ExportPlugin

from grading.instructor import class_report, csvout
from grading.instructor.sanitise import plain

COLUMNS = [
    "assignment",
    "duedate",
    "timestamp",
    "student_id",
    "last_name",
    "first_name",
    "email",
    "raw_score",
    "late_submission_penalty",
    "score",
    "max_score",
    "isolated",
    "flagged",
]


def field(value):
    """One CSV field: a name or e-mail may come from a student, so no escape sequence or
    control character (sanitise.plain), and on one line."""
    return re.sub(r"[\t\n]", "", plain("" if value is None else value))


def isolation(folder):
    """yes, no or "" for the autograded notebooks in `folder` (see the module's docstring)."""
    found = []
    for path in sorted(Path(folder).glob("*.ipynb")) if Path(folder).is_dir() else []:
        try:
            metadata = json.loads(path.read_text()).get("metadata", {})
            value = metadata.get("lm10", {}).get("isolated")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, bool):
            found.append(value)
    if not found:
        return ""
    return "yes" if all(found) else "no"


def flagged(folder, lab, release, row_status):
    """yes, no or "" for the autograded notebook of `lab` in `folder` (the module's docstring)."""
    notebook = Path(folder) / f"{lab}.ipynb"
    if not notebook.is_file():
        return "yes" if row_status == "flagged" else ""
    if row_status == "flagged":
        return "yes"
    found = class_report.notebook_flags(notebook, release)  # the room's names among them
    if found is None:
        return ""  # unread: nothing said either way
    return "yes" if found else "no"


class GradesExport(ExportPlugin):
    """nbgrader's CSV export, quoted, with the `isolated` column."""

    def export(self, gradebook):
        dest = self.to or "grades.csv"
        students = {str(s) for s in self.student}
        assignments = {str(a) for a in self.assignment}
        coursedir = self.parent.coursedir
        reports = {}
        self.log.info("Exporting grades to %s", dest)
        with open(dest, "w", newline="") as handle:
            writer = csvout.writer(handle)
            writer.writerow(COLUMNS)
            for assignment in gradebook.assignments:
                if assignments and assignment.name not in assignments:
                    continue
                for student in gradebook.students:
                    if students and student.id not in students:
                        continue
                    row = {
                        "assignment": assignment.name,
                        "duedate": assignment.duedate,
                        "student_id": student.id,
                        "last_name": student.last_name,
                        "first_name": student.first_name,
                        "email": student.email,
                        "max_score": assignment.max_score,
                    }
                    try:
                        submission = gradebook.find_submission(assignment.name, student.id)
                    except MissingEntry:  # nothing submitted: zero, as nbgrader's export
                        row.update(raw_score=0.0, late_submission_penalty=0.0, score=0.0)
                    else:
                        root = Path(coursedir.root)
                        if assignment.name not in reports:
                            reports[assignment.name] = class_report.autograde_rows(
                                root / "grading", assignment.name
                            )
                        folder = coursedir.format_path(
                            coursedir.autograded_directory, student.id, assignment.name
                        )
                        penalty = submission.late_submission_penalty or 0.0
                        row.update(
                            timestamp=submission.timestamp,
                            raw_score=submission.score,
                            late_submission_penalty=penalty,
                            score=max(0.0, submission.score - penalty),
                            isolated=isolation(folder),
                            flagged=flagged(
                                folder,
                                assignment.name,
                                root
                                / coursedir.release_directory
                                / assignment.name
                                / f"{assignment.name}.ipynb",
                                reports[assignment.name].get(student.id, {}).get("status"),
                            ),
                        )
                    writer.writerow(field(row.get(c)) for c in COLUMNS)
