"""Which graded submissions the batch grades again, alone (grading/batch/report.py,
`machine_limit`): those whose errors name a limit the kernel counts for the grader's uid as a
whole, which a submission graded beside it may have taken (the eighteenth hub tester), and
(`out_of_time`) those that ran out of time, which a classmate's memory may have caused (the
twenty-second). The batch that does it is played in tests/test_grading_hostile.py (a2pass,
hardloop, loop); these read the words."""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from grading.batch.report import explain, machine_limit, out_of_time
from grading.batch.results import Notes, Result


def autograded(tmp_path, *errors):
    """An autograded notebook whose one code cell has these (ename, evalue) errors."""
    outputs = [new_output("error", ename=n, evalue=v, traceback=[]) for n, v in errors]
    path = tmp_path / "LM10-L2.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1", outputs=outputs)]), path)
    return path


@pytest.mark.parametrize(
    "stopped, message, errors, words",
    [
        # the classmate of the eighteenth tester's table: the kernel could add no epoll watch
        (
            "l2_attention: the kernel failed (OSError: [Errno 28] No space left on device)",
            "",
            [],
            "[Errno 28] No space left on device",
        ),
        # an answer cell that passed a descriptor while a classmate held them all
        ("", "", [("OSError", "[Errno 109] Too many references")], "[Errno 109] Too many refer"),
        # the executor died on libzmq's assertion, which prints strerror alone
        (
            "",
            "the sandbox returned no executed notebook (exit status -6; last line it printed: "
            "'No space left on device (src/epoll.cpp:73)')",
            [],
            "No space left on device",
        ),
        (
            "",
            "",
            [("BlockingIOError", "[Errno 11] Resource temporarily unavailable")],
            "[Errno 11]",
        ),
        ("", "", [("OSError", "[Errno 24] Too many open files")], "[Errno 24] Too many open"),
        # an allocation refused where the machine does not overcommit: hers may have caused it
        ("", "", [("MemoryError", "")], "MemoryError"),
        # numpy's words for it
        (
            "",
            "",
            [("_ArrayMemoryError", "Unable to allocate 8.00 GiB for an array with shape (2**30,)")],
            "MemoryError",
        ),
        # the OOM killer, woken by a classmate's processes, took this one's kernel or executor
        (
            "l2_serving: the kernel died while it ran (os._exit, a crash, or it ran out of memory)",
            "",
            [],
            "the kernel died",
        ),
        (
            "",
            "no executed notebook: the grader's executor in the sandbox was stopped by signal 9, "
            "before the notebook was done (a process of the submission can kill it)",
            [],
            "stopped by signal 9",
        ),
        # the OOM killer took the sandbox's init (the lab's modules imported: as large as the
        # kernel), or bubblewrap, as the twenty-first tester played it with SIGKILL
        (
            "",
            "grading.host.course_preprocessors.SandboxError: the sandbox returned no executed "
            "notebook (exit status 0; last line it printed: '[Kernel] WARNING | Config option "
            "`connection_file` not recognized by `Shell`.')",
            [],
            "the sandbox returned no executed notebook",
        ),
        (
            "",
            "grading.host.course_preprocessors.SandboxError: the sandbox returned no executed "
            "notebook (exit status -9; last line it printed: '(nothing)')",
            [],
            "the sandbox returned no executed notebook",
        ),
        # ... the trusted test process, which decodes the student's replies outside the sandbox
        (
            "",
            "grading.host.trusted_tests.GraderError: the trusted test process failed after 3 s: "
            "EOFError:  (it wrote nothing)",
            [],
            "the trusted test process failed",
        ),
        # ... or the grader process (workers.Worker.ask)
        ("", "the grader process died (silently)", [], "the grader process died"),
    ],
)
def test_a_limit_of_the_graders_uid_is_found(tmp_path, stopped, message, errors, words):
    result = Result("bob", "graded", message=message)
    assert words in machine_limit(result, Notes(stopped=stopped), autograded(tmp_path, *errors))


