"""Who may import whom, over the whole tree, read from the source (ast) without importing it.

The course's Python is five top-level parts: the library `lmcourse` (lib/lmcourse), the grading
package `grading`, the course's `tools`, the `benchmarks` and the `tests`. The rules:

- lmcourse imports none of the others (students' kernels and the sandbox hold lmcourse alone);
- grading imports neither the tests, nor the benchmarks, nor the tools;
- what runs inside the sandbox (grading/in_sandbox/sandbox_exec.py,
  grading/in_sandbox/sandbox_agent.py) imports no other grading module: the sandbox holds those two
  files, not the package;
- benchmarks and tools import no test module (tests/**/test_*.py, a conftest.py): what they
  share with the tests lives in a module that is not a test (tools/course_copy.py, the lab cases
  of tests/lab_cases, tests/lib/parity_cases.py);
- a test module imports no other test module: shared fixtures and helpers live in a conftest or
  a helper module (a name that does not start with test_);
- no import cycle among lmcourse's modules (imports inside functions included), nor among the
  imports that run when any module of the course is imported.

An import is an edge to the module it names, read anywhere in a file (inside functions too);
`from package import name` is an edge to the submodule `package.name` where one exists, else to
the package (so the family registry's `from . import llama` is an edge to the family, not a
cycle through lmcourse.families). A bare name resolves as Python would here: a module beside the
file (the sandbox's two files import each other so; pytest puts a test's folder on sys.path),
then tests/ (pytest's rootdir conftest and `sys.path.insert(0, "tests")`), then the tree's
top-level parts.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = {"lmcourse": ROOT / "lib" / "lmcourse"} | {
    name: ROOT / name for name in ("grading", "tools", "benchmarks", "tests")
}
# nbgrader's data inside grading/ (students' work, generated reports): not the course's code
NOT_CODE = {"submitted", "autograded", "feedback", "reports", "exports", "exchange", "jupyter-data"}
IN_SANDBOX = {"grading.in_sandbox.sandbox_exec", "grading.in_sandbox.sandbox_agent"}


def module_name(path: Path) -> str:
    for part, folder in PARTS.items():
        if folder in path.parents:
            rest = path.relative_to(folder).with_suffix("").parts
            rest = rest[:-1] if rest[-1] == "__init__" else rest
            return ".".join((part, *rest))
    raise ValueError(f"{path} is in none of {sorted(PARTS)}")


@cache
def modules() -> dict[str, Path]:
    """Every module of the five parts, by dotted name."""
    found = {}
    for folder in PARTS.values():
        for path in folder.rglob("*.py"):
            inside = path.relative_to(folder).parts
            if "__pycache__" in inside or NOT_CODE & set(inside):
                continue
            found[module_name(path)] = path
    return found


def is_test(name: str) -> bool:
    """A test module: tests/**/test_*.py."""
    return name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")


def is_conftest(name: str) -> bool:
    return name.startswith("tests.") and name.rsplit(".", 1)[-1] == "conftest"


def _resolve(dotted: str, here: str, package: bool) -> str | None:
    """The course module a bare `import dotted` names from module `here`, or None (not ours)."""
    known = modules()
    folder = here if package else here.rpartition(".")[0]
    for prefix in (folder, "tests", ""):
        candidate = f"{prefix}.{dotted}" if prefix else dotted
        if candidate in known or any(m.startswith(f"{candidate}.") for m in known):
            return candidate  # a module, or a folder of modules (tools/ has no __init__)
    return None


def _statements(tree, on_import: bool):
    """Every node of `tree`; with on_import, only those run when the module is imported (not
    the bodies of functions)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not (on_import and isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)):
                todo.append(child)


