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
a `course_copy`, with `python AUTOGRADE...` run in its grading folder or grading.autograde.
"""

import copy
import shutil
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
COURSE_CONFIG = ("nbgrader_config.py", "jupyter_server_config.py", "jupyter-data")
# `make autograde`'s command, as arguments of python run in a course copy's grading folder
AUTOGRADE = ("-m", "grading.autograde", "--grading", ".")


def course_copy(root, labs=None):
    """A course in `root` as a clone of this repository holds it for grading: grading/ with the
    course's configuration (COURSE_CONFIG; the grading code is the installed package
    `grading`) and solutions/ with every lab, or only `labs`. Returns root/grading."""
    grading = Path(root) / "grading"
    grading.mkdir(parents=True, exist_ok=True)
    for name in COURSE_CONFIG:
        source = ROOT / "grading" / name
        if source.is_dir():
            shutil.copytree(source, grading / name)
        else:
            shutil.copy(source, grading / name)
    for lab in labs or sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir()):
        shutil.copytree(ROOT / "solutions" / lab, Path(root) / "solutions" / lab)
    return grading


def nbgrader_meta(cell):
    """The cell's nbgrader metadata (an empty dict for cells nbgrader does not track)."""
    return cell.get("metadata", {}).get("nbgrader", {})


def answer_cells(nb):
    """Answer (solution) cells of a notebook by grade_id."""
    return {nbgrader_meta(c)["grade_id"]: c for c in nb.cells if nbgrader_meta(c).get("solution")}


def solution_answers(lab, root=ROOT):
    """Source of every answer cell of the lab's solution notebook, by grade_id."""
    nb = nbformat.read(root / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    return {grade_id: cell.source for grade_id, cell in answer_cells(nb).items()}


def fill(nb, answers):
    """A copy of `nb` whose answer cells named in `answers` (grade_id -> source) are replaced."""
    nb = copy.deepcopy(nb)
    cells = answer_cells(nb)
    unknown = sorted(set(answers) - set(cells))
    if unknown:
        raise ValueError(f"no answer cells {unknown} in the notebook; it has {sorted(cells)}")
    for grade_id, source in answers.items():
        cells[grade_id].source = source
    return nb


def replaced(source, old, new):
    """`source` with `old` replaced by `new`; AssertionError if the solution no longer holds
    `old` (update the case)."""
    assert old in source, f"the solution no longer contains {old!r}: update this case"
    return source.replace(old, new)