@pytest.mark.parametrize(
    "stopped, errors",
    [
        ("", [("AssertionError", "expected 42, got 41")]),
        ("", [("NameError", "name 'attention' is not defined")]),
        ("l2_flops: it ran past 40 s and ignored the interrupt", []),
        (
            "",
            [("RuntimeError", "the executor was stopped by signal 90")],
        ),  # her own address space (RLIMIT_AS is per process)
        ("", [("FileNotFoundError", "[Errno 2] No such file or directory: 'x'")]),
        ("", [("OSError", "[Errno 1090] not an errno of the list")]),
    ],
)
def test_her_own_failures_are_not_graded_again(tmp_path, stopped, errors):
    result = Result("bob", "graded")
    assert machine_limit(result, Notes(stopped=stopped), autograded(tmp_path, *errors)) == ""


def test_a_submission_without_an_autograded_notebook_is_read_from_its_message(tmp_path):
    result = Result("bob", "error", message="OSError: [Errno 24] Too many open files")
    assert machine_limit(result, Notes(), tmp_path / "none.ipynb").startswith("[Errno 24]")
    assert machine_limit(Result("bob", "error", message="NotJSONError"), Notes(), tmp_path) == ""


@pytest.mark.parametrize(
    "status, notes, words",
    [
        # a classmate's memory, held short of the OOM killer, slowed a cell past its limit
        ("graded", Notes(timed_out_cells=["l2_flops"]), "the per-cell time limit (l2_flops)"),
        # ... or slowed a cell that then ignored the interrupt and was stopped
        (
            "graded",
            Notes(stopped="l2_serving: it ran past 40 s and ignored the interrupt"),
            "the per-cell time limit (l2_serving)",
        ),
        (
            "graded",
            Notes(
                timed_out_cells=["l2_flops", "l2_serving"],
                stopped="l2_serving: it ran past 40 s and ignored the interrupt",
            ),
            "the per-cell time limit (l2_flops, l2_serving)",
        ),
        # ... or the whole submission past --timeout
        ("timeout", Notes(timeout=True), "the time limit of the whole submission"),
        ("timeout", Notes(), "the time limit of the whole submission"),
        # what is not time: graded again only if machine_limit names it
        ("graded", Notes(), ""),
        ("graded", Notes(stopped="l2_serving: the kernel died while it ran"), ""),
        # her own words in a failed kernel's error, which the report quotes: not the executor's
        (
            "graded",
            Notes(stopped="answer: the kernel failed (AttributeError: it ran past 40 s)"),
            "",
        ),
        ("error", Notes(stopped="a grader cell: no time left for this test"), ""),
    ],
)
def test_what_ran_out_of_time_is_named(status, notes, words):
    assert out_of_time(Result("bob", status), notes) == words


# The log of a real locked gradebook, as nbgrader's autograde wrote it (its last lines)
REAL_LOCK = """[AutogradeApp | ERROR] There was an error accessing the nbgrader database.
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/sqlalchemy/engine/default.py", line 1192, in do_execute
    cursor.execute(statement, parameters)
sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) database is locked
[SQL: SELECT name FROM sqlite_master WHERE type='table' ORDER BY name]
(Background on this error at: https://sqlalche.me/e/21/e3q8)

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/nbgrader/converters/base.py", line 419, in convert
    raise NbGraderException(msg)
nbgrader.converters.base.NbGraderException: There was an error accessing the nbgrader database.
"""
# Her words in the log: a grade id of her notebook nbgrader warns about, then the last line her
# kernel printed, which the grader quotes when the sandbox returns no notebook (her outputs
# past the largest message the sandbox may send back)
HERS = """[AutogradeApp | WARNING] Cell 'database is locked' does not exist in the database
[AutogradeApp | ERROR] There was an error processing assignment: LM10-L2
Traceback (most recent call last):
  File "/work/main/grading/host/course_preprocessors.py", line 496, in preprocess
    raise SandboxError(
grading.host.course_preprocessors.SandboxError: the sandbox returned no executed notebook (exit \
status 0; last line it printed: 'database is locked')
"""


