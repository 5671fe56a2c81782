"""Build the student edition of the course: everything a student receives, and nothing else.

    python tools/student_edition.py [--out build/student-edition]

writes OUT/lm10/ and the same folder as OUT/lm10.tar.gz:

    README.md, Makefile      the student's (grading/student/): `make lab` and the order of work
    START.ipynb              the same README as a notebook, the page `make lab` opens first
    setup.mk                 the environment set-up the course's own Makefile uses
    jupyter-config/          JupyterLab without the instructor's nbgrader panels
    pyproject.toml, environment.yml
    lessons/                 every lesson, with its stored outputs
    labs/                    the released labs: stubs and visible tests only
    lib/lmcourse/            the course library (with the tiny GPT's trained weights)

and never solutions/, grading/, tools/, tests/, benchmarks/, a gradebook or a submission. Before it
writes the archive it scans every file for nbgrader's solution and hidden-test markers and for
the text of every solution and hidden test in solutions/, and refuses to finish if any is found.
It refuses too if any file holds a slip rule (grading/slips/: formulas that compute
near-answers): the library's lmcourse.slips only looks up what each slip gives on the visible
tests' inputs, in its tables (lib/lmcourse/data/slips-l<n>.json), the one place a slip's
sentence may appear. Instructors keep the repository; students get the archive.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "grading" / "student"
NAME = "lm10"
FROM_STUDENT = ("README.md", "Makefile", "jupyter-config")  # grading/student/ -> edition root
FROM_COURSE = ("setup.mk", "pyproject.toml", "environment.yml", "lessons", "labs", "lib")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints")
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
MIN_LINE = 12  # characters: shorter lines of a solution ("return x", "pass") are too common


def _lines(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines()}


def _notebook_text(path: Path) -> str:
    """The cells' sources of a notebook, one after another (not its JSON escapes)."""
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])


def secret_lines(root: Path = ROOT) -> set[str]:
    """Lines of code that appear in the lab sources only between solution or hidden-test markers:
    never outside them, nor in the lessons or the library, whose code is public by design."""
    inside, public = set(), set()
    for path in sorted((root / "solutions").glob("*/*.ipynb")):
        within = False
        for line in _notebook_text(path).splitlines():
            stripped = line.strip()
            if any(marker in stripped for marker in MARKERS):
                within = "BEGIN" in stripped
            elif within:
                inside.add(stripped)
            else:
                public.add(stripped)
    for path in sorted((root / "lessons").glob("*.ipynb")):
        public |= _lines(_notebook_text(path))
    for path in sorted((root / "lib").rglob("*.py")):
        public |= _lines(path.read_text())
    return {line for line in inside - public if len(line) >= MIN_LINE and not line.startswith("#")}


def leaks(folder: Path, secrets: set[str]) -> list[str]:
    """'path: what' for every file under folder holding a marker or a secret line."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        try:
            text = _notebook_text(path) if path.suffix == ".ipynb" else path.read_text()
        except UnicodeDecodeError:
            continue  # weights and other binary data
        what = [m for m in MARKERS if m in text] + sorted(_lines(text) & secrets)[:3]
        if what:
            found.append(f"{path.relative_to(folder)}: {what}")
    return found


def slip_rules():
    """{sentence: module} of every slip rule (grading/slips/l<n>.py): the course repository's."""
    from grading import slips

    return {
        sentence: lab.__name__
        for lab in slips.LABS.values()
        for rules in lab.PARTS.values()
        for sentence in rules
    }


def rule_leaks(folder: Path) -> list[str]:
    """'path: what' for every file under folder that holds a slip rule: a file other than the
    library's slip tables that holds a rule's sentence (the rule modules pair each with its
    formula), or a lambda in a shipped slips module (the rules' own form)."""
    sentences, found = slip_rules(), []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = str(path.relative_to(folder))
        if path.parent.name == "data" and path.name.startswith("slips-"):
            continue  # the tables: each sentence beside data, never beside a formula
        try:
            text = _notebook_text(path) if path.suffix == ".ipynb" else path.read_text()
        except UnicodeDecodeError:
            continue
        held = sorted({sentences[s] for s in sentences if s in text})
        if held:
            found.append(f"{name}: the sentences of {held}")
        if path.suffix == ".py" and path.stem == "slips":
            tree = ast.parse(text)
            if any(isinstance(n, ast.Lambda) for n in ast.walk(tree)):
                found.append(f"{name}: a lambda in the slips module")
    return found


def write_start_page(readme: Path, target: Path) -> None:
    """The README as a one-cell Markdown notebook: JupyterLab renders it, links and all, where
    it would open a .md file in a text editor. Its metadata is the lessons': JupyterLab writes
    the kernel's language_info into a notebook it opens, so a shorter one made the page
    "modified" the moment it opened."""
    lesson = json.loads(next(iter(sorted((ROOT / "lessons").glob("*.ipynb")))).read_text())
    notebook = {
        "cells": [
            {
                "cell_type": "markdown",
                "id": "start",
                "metadata": {},
                "source": readme.read_text().splitlines(keepends=True),
            }
        ],
        "metadata": {key: lesson["metadata"][key] for key in ("kernelspec", "language_info")},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    target.write_text(json.dumps(notebook, indent=1) + "\n")


def build(out: Path) -> Path:
    """Write out/lm10/ and out/lm10.tar.gz; return the archive's path."""
    edition = out / NAME
    if edition.exists():
        shutil.rmtree(edition)
    edition.mkdir(parents=True)
    for folder, names in ((STUDENT, FROM_STUDENT), (ROOT, FROM_COURSE)):
        for name in names:
            source, target = folder / name, edition / name
            if source.is_dir():
                shutil.copytree(source, target, ignore=SKIP)
            else:
                shutil.copy2(source, target)
    write_start_page(edition / "README.md", edition / "START.ipynb")
    found = leaks(edition, secret_lines()) + rule_leaks(edition)
    if found:
        shutil.rmtree(edition)
        raise SystemExit(
            "the student edition would contain solutions, hidden tests or slip rules:\n  "
            + "\n  ".join(found)
        )
    archive = out / f"{NAME}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(edition, arcname=NAME)
    return archive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "build" / "student-edition",
        help="folder to write lm10/ and lm10.tar.gz into (default: build/student-edition)",
    )
    archive = build(parser.parse_args().out)
    print(f"student edition: {archive.with_suffix('').with_suffix('')}/ and {archive}")


if __name__ == "__main__":
    main()