def imports(name: str, on_import: bool = False) -> set[str]:
    """The course modules that module `name` imports, anywhere in its file (on_import: only
    where importing the module runs the import)."""
    known, path = modules(), modules()[name]
    package = path.name == "__init__.py"
    found = set()
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in _statements(tree, on_import):
        if isinstance(node, ast.Import):
            targets = [_resolve(alias.name, name, package) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the file's package, up level - 1 packages
                base = name if package else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                start = f"{base}.{node.module}" if node.module else base
                start = start if start in known else None
            else:
                start = _resolve(node.module, name, package)
            if start is None:
                continue
            targets = [
                f"{start}.{alias.name}" if f"{start}.{alias.name}" in known else start
                for alias in node.names
            ]
        else:
            continue
        found |= {t for t in targets if t and t != name}
    return found


@cache
def graph(on_import: bool = False) -> dict[str, frozenset[str]]:
    return {name: frozenset(imports(name, on_import)) for name in modules()}


def part(name: str) -> str:
    return name.split(".")[0]


def broken(rule) -> list[str]:
    """'importer -> imported' for every edge of the graph that `rule(importer, imported)`
    refuses."""
    return sorted(f"{a} -> {b}" for a, edges in graph().items() for b in edges if not rule(a, b))


def cycles(edges: dict[str, frozenset[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module, or a module importing itself
    (Tarjan's algorithm, iterative)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(start):
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges.get(node, ()):
                    found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_reader_sees_the_edges_it_must():
    """Positive controls: each way of importing that the rules depend on is read as an edge."""
    edges = graph()
    assert {"lmcourse.families.llama", "lmcourse.families.base"} <= edges[
        "lmcourse.families.qwen3_moe"
    ], "relative imports (from . import llama; from .base import ...)"
    assert "lmcourse.count" in edges["lmcourse.zoo"], "from .count import describe"
    assert "grading.in_sandbox.sandbox_exec" in edges["grading.host.sandbox"], (
        "from grading.in_sandbox import sandbox_exec"
    )
    # a bare sibling (`import sandbox_agent` in grading/in_sandbox/, as the sandbox's kernel
    # imports it: no module of the tree imports one since sandbox_exec stopped, 823e2fd)
    assert (
        _resolve("sandbox_agent", "grading.in_sandbox.sandbox_exec", package=False)
        == "grading.in_sandbox.sandbox_agent"
    ), "a bare sibling"
    assert "tests.conftest" in edges["tests.lib.test_blocks"], "from conftest import ..."
    assert "tests.lab_cases" in edges["tests.test_labs"], "from lab_cases import ..."
    assert "lmcourse.families" in edges["lmcourse.zoo"], "from .families import FAMILIES"
    assert all(not is_test(m) for m in ("tests.lab_cases", "tools.course_copy", "tests.conftest"))
    assert is_test("tests.lib.test_parity") and is_conftest("tests.conftest")
    assert "lmcourse.families" in graph(on_import=True)["lmcourse.zoo"]
    assert (
        "grading.instructor.class_report"
        not in graph(on_import=True)["grading.instructor.similarity"]
    )
    assert "grading.instructor.class_report" in edges["grading.instructor.similarity"], (
        "an import inside a function"
    )


def test_the_library_imports_nothing_else_of_the_course():
    assert broken(lambda a, b: part(a) != "lmcourse" or part(b) == "lmcourse") == []


def test_grading_imports_neither_tests_nor_benchmarks_nor_tools():
    assert broken(lambda a, b: part(a) != "grading" or part(b) in {"grading", "lmcourse"}) == []


def test_what_runs_in_the_sandbox_imports_no_other_grading_module():
    assert broken(lambda a, b: a not in IN_SANDBOX or part(b) != "grading" or b in IN_SANDBOX) == []


def test_benchmarks_and_tools_import_no_test_module():
    outside = {"benchmarks", "tools"}
    assert broken(lambda a, b: part(a) not in outside or not (is_test(b) or is_conftest(b))) == []


def test_no_test_module_imports_another():
    """Nor does a conftest: a module other tests share is a helper, not a test."""
    assert broken(lambda a, b: not (is_test(a) or is_conftest(a)) or not is_test(b)) == []


def test_cycles_are_found():
    """The cycle finder, on graphs whose answer is known."""
    assert cycles({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"})}) == [
        ["a", "b", "c"]
    ]
    assert cycles({"a": frozenset({"a"}), "b": frozenset()}) == [["a"]]
    assert cycles({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset()}) == []


def test_no_import_cycle_in_the_library():
    library = {
        a: frozenset(b for b in edges if part(b) == "lmcourse")
        for a, edges in graph().items()
        if part(a) == "lmcourse"
    }
    assert cycles(library) == []


def test_no_import_cycle_in_the_course():
    """Among the imports that run when a module is imported (an import inside a function runs
    later, once both modules exist)."""
    assert cycles(graph(on_import=True)) == []
