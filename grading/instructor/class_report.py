"""The instructor's view of a class: what it got wrong, in figures, on one page per lab and one
for the course.

    python -m grading.instructor.class_report LM10-L2 [--grading DIR]  (make report LAB=LM10-L2)
    python -m grading.instructor.class_report       (make report: every lab's page, the course's)

writes grading/reports/LM10-L2.html and, beside it, LM10-L2.csv with the same numbers as tidy
rows (lab, section, key, measure, value); `grading/reports/course.html` and `course.csv` for
the course. The pages are single files: figures are PNG images inside the page, the one script
(sorting a table by a click on its heading) is inline and allowed by its hash in the page's
Content-Security-Policy, which allows nothing else, so a page opens from disk, in JupyterLab or
a browser, without a server or the internet, and requests nothing.

What a lab's page reads, all of it the grader's own record:
- the gradebook (nbgrader's database): who is in the class, every cell's score and maximum,
  the written answers still waiting for a person, the submission's time and lateness;
- the autograde report (grading/autograde-LAB.csv, report.py): each submission's status
  (graded, flagged, error, timeout), why, and its grading time, and the batch's record
  (autograde-LAB-batch.json: wall time, workers);
- the autograded notebooks: the catalogued slips (lmcourse.slips) each failing test named;
  only sentences of the catalogue are taken, so nothing a student wrote reaches the page by
  that route; and submission_checks' flags on a submission graded without a flag or without
  a row (the formgrader's Autograde and `nbgrader autograde` report no flags: `graded_later`);
- the released notebook: the lab's parts (its numbered headings) and which cells they hold.

Statistics of marks are over the graded submissions (graded or flagged); a submission that was
not graded (error, timeout) has zero recorded and is listed under "needs a look" with its
reason, and a student of the gradebook who handed nothing in is counted as missing. Every text
from a submission (ids, messages) is made plain (sanitise.plain) and HTML-escaped.
"""

import argparse
import base64
import hashlib
import html
import io
import json
import math
import re
import statistics
import sys
import textwrap
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grading.batch import report, results
from grading.batch.gradebook import course_paths
from grading.batch.results import STATUSES
from grading.host import submission_checks
from grading.instructor import csvout, similarity
from grading.instructor.sanitise import plain

GRADING = Path(__file__).resolve().parents[1]  # grading/, the course's data
GRADED = ("graded", "flagged")
NO_SLIP = "(no catalogued slip)"
KINDS = {
    "full": "full marks",
    "partial": "partial",
    "none": "none",
    "awaiting": "awaiting a person",
}


@dataclass
class Part:
    title: str
    cells: list  # grade_ids
    max_score: float = 0.0


@dataclass
class Student:
    id: str
    status: str  # graded | flagged | error | timeout | missing | not autograded
    score: float = 0.0
    max_score: float = 0.0
    late: bool = False
    seconds: float | None = None
    message: str = ""
    cells: dict = field(default_factory=dict)  # grade_id -> (score, max_score, awaiting person)
    slips: dict = field(default_factory=dict)  # failing test grade_id -> [sentences]


# ------------------------------------------------------------------------------ reading


def lab_parts(release):
    """The lab's parts from its released notebook: each markdown heading "## <n>. <title>"
    opens one, and holds the graded cells up to the next (cells before any heading: "Lab")."""
    nb = nbformat.read(release, as_version=4)
    parts, current = [], Part("Lab", [])
    for cell in nb.cells:
        heading = re.match(r"##\s+(\d+\..*)", cell.source) if cell.cell_type == "markdown" else None
        if heading:
            parts.append(current)
            current = Part(heading.group(1).strip(), [])
        if submission_checks.is_grade(cell):
            current.cells.append(submission_checks.meta(cell)["grade_id"])
            current.max_score += float(submission_checks.meta(cell).get("points", 0))
    parts.append(current)
    return [p for p in parts if p.cells]


def autograde_rows(grading, lab):
    path = grading / f"autograde-{lab}.csv"
    if not path.is_file():
        return {}
    with open(path, newline="") as handle:
        return {row["student"]: row for row in csvout.DictReader(handle) if row.get("student")}


