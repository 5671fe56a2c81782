"""Feedback after a hidden input names no slip of its own choosing
(grading/host/course_preprocessors.py: StripHiddenTests, with_slips). Fast: no sandbox, no kernel;
the part's real catalogue (lmcourse/data), the grader's real preprocessor on a graded test cell."""

import json

from lmcourse import slips
from nbformat.v4 import new_code_cell, new_notebook, new_output

from grading.host.course_preprocessors import HIDDEN_MESSAGE, HIDDEN_SLIPS, StripHiddenTests

PART = "l1_test_gpt2_block"
SOURCE = "\n".join(
    [
        "# Tests for gpt2_block (locked).",
        "check_block(768)",
        "### BEGIN HIDDEN TESTS",
        "check_block(64)",
        "### END HIDDEN TESTS",
    ]
)


def locked_cell(source):
    """A locked test cell of the part, as nbgrader releases it."""
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {
        "grade": True,
        "solution": False,
        "locked": True,
        "grade_id": PART,
        "points": 2,
    }
    return cell


def feedback_of(message, line):
    """What the student reads of a test cell that failed at `line` with `message`: its source
    and its outputs."""
    cell = locked_cell(SOURCE)
    trace = [f"Cell In[7], line {line}\n----> {line} check_block(64)", f"AssertionError: {message}"]
    cell.outputs = [new_output("error", ename="AssertionError", evalue=message, traceback=trace)]
    nb, _ = StripHiddenTests().preprocess(new_notebook(cells=[cell]), {})
    (graded,) = nb.cells
    return graded.source, json.dumps(graded.outputs, sort_keys=True)


def catalogue():
    known = sorted(slips.sentences(PART))
    assert len(known) >= 2, f"{PART} should have several catalogued slips: {known}"
    return known


def test_a_hidden_failure_reads_the_same_whichever_slip_the_answer_made():
    """Which slip a hidden test's message named was chosen by code that had seen the hidden
    input: the student reads the same page for each slip, for two at once and for none, and it
    lists every slip of the part."""
    known = catalogue()
    wrong = "gpt2_block(64) = 49,600, transformers: 49,984"
    pages = {
        feedback_of(wrong + extra, line=4)
        for extra in ["", *(slips.line([s]) for s in known), slips.line(known[:2])]
    }
    assert len(pages) == 1, "the feedback differs with the slip a hidden test named"
    ((source, outputs),) = pages
    listed = "".join(f"\n- {s}" for s in known)
    assert json.loads(outputs)[0]["evalue"] == f"{HIDDEN_MESSAGE}\n{HIDDEN_SLIPS}{listed}"
    assert "check_block(64)" not in source + outputs
    assert slips.PREFIX not in outputs and "49,600" not in outputs


def test_a_visible_failure_keeps_the_slip_it_named():
    known = catalogue()
    message = "gpt2_block(768) = 7,080,960, transformers: 7,087,872" + slips.line(known[:1])
    _, outputs = feedback_of(message, line=2)
    assert json.loads(outputs)[0]["evalue"] == message
    assert HIDDEN_SLIPS not in outputs


def test_the_graders_stop_at_a_hidden_line_shows_none_of_its_lines():
    """The grader's own stop (a test call past its time: marked "stopped") kept its whole
    traceback in feedback: the hidden lines IPython shows around the one that ran (a hidden
    line under 12 characters is not a quote the page's scrub removes: `d = 96`) and which
    hidden line her code was stopped at (her code chooses the call it loops on: a choice made
    after it met the hidden inputs, as the twenty-fourth hub tester played it). The grader's
    words are kept, with nothing of the hidden lines."""
    source = "\n".join(
        ["check_block(768)", "### BEGIN HIDDEN TESTS", "d = 96", "check_block(d)", "x = 1"]
        + ["### END HIDDEN TESTS"]
    )
    cell = locked_cell(source)
    words = "the grader stopped this test after 40 s (does your code loop forever?)"
    frame = "Cell In[1], line 4\n" + "\n".join(
        ["   2 ### BEGIN HIDDEN TESTS", "   3 d = 96", "---> 4 check_block(d)", "   5 x = 1"]
    )
    trace = ["-" * 75, "CellTimeoutError   Traceback (most recent call last)", frame]
    cell.outputs = [
        new_output("error", ename="CellTimeoutError", evalue=words, traceback=trace + [words])
    ]
    cell.metadata["lm10_feedback"] = {"stdout": 0, "error": False, "stopped": True}
    nb = new_notebook(cells=[cell], metadata={"lm10": {"feedback": "marked"}})
    nb, _ = StripHiddenTests().preprocess(nb, {})
    (output,) = nb.cells[0].outputs
    assert (output.ename, output.evalue) == ("CellTimeoutError", words)
    shown = json.dumps(output)
    assert "d = 96" not in shown and "line 4" not in shown and "x = 1" not in shown, shown
