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


def feedback_of(message, line):
    """What the student reads of a test cell that failed at `line` with `message`: its source
    and its outputs."""
    cell = new_code_cell(SOURCE)
    cell.metadata["nbgrader"] = {
        "grade": True,
        "solution": False,
        "locked": True,
        "grade_id": PART,
        "points": 2,
    }
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