def _seconds(value):
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def batch_record(grading, lab):
    path = grading / f"autograde-{lab}-batch.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def read_lab(lab, grading=GRADING):
    """(parts, tests, students, batch) of `lab`: see the module's docstring."""
    from nbgrader.api import Gradebook, MissingEntry

    _, autograded, db_url, course_id, root = course_paths(grading)
    release = root / "labs" / lab / f"{lab}.ipynb"
    rows = autograde_rows(grading, lab)
    students = []
    with Gradebook(db_url, course_id=course_id) as gradebook:
        try:
            assignment = gradebook.find_assignment(lab)
        except MissingEntry:
            known = ", ".join(a.name for a in gradebook.assignments) or "none"
            raise ValueError(f"lab {lab} is not in the gradebook (labs there: {known})") from None
        if not release.is_file():
            raise ValueError(f"no released notebook {release}: run `make release LAB={lab}`")
        parts = lab_parts(release)
        tests = [
            c.name for n in assignment.notebooks for c in n.grade_cells if c.cell_type == "code"
        ]
        for person in gradebook.students:
            try:
                submission = gradebook.find_submission(lab, person.id)
            except MissingEntry:
                students.append(Student(person.id, "missing", max_score=assignment.max_score))
                continue
            row = rows.get(person.id, {})
            status = row.get("status")
            s = Student(
                person.id,
                status if status in STATUSES else "not autograded",
                score=max(0.0, submission.score - (submission.late_submission_penalty or 0.0)),
                max_score=submission.max_score,
                late=bool(submission.total_seconds_late and submission.total_seconds_late > 0),
                seconds=_seconds(row.get("seconds")),
                message=row.get("message", ""),
            )
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    s.cells[grade.name] = (
                        float(grade.score),
                        float(grade.max_score),
                        bool(grade.needs_manual_grade),
                    )
            students.append(s)
    for s in students:
        graded_later(s, lab, autograded, release)
    for s in students:
        if s.status in GRADED:
            named = report.failures(autograded / s.id / lab / f"{lab}.ipynb")
            s.slips = {grade_id: found for grade_id, _, found in named if grade_id in tests}
    return parts, tests, students, batch_record(grading, lab)


def notebook_flags(notebook, release):
    """The flags an autograded notebook carries, as the batch finds them: submission_checks'
    on her cells (against `release`, the released notebook) and the room's names the grader
    kept in it (results.room_missed); None where either notebook cannot be read."""
    try:
        graded = nbformat.read(notebook, as_version=4)
        found = submission_checks.flags(graded, nbformat.read(release, as_version=4))
    except (OSError, ValueError):
        return None
    if missed := results.room_missed(graded):  # kept by the grader, in its words
        found.append(results.room_flag(missed))
    return found


def graded_later(s, lab, autograded, release):
    """Flag `s`, graded without a flag or with no row in the autograde report, from its
    autograded notebook: the formgrader's Autograde and `nbgrader autograde` grade in the
    sandbox but report to no one what they flag (only the batch's worker takes the flags),
    and a row the batch wrote before stays as it was; a submission handed in again with code
    the batch flags, then autograded from the formgrader, read "graded" with the old row's
    message and the new score (the seventy-first hub tester's). The flags are
    submission_checks' on her cells, as the batch's are (the same on a row the batch wrote,
    which is then flagged already); the room's are the batch's alone. A file's time says
    nothing here: a later `--student` rerun rewrites the whole report."""
    if s.status not in ("graded", "not autograded"):
        return
    found = notebook_flags(autograded / s.id / lab / f"{lab}.ipynb", release)
    if not found:
        return
    s.status = "flagged"
    s.message = plain(
        " | ".join(
            filter(
                None,
                [
                    "FLAGGED for review: "
                    + "; ".join(found[:4])
                    + (f" (+{len(found) - 4} more)" if len(found) > 4 else ""),
                    "autograded without the batch's report (the formgrader's Autograde or "
                    "nbgrader autograde, which report no flags): grade it again with "
                    f"`python -m grading.batch.autograde {lab} --student {s.id}`",
                    s.message,
                ],
            )
        )
    )[:1000]


# ------------------------------------------------------------------------------ measuring


