"""Which graded submissions the batch grades again, alone (grading/batch/report.py,
`machine_limit`): those whose errors name a limit the kernel counts for the grader's uid as a
whole, which a submission graded beside it may have taken (the eighteenth hub tester), and
(`out_of_time`) those that ran out of time, which a classmate's memory may have caused (the
twenty-second). The batch that does it is played in tests/test_grading_hostile.py (a2pass,
hardloop, loop); these read the words."""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from grading.batch.report import machine_limit, out_of_time
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
            "l2_attention: the kernel failed: OSError: [Errno 28] No space left on device",
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
        ("error", Notes(stopped="a grader cell: no time left for this test"), ""),
    ],
)
def test_what_ran_out_of_time_is_named(status, notes, words):
    assert out_of_time(Result("bob", status), notes) == words
