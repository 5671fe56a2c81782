"""Why each submission scored what it did, and the report: a line per submission on the
terminal, a progress line on stderr, and grading/autograde-LAB.csv, merged so that grading one
student again never loses the batch's rows. Every text from a submission is made plain
(sanitise.plain) before it is printed or written."""

import json
import re
import sys
import time
from dataclasses import fields

import nbformat
from lmcourse import slips

from grading.batch.results import Result
from grading.host import submission_checks
from grading.instructor import csvout
from grading.instructor.sanitise import first_line, plain


def failures(notebook_path):
    """(grade_id, reason, slips) of each autograded test cell that failed, in notebook order:
    slips are the sentences of lmcourse.slips its error named."""
    try:
        nb = nbformat.read(notebook_path, as_version=4)
    except Exception:  # noqa: BLE001 (no autograded notebook: nothing to explain)
        return []
    found = []
    for cell in nb.cells:
        if cell.get("cell_type") != "code" or not submission_checks.is_test(cell):
            continue
        outputs = cell.get("outputs") if isinstance(cell.get("outputs"), list) else []
        errors = [o for o in outputs if isinstance(o, dict) and o.get("output_type") == "error"]
        if errors:
            error = errors[-1] if errors[-1].get("ename") != "KeyboardInterrupt" else errors[0]
            reason = f"{error.get('ename')}: {first_line(error.get('evalue', ''))}".rstrip(": ")
            grade_id = submission_checks.meta(cell).get("grade_id")
            named = slips.named(error.get("evalue", ""), grade_id) if grade_id else []
            found.append((grade_id, reason, named))
    return found


# What the kernel counts per uid of the machine, across user namespaces: every sandbox of a batch
# runs as the grader's uid, so a submission that takes all of one (epoll watches, descriptors in
# flight over Unix sockets, processes) fails a classmate graded beside it, with one of these
# errors (the eighteenth hub tester's table, grading/JUPYTERHUB.md). And the machine's memory,
# which no limit of the sandbox's bounds for all of a submission's processes together: when it
# runs out, the kernel's OOM killer ends the largest process, which may be a classmate's kernel
# or executor (SIGKILL), with nothing that names her.
MACHINE_LIMIT = re.compile(
    r"\[Errno (?:11|12|23|24|28|109)\][^\n]{0,80}|No space left on device|Too many open files"
    r"|Too many references|Resource temporarily unavailable|Cannot allocate memory"
    r"|\bE(?:AGAIN|NOMEM|NFILE|MFILE|NOSPC|TOOMANYREFS)\b"
    r"|the kernel died|stopped by signal 9\b"
    # and where the machine refuses to overcommit (vm.overcommit_memory=2), her processes'
    # memory makes a classmate's allocation fail (the twentieth tester's table): Python's
    # MemoryError, numpy's _ArrayMemoryError ("Unable to allocate"), torch's "can't allocate"
    r"|MemoryError\b|Unable to allocate|can't allocate memory"
)
# And the OOM killer's other victims, whose words name no limit: the sandbox's init or
# bubblewrap (as large as its kernel: the lab's modules are imported there), the trusted test
# process, the grader process itself (the twenty-first tester's table); read after the words
# above, which say more where both are there. Her own code can end a run so too (its
# executor), which earns her no more than the second run she can already earn herself.
GRADER_KILLED = re.compile(
    r"the sandbox returned no executed notebook|the trusted test process failed"
    r"|the grader process died"
)


def machine_limit(result, notes, autograded_notebook):
    """The first words in a graded submission's errors (the report's message, the cell the
    grader stopped, any cell's error output) that name a limit the machine counts for the
    grader's uid as a whole, or a kernel or executor killed (the OOM killer's way), or
    a sandbox, trusted test process or grader process ended (GRADER_KILLED), or "":
    where it ran beside other submissions, one of them may have caused it (autograde grades it
    again, alone)."""
    texts = [result.message, notes.stopped]
    try:
        nb = nbformat.read(autograded_notebook, as_version=4)
    except Exception:  # noqa: BLE001 (no autograded notebook: the message says why)
        nb = None
    for cell in nb.cells if nb else []:
        outputs = cell.get("outputs") if isinstance(cell.get("outputs"), list) else []
        texts += [
            f"{o.get('ename')}: {o.get('evalue')}"
            for o in outputs
            if isinstance(o, dict) and o.get("output_type") == "error"
        ]
    found = next(
        (
            m
            for words in (MACHINE_LIMIT, GRADER_KILLED)
            for t in texts
            if (m := words.search(str(t)))
        ),
        None,
    )
    return found.group(0) if found else ""


