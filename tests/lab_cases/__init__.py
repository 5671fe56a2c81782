"""Submissions that the grading round trip (tests/test_labs.py) autogrades for every lab.

Lab LM10-L<n> (source solutions/LM10-L<n>/LM10-L<n>.ipynb) has a module
tests/lab_cases/l<n>.py that defines five functions. Each takes the RELEASED student notebook
(an nbformat NotebookNode read from the release, a fresh copy for every call) and returns the
notebook a student would hand in:

    correct(nb)    every answer cell holds a correct answer (the solution source will do:
                   `fill(nb, solution_answers("LM10-L<n>"))`)
                   -> every autograded test cell gets full marks
    mistake(nb)    correct except for one deliberate mistake
                   -> some points, not all (0 < autograded score < autograded maximum)
    hardcoded(nb)  answers that return the values the visible tests expect and nothing else
                   -> every test cell with a `### BEGIN HIDDEN TESTS` region scores 0
    refpatch(nb)   a wrong answer plus a redefinition of a name the setup cell defines and
                   the answer's test compares against (a reference function, an imported
                   module), made to agree with the wrong answer -> flagged, and exactly the
                   scores in expected["refpatch"], those of the wrong answer alone: the
                   grader defines the setup cell's names again before each test

    delegate(nb)   answers that call what the tests compare against (the names a test cell
                   declares "# Off limits while graded: ...", lmcourse.offlimits) instead of
                   computing it -> exactly the scores in expected["delegate"]: those parts 0,
                   with an OffLimitsError naming the reference, in autograding and in
                   Validate; the rest full

and, optionally,

    mistakes(nb)   one common slip per autograded part, each catalogued in lmcourse.slips
                   -> exactly the scores in expected["mistakes"], and, for each grade_id in
                   the module's dict `slips` (grade_id -> sentence), that sentence named in
                   the autograded notebook, the HTML feedback, the autograde report and
                   Validate ("Likely slip: ..."); a slip only a hidden test finds is listed
                   in the set `slips_only_hidden_tests_find` (Validate passes it, the
                   feedback names it under the neutral message)
    alternatives(nb)  correct answers written unlike the model solution (another formula, a
                   loop, another route to the same tensors) -> full marks, like `correct`

and issue 40's three fairness cases, which every lab has (tests/test_labs.py FAIRNESS, and
tests/test_lab_inputs.py runs them without a sandbox first):

    cascade(nb)    a slip in an early part that later parts build on -> only that part
                   loses its points; the later parts' feedback says to fix it first
    combinations(nb)  a slip only a combination of the prompt's axes finds, which only a
                   hidden input tries -> that part loses its points
    numpy(nb)      correct answers given as numpy or torch integers where the prompt asks
                   for a number -> full marks
    (each with its exact scores in `expected`, and in the dict `named`, case -> grade_id ->
    sentence, the slips its feedback must name)

and, optionally, a tuple `more` naming further fairness cases the module defines (an earlier
part that raises or returns a float under a later part that calls it, a later part that keeps
the earlier function under another name, ...), each held to the same rules as the three
above, with its `expected` scores and `named` slips.

and a dict

    expected = {"mistake": {"l<n>_test_<what>": 0.0, ...}, "refpatch": {...}, ...}

exact scores per case and grade_id that the round trip also checks (cells not listed are only
held to the rules above). The round trip changes and adds submissions itself: `correct` is
submitted with its first answer cell duplicated and its last test cell deleted (nbgrader keeps
one copy of a grade_id and puts missing tests back, so still full marks); the blank release is
submitted with every test cell replaced by `pass` (graded on the restored tests: zero); and an
unparseable notebook is submitted beside them (reported as an error, zero, no crash).

Build submissions with `fill` (replace answer cells by grade_id) so a case never depends on
cell positions; written (markdown) answers need no case, they are graded by hand. Grade them in
a `course_copy`, with `python AUTOGRADE...` run in its grading folder or grading.batch.autograde
(`course_copy`, `fill` and the other helpers live in tools/course_copy.py, which the benchmarks
share; they are imported here as before).
"""

from tools.course_copy import (  # noqa: F401 (shared with the benchmarks: tools/course_copy.py)
    AUTOGRADE,
    COURSE_CONFIG,
    ROOT,
    answer_cells,
    course_copy,
    fill,
    nbgrader_meta,
    solution_answers,
)


def replaced(source, old, new):
    """`source` with `old` replaced by `new`; AssertionError if the solution no longer holds
    `old` (update the case)."""
    assert old in source, f"the solution no longer contains {old!r}: update this case"
    return source.replace(old, new)