def measure(lab, parts, tests, students, batch):
    """The page's numbers as tidy rows (section, key, measure, value)."""
    rows = []

    def put(section, key, name, value):
        rows.append((section, key, name, value))

    graded = [s for s in students if s.status in GRADED]
    submitted = [s for s in students if s.status != "missing"]
    max_score = max((s.max_score for s in students), default=0.0)
    put("lab", lab, "students", len(students))
    put("lab", lab, "submitted", len(submitted))
    for status in ("graded", "flagged", "error", "timeout", "not autograded", "missing"):
        put("lab", lab, status, sum(s.status == status for s in students))
    put("lab", lab, "late", sum(s.late for s in submitted))
    put("lab", lab, "max_score", max_score)
    scores = [s.score for s in graded]
    put("lab", lab, "median_score", statistics.median(scores) if scores else "")
    put("lab", lab, "mean_score", round(statistics.fmean(scores), 2) if scores else "")
    for value, count in sorted(Counter(scores).items()):
        put("score", f"{value:g}", "submissions", count)

    for part in parts:
        counts = Counter()
        for s in graded:
            got = [s.cells.get(g, (0.0, 0.0, False)) for g in part.cells]
            if any(waiting for _, _, waiting in got):
                counts["awaiting"] += 1
            else:
                total = sum(score for score, _, _ in got)
                counts[
                    "full" if total >= part.max_score else "partial" if total > 0 else "none"
                ] += 1
        put("part", part.title, "max_score", part.max_score)
        for name in ("full", "partial", "none", "awaiting"):
            put("part", part.title, name, counts[name])

    for test in tests:
        passed = sum(
            s.cells.get(test, (0, 1, 0))[0] >= s.cells.get(test, (0, 1, 0))[1] for s in graded
        )
        put("test", test, "passed", passed)
        put("test", test, "failed", len(graded) - passed)
        put("test", test, "pass_rate", round(passed / len(graded), 4) if graded else "")
        failing = [s for s in graded if test in s.slips]
        named = Counter(sentence for s in failing for sentence in s.slips[test])
        unnamed = sum(not s.slips[test] for s in failing)
        ordered = sorted(named.items(), key=lambda item: (-item[1], item[0]))
        for sentence, count in ordered + ([(NO_SLIP, unnamed)] if unnamed else []):
            put("slip", f"{test}: {sentence}", "students", count)
            put("slip", f"{test}: {sentence}", "share", round(count / len(graded), 4))

    for s in students:
        if s.status in ("flagged", "error", "timeout", "not autograded"):
            put("look", s.id, s.status, s.message or "(no autograde report)")
    written = dict.fromkeys(g for s in graded for g, (_, _, w) in s.cells.items() if w)
    for grade_id in written:
        waiting = [s.id for s in graded if s.cells[grade_id][2]]
        put("to grade", grade_id, "submissions", len(waiting))

    timed = [s for s in submitted if s.seconds is not None]
    put("time", lab, "submissions_timed", len(timed))
    put("time", lab, "seconds_summed", round(sum(s.seconds for s in timed), 1))
    median = statistics.median(s.seconds for s in timed) if timed else ""
    put("time", lab, "median_seconds", median)
    wall, jobs = _seconds(batch.get("wall_seconds")), batch.get("jobs")
    put("time", lab, "batch_wall_seconds", "" if wall is None else wall)
    put("time", lab, "batch_workers", jobs if isinstance(jobs, int) and jobs > 0 else "")
    for s in sorted(timed, key=lambda s: (-s.seconds, s.id))[:5]:
        put("slowest", s.id, "seconds", s.seconds)

    for s in students:
        put("student", s.id, "status", s.status)
        put("student", s.id, "score", s.score if s.status != "missing" else "")
        put("student", s.id, "late", "yes" if s.late else "")
        put("student", s.id, "seconds", "" if s.seconds is None else s.seconds)
        waiting = [g for g, (_, _, w) in s.cells.items() if w] if s.status in GRADED else []
        put("student", s.id, "to_grade", " ".join(waiting))
        put("student", s.id, "message", s.message)
    return [(lab, *row) for row in rows]