def out_of_time(result, notes):
    """What of a graded submission ran out of its time ("" when nothing did): where it ran
    beside other submissions, one of them may have slowed it (its processes taking the
    memory, so that the classmate's pages are read from disk again and again), and
    autograde grades it again, alone, within the batch's time for that (--alone-time)."""
    if result.status == "timeout" or notes.timeout:
        return "the time limit of the whole submission"
    cells = list(notes.timed_out_cells)
    name, _, reason = notes.stopped.partition(": ")
    if reason.startswith("it ran past") and name not in cells:  # the executor's words first
        cells.append(name)
    return f"the per-cell time limit ({', '.join(cells)})" if cells else ""


def explain(result, notes, note, autograded_notebook):
    """The report message for `result` (its results.Notes, the intake's `note`): why the
    submission scored what it did, most important first: what a person must look at (the
    flags, a run without a sandbox) before anything her notebook's errors make long (her
    failed tests' slips pushed the flags past the message's 1,000 characters: the sixty-ninth
    hub tester's)."""
    parts = []
    if notes.flags:
        parts.append(
            "FLAGGED for review: "
            + "; ".join(notes.flags[:4])
            + (f" (+{len(notes.flags) - 4} more)" if len(notes.flags) > 4 else "")
        )
    if notes.isolated is False:
        parts.append("NOT ISOLATED (graded without a sandbox: LM10_GRADE_WITHOUT_ISOLATION=1)")
    parts += [note] if note else []
    if result.status in ("graded", "flagged"):
        failed = failures(autograded_notebook)
        if notes.stopped:
            parts.append(f"stopped {notes.stopped}")
        timed = notes.timed_out_cells
        if timed:
            parts.append(
                f"cell{'s' if len(timed) > 1 else ''} {', '.join(timed)} stopped "
                "after the per-cell time limit"
            )
        if failed:
            grade_id, reason, _ = failed[0]
            more = f" (+{len(failed) - 1} more failed)" if len(failed) > 1 else ""
            parts.append(f"first failure {grade_id}: {reason}{more}")
            named = [f"{g}: {' / '.join(found)}" for g, _, found in failed if found]
            if named:
                parts.append("likely slips: " + "; ".join(named))
        elif result.score < result.max_score and not failed:
            parts.append("all autograded tests passed; the rest is graded by hand")
        if notes.stderr:
            parts.append(f"stderr (not penalised) in {', '.join(notes.stderr[:3])}")
    elif result.message:
        parts.append(result.message)
    return " ".join(plain(" | ".join(parts)).split())[:1000]


def write_report(path, results):
    """Merge `results` into the CSV at `path`: their rows replace the students' old ones."""
    names = [f.name for f in fields(Result)]
    rows = {}
    if path.is_file():
        with open(path, newline="") as handle:
            for row in csvout.DictReader(handle):
                if row.get("student"):
                    rows[row["student"]] = [row.get(name, "") for name in names]
    for r in results:
        student = plain(r.student)  # as the file holds it
        rows[student] = [round(r.seconds, 1) if f == "seconds" else getattr(r, f) for f in names]
    scratch = path.with_suffix(".csv.tmp")
    csvout.write(scratch, [names] + [rows[student] for student in sorted(rows)])
    scratch.replace(path)


def write_batch(path, lab, **record):
    """The batch's own record beside the report (its wall time and workers, for the class
    report: grading/instructor/class_report.py); each batch replaces the last one's."""
    record = {"lab": lab, **record, "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    scratch = path.with_suffix(".json.tmp")
    scratch.write_text(json.dumps(record, indent=1) + "\n")
    scratch.replace(path)


def progress(done, total, result, stream=sys.stderr):
    width = 20
    bar = "#" * (width * done // total) + "-" * (width - width * done // total)
    print(
        f"[{bar}] {done}/{total} {plain(result.student)}: {result.status} ({result.seconds:.0f} s)",
        file=stream,
        flush=True,
    )
