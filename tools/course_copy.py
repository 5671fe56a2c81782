"""A scratch course to grade in, and the answer cells of a lab's notebooks, by grade_id.

The grading round trips of the tests (tests/test_labs.py, tests/lab_cases) and the grading
benchmarks (benchmarks/autograde.py, benchmarks/hub_sizing.py) grade in a copy of the course made
here, with `make autograde`'s command (AUTOGRADE), and build submissions with `fill`.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
COURSE_CONFIG = (
    "nbgrader_config.py",
    "jupyter_config.py",
    "jupyter_server_config.py",
    "jupyter-data",
    "labconfig",
)
# `make autograde`'s command, as arguments of python run in a course copy's grading folder
AUTOGRADE = ("-m", "grading.batch.autograde", "--grading", ".")


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