# ------------------------------------------------------------------------------ drawing


def _png(fig):
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def figures(table, lab):
    """The lab's figures, as data: addresses: the score distribution, the parts, the slips."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    get = {(r[1], r[2], r[3]): r[4] for r in table}
    maximum = get[("lab", lab, "max_score")]
    found = {}

    fig, ax = plt.subplots(figsize=(7, 2.8))
    scores = [(float(r[2]), r[4]) for r in table if r[1] == "score"]
    ax.bar([v for v, _ in scores], [n for _, n in scores], width=0.8, color="#4c72b0")
    ax.set_xlim(-0.5, maximum + 0.5)
    ax.set_xlabel(f"score (of {maximum:g})")
    ax.set_ylabel("submissions")
    ax.set_title(f"{lab}: scores of the graded submissions")
    fig.tight_layout()
    found["scores"] = _png(fig)

    parts = list(dict.fromkeys(r[2] for r in table if r[1] == "part"))
    colours = {"full": "#55a868", "partial": "#f6c28b", "none": "#c44e52", "awaiting": "#cccccc"}
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(parts) + 1.4))
    names = parts[::-1]
    left = [0] * len(names)
    for kind, colour in colours.items():
        widths = [get[("part", p, kind)] for p in names]
        ax.barh(names, widths, left=left, color=colour, label=KINDS[kind])
        left = [a + w for a, w in zip(left, widths, strict=True)]
    ax.set_xlabel("graded submissions")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=4, frameon=False)
    ax.set_title("Marks per part")
    fig.tight_layout()
    found["parts"] = _png(fig)

    slips = [(r[2], r[4]) for r in table if r[1] == "slip" and r[3] == "students"]
    slips = sorted((s for s in slips if NO_SLIP not in s[0]), key=lambda s: -s[1])[:10][::-1]
    if slips:
        fig, ax = plt.subplots(figsize=(8, 0.55 * len(slips) + 1.2))
        labels = [textwrap.fill(_short(key, 90), 48) for key, _ in slips]
        ax.barh(labels, [n for _, n in slips], color="#dd8452")
        ax.set_xlabel("students")
        ax.set_title("The most common slips")
        ax.tick_params(axis="y", labelsize=8)
        fig.tight_layout()
        found["slips"] = _png(fig)
    return found


def _short(key, width=60):
    return key if len(key) <= width else key[: width - 1] + "…"


# ------------------------------------------------------------------------------ writing

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 64em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 0.2em 0.6em; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th.sort { cursor: pointer; } th.sort:after { content: " \\2195"; color: #999; }
.note { color: #555; } img { max-width: 100%; }
.flagged { background: #fff4d6; } .error, .timeout { background: #fde2e2; }
.missing { color: #888; }
"""

