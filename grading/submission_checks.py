"""Read a prepared submission before it runs: flags for the instructor, and the lab's cells.

The tests run outside the student's process (trusted_tests.py), so nothing here defends a
grade: the flags are information, for a person to read what a submission reaches for.
`flags(nb)` lists what in the student's cells (answer cells and cells they added) reaches past
the lab: IPython's hooks (`get_ipython`, input and AST transformers, magics and shell escapes),
code that runs strings (`exec`, `eval`, `compile`, `__import__`), files, processes and the
interpreter (`open`, `os`, `subprocess`, `sqlite3`, `ctypes`, `sys`, ...), the kernel's input
history (`In`, `_ih`), comparison methods that can claim equality with anything (`__eq__`), and
any rebinding of a name that a locked setup cell defines (the references the tests compare
against) or of an attribute of one (`torch.allclose = ...`). The parent reads the source, so
no code in the kernel can hide a flag from it; obfuscation itself needs one of the flagged
constructs. A flag costs no points: the report marks the submission for a person to read.
A cell counts as the lab's only when it is locked and the released notebook has a locked cell
of its grade_id: a student who marks a cell of their own as locked is still read.
"""

import ast
import re

from nbgrader import utils

SUSPICIOUS_MODULES = {
    "os",
    "sys",
    "subprocess",
    "sqlite3",
    "socket",
    "ctypes",
    "importlib",
    "builtins",
    "inspect",
    "gc",
    "signal",
    "shutil",
    "pathlib",
    "glob",
    "io",
    "base64",
    "codecs",
    "pickle",
    "marshal",
    "threading",
    "multiprocessing",
    "concurrent",
    "IPython",
    "ipykernel",
    "traitlets",
    "zmq",
    "jupyter_client",
    "nbformat",
    "nbclient",
    "nbgrader",
    "urllib",
    "http",
    "requests",
    "asyncio",
    "pty",
    "fcntl",
    "resource",
    "mmap",
    "tempfile",
    "runpy",
    "code",
    "dis",
    "types",
    "atexit",
    "sysconfig",
}
SUSPICIOUS_CALLS = {
    "get_ipython": "uses get_ipython (IPython's hooks)",
    "exec": "runs code from a string (exec)",
    "eval": "runs code from a string (eval)",
    "compile": "compiles code from a string",
    "__import__": "imports by name (__import__)",
    "open": "opens a file",
    "globals": "reaches the notebook's globals()",
    "vars": "reaches a namespace with vars()",
    "setattr": "sets attributes by name (setattr)",
    "delattr": "deletes attributes by name",
    "breakpoint": "calls breakpoint()",
    "input": "reads input()",
    "exit": "calls exit()",
    "quit": "calls quit()",
}
HISTORY = re.compile(
    r"^(In|Out|_ih|_oh|_dh|_i\d*|_ii+|__builtins__|__builtin__|__loader__|"
    r"__spec__)$"
)
DUNDER_DEFS = {
    "__eq__",
    "__ne__",
    "__hash__",
    "__bool__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__instancecheck__",
    "__subclasscheck__",
    "__class__",
    "__getattr__",
    "__getattribute__",
    "__float__",
    "__int__",
    "__index__",
    "__abs__",
    "__sub__",
    "__rsub__",
    "__format__",
    "__len__",
    "__iter__",
    "__contains__",
    "__del__",
}


def meta(cell):
    """A cell's nbgrader metadata, {} where it is missing or not a mapping: a submission can
    hold anything there (a string, a list), and nothing that reads it may crash on that."""
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    found = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return found if isinstance(found, dict) else {}


# nbgrader's own predicates (nbgrader.utils), asked only of cells whose metadata is a mapping:
# on a submission's string or list there they would raise.
def is_solution(cell):
    """An answer cell (code or written), as nbgrader decides it."""
    return bool(meta(cell)) and bool(utils.is_solution(cell))


def is_grade(cell):
    """A graded cell (a test, or a written answer with points), as nbgrader decides it."""
    return bool(meta(cell)) and bool(utils.is_grade(cell))


def is_locked(cell):
    return bool(meta(cell)) and bool(utils.is_locked(cell))


def is_setup(cell):
    """A locked code cell that is neither an answer nor a test: the lab's own code."""
    return (
        cell.cell_type == "code"
        and is_locked(cell)
        and not is_grade(cell)
        and not is_solution(cell)
    )


