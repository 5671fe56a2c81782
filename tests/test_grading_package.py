"""The grading package's own rules (CONTRIBUTING.md, "The grading package's layout" and
"Where each grading rule lives"): every module is in the folder of where it runs and imports as
`grading.<folder>.<module>`, none edits sys.path, the two files that run inside the sandbox
(grading/in_sandbox) never import the package (it is not there; the course library lmcourse
is), and the notes a worker sends the batch are read back only as written."""

import ast
import importlib
import sys
from pathlib import Path

import pytest

from grading.batch.results import Notes

GRADING = Path(__file__).resolve().parents[1] / "grading"
CONFIG_FILES = {"nbgrader_config.py", "jupyter_config.py", "jupyter_server_config.py"}  # by path
# where each runs (CONTRIBUTING.md, "The grading package's layout"); hub/ and slips/ have
# tests of their own
FOLDERS = ("in_sandbox", "host", "batch", "instructor")
MODULES = sorted(
    ".".join(p.relative_to(GRADING).with_suffix("").parts)
    for folder in (GRADING, *(GRADING / f for f in FOLDERS))
    for p in folder.glob("*.py")
    if p.name not in CONFIG_FILES
)
# bound into the sandbox at /opt/grader, where they import each other by their bare names
IN_SANDBOX = ("in_sandbox.sandbox_exec", "in_sandbox.sandbox_agent")


def source(name):
    """The file of module grading.<name> (a dotted name below grading)."""
    return GRADING.joinpath(*name.split(".")).with_suffix(".py")


# what they may import there: the standard library, each other, the kernel's own packages, and
# the course library, mounted read-only (the labs' setup cells import it; the agent's guard of
# off-limits references is lmcourse.offlimits)
KERNEL = {"IPython", "ipykernel", "jupyter_client", "jupyter_core", "nbclient", "nbformat"}
KERNEL |= {"traitlets"}  # ipykernel's configuration (the executor sets the kernel's classes)
KERNEL |= {"lmcourse"}
# and torch, which every lab's room holds: the agent rebuilds a room's transformers modules as
# torch modules that hold their weights (grading/host/room.py)
KERNEL |= {"torch"}
# and matplotlib, whose fonts the executor finds once before any notebook (sandbox_exec.serve):
# a kernel that built them during a graded call ran fc-list, a program that stopped the call
KERNEL |= {"matplotlib"}


def imported(path):
    """Top-level module names that `path` imports, anywhere in it."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("name", MODULES)
def test_every_module_imports_from_the_package(name):
    module = importlib.import_module(f"grading.{name}")
    assert Path(module.__file__).resolve() == source(name)


@pytest.mark.parametrize("name", [*MODULES, *sorted(CONFIG_FILES)])
def test_no_module_edits_sys_path(name):
    path = GRADING / name if name.endswith(".py") else source(name)
    tree = ast.parse(path.read_text())
    touched = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    ]
    assert not touched, f"{path.name} uses sys.path at line(s) {touched}: import grading.<module>"


@pytest.mark.parametrize("name", IN_SANDBOX)
def test_what_runs_in_the_sandbox_imports_no_grading_module(name):
    bare = {n.rpartition(".")[2] for n in IN_SANDBOX}
    allowed = set(sys.stdlib_module_names) | bare | KERNEL
    outside = imported(source(name)) - allowed
    assert not outside, f"{name}.py imports {sorted(outside)}: the sandbox runs it as a file"


def test_every_module_is_in_the_folder_of_where_it_runs():
    """grading/ itself holds the package's __init__ and the two configuration files; every
    module is in a folder (CONTRIBUTING.md, "The grading package's layout")."""
    assert {p.name for p in GRADING.glob("*.py")} == {"__init__.py", *CONFIG_FILES}
    packages = {p.parent.name for p in GRADING.glob("*/__init__.py")}
    assert packages == {*FOLDERS, "hub", "slips"}, packages


def test_the_sandbox_binds_the_files_of_in_sandbox():
    """What runs inside the sandbox is the folder grading/in_sandbox: the two files the
    sandbox binds, and nothing else there."""
    from grading.host import sandbox

    inside = GRADING / "in_sandbox"
    assert {sandbox.EXECUTOR, sandbox.AGENT} == {source(n) for n in IN_SANDBOX}
    assert {p.name for p in inside.glob("*.py")} == {
        "__init__.py",
        "sandbox_exec.py",
        "sandbox_agent.py",
    }


def test_notes_travel_as_written():
    notes = Notes(flags=["uses os.system"], isolated=True, stopped="l2_x: timed out")
    notes.stderr.append("l2_attention")
    assert Notes.from_json(notes.to_json()) == notes
    assert Notes.from_json({}) == Notes()


@pytest.mark.parametrize(
    "data, word",
    [
        (["not", "a", "dict"], "JSON object"),
        ({"score": 10}, "unknown notes fields: score"),
        ({"flags": "not a list"}, "lists of strings"),
        ({"stderr": [1]}, "lists of strings"),
        ({"isolated": "yes"}, "isolated"),
        ({"timeout": 900}, "timeout a boolean"),
        ({"stopped": None}, "stopped must be a string"),
    ],
)
def test_notes_not_as_written_are_refused(data, word):
    with pytest.raises(ValueError, match=word):
        Notes.from_json(data)