# Click a heading of a .sortable table to sort by that column (numbers as numbers).
SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.classList.add("sort");
  th.addEventListener("click", function () {
    var column = th.cellIndex;
    var body = th.closest("table").tBodies[0];
    var up = th.dataset.up !== "1"; th.dataset.up = up ? "1" : "0";
    var key = function (row) {
      var cell = row.cells[column];
      var v = cell.dataset.v !== undefined ? cell.dataset.v : cell.textContent;
      if (v === "") return -Infinity;  // no value (nothing handed in) first
      var n = parseFloat(v); return isNaN(n) ? v.toLowerCase() : n;
    };
    Array.from(body.rows).sort(function (a, b) {
      var x = key(a), y = key(b);
      var order = x < y ? -1 : x > y ? 1 : 0;
      return up ? order : -order;
    }).forEach(function (row) { body.appendChild(row); });
  });
});
"""


def _hash(text):
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def page(title, body):
    """A complete page: nothing loads from anywhere but the page itself."""
    policy = (
        f"default-src 'none'; img-src data:; style-src {_hash(STYLE)}; "
        f"script-src {_hash(SCRIPT)}; base-uri 'none'; form-action 'none'"
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>\n"
        f"<meta http-equiv='Content-Security-Policy' content=\"{policy}\">\n"
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n<body>\n{body}\n"
        f"<script>{SCRIPT}</script>\n</body></html>\n"
    )


def esc(value):
    return html.escape(plain("" if value is None else str(value)), quote=True)


def num(table_get, section, key, name, shown=None):
    """A table cell holding one number of the tidy rows, tagged with where it comes from."""
    value = table_get[(section, key, name)]
    text = shown(value) if shown and value != "" else value
    return (
        f'<td class=\'n\' data-m="{esc(f"{section}|{key}|{name}")}" data-v="{esc(value)}">'
        f"{esc(text)}</td>"
    )


def percent(value):
    return f"{100 * float(value):.0f} %"


def lab_page(lab, table, images, similar=""):
    get = {(r[1], r[2], r[3]): r[4] for r in table}
    keys = lambda section: list(dict.fromkeys(r[2] for r in table if r[1] == section))  # noqa: E731
    out = [f"<h1>{esc(lab)}: the class at a glance</h1>"]
    out.append(
        "<table><tr><th>students</th><th>submitted</th><th>graded</th><th>flagged</th>"
        "<th>error</th><th>timeout</th><th>not autograded</th><th>missing</th><th>late</th>"
        "<th>median score</th><th>mean score</th><th>maximum</th></tr><tr>"
        + "".join(
            num(get, "lab", lab, m)
            for m in (
                ["students", "submitted", "graded", "flagged", "error", "timeout"]
                + ["not autograded", "missing", "late", "median_score", "mean_score", "max_score"]
            )
        )
        + "</tr></table>"
    )
    out.append(
        "<p class='note'>Marks are counted over the graded submissions (graded and flagged); a "
        "submission that could not be graded has zero recorded and is listed under <em>Needs a "
        "look</em>.</p>"
    )
    out.append(f"<h2>Scores</h2><img alt='histogram of scores' src='{images['scores']}'>")
    out.append(
        "<table><tr><th>score</th>"
        + "".join(f"<td class='n'>{esc(score)}</td>" for score in keys("score"))
        + "</tr><tr><th>submissions</th>"
        + "".join(num(get, "score", score, "submissions") for score in keys("score"))
        + "</tr></table>"
    )
    out.append(f"<h2>Parts</h2><img alt='marks per part' src='{images['parts']}'>")
    out.append(
        "<table class='sortable'><thead><tr><th>part</th><th>points</th><th>full</th>"
        "<th>partial</th><th>none</th><th>awaiting a person</th></tr></thead><tbody>"
    )
    for part in keys("part"):
        out.append(
            f"<tr><td>{esc(part)}</td>"
            + num(get, "part", part, "max_score")
            + "".join(num(get, "part", part, m) for m in ("full", "partial", "none", "awaiting"))
            + "</tr>"
        )
    out.append("</tbody></table>")
    out.append("<h2>Autograded tests and the slips behind their failures</h2>")
    out.append(
        "<p class='note'>A slip is a wrong answer the course's catalogue recognises "
        "(lmcourse.slips) from the wrong value it gives; one failure can name two slips that "
        "give the same value. Shares are of the graded submissions.</p>"
    )
    if "slips" in images:
        out.append(f"<img alt='the most common slips' src='{images['slips']}'>")
    out.append(
        "<table><thead><tr><th>test</th><th>passed</th><th>failed</th><th>pass rate</th>"
        "<th>slips named, most common first</th></tr></thead><tbody>"
    )
    slips = [r for r in table if r[1] == "slip" and r[3] == "students"]
    for test in keys("test"):
        named = [r[2] for r in slips if r[2].startswith(f"{test}: ")]
        listed = "".join(
            f'<li><span data-m="{esc(f"slip|{key}|students")}" '
            f'data-v="{esc(get[("slip", key, "students")])}">{esc(get[("slip", key, "students")])}'
            f'</span> (<span data-m="{esc(f"slip|{key}|share")}" '
            f'data-v="{esc(get[("slip", key, "share")])}">'
            f"{esc(percent(get[('slip', key, 'share')]))}</span>) {esc(key[len(test) + 2 :])}</li>"
            for key in named
        )
        out.append(
            f"<tr><td>{esc(test)}</td>"
            + num(get, "test", test, "passed")
            + num(get, "test", test, "failed")
            + num(get, "test", test, "pass_rate", percent)
            + f"<td><ul>{listed}</ul></td></tr>"
        )
    out.append("</tbody></table>")
    out.append("<h2>Needs a look</h2><table class='sortable'><thead><tr><th>student</th>")
    out.append("<th>why</th><th>detail</th></tr></thead><tbody>")
    for _, key, name, value in (r[1:] for r in table if r[1] == "look"):
        out.append(
            f"<tr class='{esc(name.split()[0])}'><td>{esc(key)}</td><td>{esc(name)}</td>"
            f"<td>{esc(value)}</td></tr>"
        )
    out.append("</tbody></table>")
    for grade_id in keys("to grade"):
        out.append(
            f"<p>Written answer <code>{esc(grade_id)}</code> still to grade by hand in "
            f'<span data-m="{esc(f"to grade|{grade_id}|submissions")}" '
            f'data-v="{esc(get[("to grade", grade_id, "submissions")])}">'
            f"{esc(get[('to grade', grade_id, 'submissions')])}</span> graded submissions "
            "(the formgrader lists them).</p>"
        )
    out.append(similar)  # grading/instructor/similarity.py's section: its own page, linked
    out.append(
        "<h2>Time</h2><table><tr><th>submissions timed</th><th>seconds, summed</th>"
        "<th>median seconds</th><th>last batch, wall seconds</th><th>its workers</th></tr><tr>"
        + "".join(
            num(get, "time", lab, m)
            for m in (
                "submissions_timed",
                "seconds_summed",
                "median_seconds",
                "batch_wall_seconds",
                "batch_workers",
            )
        )
        + "</tr></table><table><thead><tr><th>slowest</th><th>seconds</th></tr></thead><tbody>"
    )
    for student in keys("slowest"):
        out.append(f"<tr><td>{esc(student)}</td>{num(get, 'slowest', student, 'seconds')}</tr>")
    out.append("</tbody></table>")
    out.append(
        "<h2>Students</h2><table class='sortable'><thead><tr><th>student</th><th>status</th>"
        "<th>score</th><th>late</th><th>seconds</th><th>to grade by hand</th>"
        "<th>why (the autograde report)</th></tr></thead><tbody>"
    )
    for student in keys("student"):
        status = get[("student", student, "status")]
        out.append(
            f"<tr class='{esc(status.split()[0])}'><td>{esc(student)}</td><td>{esc(status)}</td>"
            + num(get, "student", student, "score")
            + f"<td>{esc(get[('student', student, 'late')])}</td>"
            + num(get, "student", student, "seconds")
            + f"<td>{esc(get[('student', student, 'to_grade')])}</td>"
            + f"<td>{esc(get[('student', student, 'message')])}</td></tr>"
        )
    out.append("</tbody></table>")
    out.append(
        f"<p class='note'>The same numbers as rows: {esc(lab)}.csv, beside this page. "
        "Built from the gradebook and the autograde report by "
        "grading/instructor/class_report.py.</p>"
    )
    return page(f"{lab}: class report", "\n".join(out))


def write_csv(path, table):
    csvout.write(path, [["lab", "section", "key", "measure", "value"], *table])


def build_lab(lab, grading=GRADING, out=None):
    """Write the lab's page and CSV; return the page's path."""
    out = Path(out or grading / "reports")
    out.mkdir(parents=True, exist_ok=True)
    parts, tests, students, batch = read_lab(lab, grading)
    table = measure(lab, parts, tests, students, batch)
    similar = similarity.section(lab, grading, out)
    (out / f"{lab}.html").write_text(lab_page(lab, table, figures(table, lab), similar))
    write_csv(out / f"{lab}.csv", table)
    return out / f"{lab}.html"


# ------------------------------------------------------------------------------ the course


def course_table(grading=GRADING):
    """Tidy rows of the course: per student and lab score and status; per lab the spread."""
    from nbgrader.api import Gradebook

    _, _, db_url, course_id, _ = course_paths(grading)
    with Gradebook(db_url, course_id=course_id) as gradebook:
        labs = sorted(a.name for a in gradebook.assignments)
    table = []
    for lab in labs:
        _, _, students, _ = read_lab(lab, grading)
        graded = sorted(s.score for s in students if s.status in GRADED)
        spread = statistics.quantiles(graded, n=4, method="inclusive") if len(graded) > 1 else []
        summary = {
            "graded": len(graded),
            "median": statistics.median(graded) if graded else "",
            "q1": spread[0] if spread else "",
            "q3": spread[2] if spread else "",
            "min": graded[0] if graded else "",
            "max": graded[-1] if graded else "",
            "max_score": max((s.max_score for s in students), default=0.0),
        }
        table += [("course", "lab", lab, name, value) for name, value in summary.items()]
        for s in students:
            status = s.status + (", late" if s.late else "")
            table.append(("course", "student", f"{s.id}|{lab}", "status", status))
            score = s.score if s.status != "missing" else ""
            table.append(("course", "student", f"{s.id}|{lab}", "score", score))
    return labs, table


def course_page(labs, table):
    get = {(r[1], r[2], r[3]): r[4] for r in table}
    out = ["<h1>LM10: the course at a glance</h1><h2>Labs</h2>"]
    out.append(
        "<table class='sortable'><thead><tr><th>lab</th><th>graded</th><th>median</th>"
        "<th>quartiles</th><th>lowest</th><th>highest</th><th>maximum</th></tr></thead><tbody>"
    )
    for lab in labs:
        out.append(
            f"<tr><td><a href='{esc(lab)}.html'>{esc(lab)}</a></td>"
            + num(get, "lab", lab, "graded")
            + num(get, "lab", lab, "median")
            + f"<td>{esc(get[('lab', lab, 'q1')])} to {esc(get[('lab', lab, 'q3')])}</td>"
            + "".join(num(get, "lab", lab, m) for m in ("min", "max", "max_score"))
            + "</tr>"
        )
    out.append("</tbody></table><h2>Students</h2>")
    out.append(
        "<p class='note'>Click a heading to sort. A lab's cell: the score, and the status where "
        "it is not simply graded (missing, late, flagged, error, timeout).</p>"
    )
    students = sorted({r[2].rsplit("|", 1)[0] for r in table if r[1] == "student"})
    out.append(
        "<table class='sortable'><thead><tr><th>student</th>"
        + "".join(f"<th>{esc(lab)}</th>" for lab in labs)
        + "</tr></thead><tbody>"
    )
    for student in students:
        cells = []
        for lab in labs:
            key = f"{student}|{lab}"
            if ("student", key, "status") not in get:
                cells.append("<td data-v=''>not in this lab's gradebook</td>")
                continue
            status, score = get[("student", key, "status")], get[("student", key, "score")]
            shown = f"{score:g}" if score != "" else ""
            if status != "graded":
                shown = f"{shown} ({status})".strip()
            cells.append(
                f"<td class='{esc(status.split(',')[0].split()[0])}' "
                f'data-m="{esc(f"student|{key}|score")}" data-v="{esc(score)}">'
                f"{esc(shown)}</td>"
            )
        out.append(f"<tr><td>{esc(student)}</td>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    return page("LM10: course report", "\n".join(out))


def build_course(grading=GRADING, out=None):
    out = Path(out or grading / "reports")
    out.mkdir(parents=True, exist_ok=True)
    labs, table = course_table(grading)
    (out / "course.html").write_text(course_page(labs, table))
    write_csv(out / "course.csv", table)
    return out / "course.html"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lab", nargs="?", help="one lab (default: every lab, and the course)")
    parser.add_argument("--grading", type=Path, default=GRADING, help="the course's grading folder")
    args = parser.parse_args(argv)
    start = time.monotonic()
    grading = args.grading.resolve()
    try:
        if args.lab:
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", args.lab):
                raise ValueError(f"lab must be a folder name such as LM10-L2, got {args.lab!r}")
            written = [build_lab(args.lab, grading)]
        else:
            labs, _ = course_table(grading)
            written = [build_lab(lab, grading) for lab in labs] + [build_course(grading)]
    except ValueError as error:
        parser.exit(2, f"report: {error}\n")
    for path in written:
        print(f"wrote {path} (open it in a browser, or in JupyterLab's file browser)")
    print(f"built in {time.monotonic() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