class Replies:
    """A worker that gives the same reply to every request, counting them."""

    def __init__(self, log):
        self.log, self.asked, self.process = log, 0, object()

    def ask(self, student, wait):
        self.asked += 1
        return {"success": False, "log": self.log, "notes": Notes().to_json()}


@pytest.mark.parametrize("log, asked", [(REAL_LOCK, 6), (HERS, 1)])
def test_only_the_gradebooks_lock_is_retried(monkeypatch, log, asked):
    """A submission whose log held the words "database is locked" anywhere was graded again
    (--retries, 5), each run up to --timeout: her notebook printed them, then sent back more
    than the sandbox may (the twenty-third hub tester's table, grading/JUPYTERHUB.md), and one
    row took 6 times the time the batch allows a submission. Only the lock in the exception
    line of the log's last traceback is retried now."""
    from grading.batch import workers

    monkeypatch.setattr(workers.time, "sleep", lambda seconds: None)
    worker = Replies(log)
    result, _ = workers.run_nbgrader(worker, "LM10-L2", "mallory", 900, 5)
    assert (worker.asked, result.attempts, result.status) == (asked, asked, "error"), result
    if asked == 1:
        assert "SandboxError: the sandbox returned no executed notebook" in result.message


def test_her_failed_tests_never_push_the_flags_out_of_the_message(tmp_path):
    """The report's message is cut at 1,000 characters, and the flags came last: her failed
    tests' errors, each naming every catalogued slip of its part (her message's lines, which
    `slips.named` reads), filled it first, and a flagged row said nothing of why (the
    sixty-ninth hub tester's). The flags and a run without a sandbox now come first."""
    from lmcourse import slips

    cells = []
    for part in sorted(p for p in slips._catalogued() if slips.sentences(p)):
        text = "wrong\n" + "\n".join(slips.PREFIX + s for s in sorted(slips.sentences(part)))
        cell = new_code_cell(
            "check()",
            outputs=[new_output("error", ename="AssertionError", evalue=text, traceback=[])],
        )
        cell.metadata["nbgrader"] = {
            "grade": True,
            "grade_id": part,
            "points": 1,
            "solution": False,
            "locked": True,
        }
        cells.append(cell)
    path = tmp_path / "LM10-L2.ipynb"
    nbformat.write(new_notebook(cells=cells), path)
    flags = ["calls the declared reference by a computed name", "asked the copies for more"]
    notes = Notes(flags=flags, isolated=False)
    message = explain(Result("mallory", "flagged", max_score=len(cells)), notes, "", path)
    assert "likely slips" in message and len(message) == 1000, message  # her slips fill it
    assert message.startswith("FLAGGED for review: " + "; ".join(flags)), message[:300]
    assert "NOT ISOLATED" in message, message[:300]


def test_a_graded_notebooks_room_names_are_the_graders_words_only():
    """The names a graded notebook keeps of what her code asked the room's copies for
    (SandboxedExecute writes them; the class report flags from them) are read only as the
    grader writes them, "Kind.name", at most 32: a notebook that says anything else (one an
    autograde left as she wrote it) names nothing."""
    from grading.batch import results

    def kept(value):
        return results.room_missed({"metadata": {"lm10": {"room_missed": value}}})

    names = ["LlamaConfig.get_mtp_config", "LlamaConfig.dataclasses.replace"]
    assert kept(names) == names and len(kept(names * 40)) == 32
    for hers in (["LlamaConfig.x", "<b>graded</b>"], ["a" * 200 + ".b"], "LlamaConfig.x", [1]):
        assert kept(hers) == [], hers
    assert results.room_missed({}) == [] and results.room_missed({"metadata": {"lm10": 1}}) == []