def is_student(cell, locked_ids=None):
    """A code cell the student writes: an answer cell, or any cell they added (one marked
    locked too, unless `locked_ids`, the grade_ids of the lab's locked cells, holds it)."""
    if cell.cell_type != "code":
        return False
    m = meta(cell)
    if locked_ids is None:
        return not m.get("locked")
    return not (m.get("locked") and m.get("grade_id") in locked_ids)


def is_test(cell):
    """An autograded test cell: code that is graded and not an answer."""
    return cell.cell_type == "code" and is_grade(cell) and not is_solution(cell)


def python_source(source):
    """The cell as IPython runs it (magics and shell escapes become get_ipython calls)."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 (IPython raises many kinds on broken input)
        return source


def parse(source):
    try:
        return ast.parse(python_source(source))
    except (SyntaxError, ValueError):
        return None


def bound_names(tree):
    """Top-level names a module binds (imports, functions, classes, assignments)."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def free_names(source):
    """Names a cell reads but never binds anywhere (nor imports, defines or is given as a
    builtin): the names it expects from earlier cells."""
    import builtins

    tree = parse(source)
    if tree is None:
        return set()
    read, bound = set(), set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read - bound


def setup_names(nb):
    names = set()
    for cell in nb.cells:
        if is_setup(cell) and (tree := parse(cell.source)):
            names |= bound_names(tree)
    return names


def root_name(node):
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def cell_flags(tree, protected):
    """(line, reason) for every suspicious construct in one parsed cell."""
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for module in modules:
                if module.split(".")[0] in SUSPICIOUS_MODULES:
                    found.append((line, f"imports {module}"))
            for alias in node.names:
                if (alias.asname or "") in protected:
                    found.append((line, f"rebinds {alias.asname}, defined by the setup cell"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and (node.func.id in SUSPICIOUS_CALLS)
        ):
            found.append((line, SUSPICIOUS_CALLS[node.func.id]))
        elif isinstance(node, ast.Name) and HISTORY.match(node.id):
            found.append((line, f"reads {node.id} (the kernel's history or internals)"))
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("__")
            and node.attr
            in (
                DUNDER_DEFS
                | {
                    "__dict__",
                    "__globals__",
                    "__code__",
                    "__builtins__",
                    "__subclasses__",
                    "__closure__",
                }
            )
        ):
            found.append((line, f"uses {node.attr}"))
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in ("ops", "_C", "_VF")
            and root_name(node) == "torch"
        ):
            found.append((line, f"reaches torch.{node.attr} (operators past the off-limits guard)"))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
            node.name in DUNDER_DEFS
        ):
            found.append((line, f"defines {node.name} (it can make a wrong answer compare equal)"))
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                if name in protected:
                    found.append((line, f"rebinds {name}, defined by the setup cell"))
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, ast.Attribute | ast.Subscript) and (
                        root_name(part) in protected
                    ):
                        found.append(
                            (
                                line,
                                f"changes {ast.unparse(part)}, part of the "
                                "setup cell's "
                                f"{root_name(part)}",
                            )
                        )
                        break
    for node in tree.body:  # top-level definitions that replace a setup name
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and (
            node.name in protected
        ):
            found.append((node.lineno, f"redefines {node.name}, defined by the setup cell"))
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id in protected:
                    found.append((node.lineno, f"rebinds {target.id}, defined by the setup cell"))
    return found


def flags(nb, release=None):
    """Suspicious constructs in the student's cells, as report phrases, in notebook order;
    `release` (the released notebook) says which cells are the lab's."""
    protected = setup_names(release or nb)
    locked_ids = None
    if release is not None:
        locked_ids = {meta(c).get("grade_id") for c in release.cells if meta(c).get("locked")}
    phrases = []
    for index, cell in enumerate(nb.cells):
        if not is_student(cell, locked_ids):
            continue
        where = meta(cell).get("grade_id") or f"cell {index + 1}"
        tree = parse(cell.source)
        if tree is None:
            continue  # a syntax error is the student's loss, not a flag
        seen = set()
        for line, reason in sorted(cell_flags(tree, protected)):
            if reason not in seen:
                seen.add(reason)
                phrases.append(f"{where} line {line}: {reason}")
    return phrases
