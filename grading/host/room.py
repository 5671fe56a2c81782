"""What the student's code has while it is graded: the room.

A lab's setup cell may declare, in a comment line of its own,

    # Yours while graded: math, torch, F, nn, model, config, input_ids

the names of its setup that the student's code may use. Then the graded sandbox holds those and
nothing else of the setup: the references the tests compare against, transformers and the
course library's counters stay in the trusted process (trusted_tests.py), which ran the whole
setup. In the sandbox the setup cell is replaced by

- the setup's import statements of modules the room may hold (not transformers, not the course
  library), and its expression statements that use only those (`torch.manual_seed(0)`), and
- the other declared names, bound to plain copies of the trusted process's values: numbers,
  strings, tensors, a transformers configuration as its values, a transformers model as its
  weights (torch's own modules, Linear and Embedding, as they are; transformers' modules as
  weight holders whose forward is not there: see sandbox_agent.py).

transformers and the course library are not importable there at all (grading/host/sandbox.py
mounts stand-ins over them), so no alias, copy, namespace trick, code-object trick or thread
of the student's code can reach them: what the student may not call is not in the room.

A setup helper the student's code may call but that needs what the room does not hold (L6's
`attention_parameters`, which counts a layer transformers builds) is declared on a line of its
own,

    # Answered by the grader while graded: attention_parameters

and is answered by the trusted process: for every configuration it hands to the room, it calls
each such helper on it and sends the results with the configuration's values
(trusted_tests.plain_copy); in the room the helper is a stand-in that returns the result sent
with its argument, and says why it cannot answer for anything else (sandbox_agent.answered).

A lab without the declaration runs its setup cell in the sandbox as it is (the sandbox then
holds transformers, and the off-limits guard of lmcourse/offlimits.py is the only wall).
"""

import ast
import re

DECLARATION = re.compile(r"^[ \t]*#[ \t]*Yours while graded:[ \t]*(.*?)[ \t]*$", re.MULTILINE)
ANSWERED = re.compile(
    r"^[ \t]*#[ \t]*Answered by the grader while graded:[ \t]*(.*?)[ \t]*$", re.MULTILINE
)
# Packages a room never holds: the tests' references live there.
OUTSIDE = ("transformers", "lmcourse")


class RoomError(ValueError):
    """A lab's room declaration that cannot be honoured: the lab author's mistake."""


def declared(setup_sources, pattern=DECLARATION):
    """The names the setup cells declare the student's, in order; None without a declaration."""
    names, found = [], False
    for source in setup_sources:
        for match in pattern.finditer(source or ""):
            found = True
            for name in match.group(1).split(","):
                name = name.strip()
                if name and name not in names:
                    names.append(name)
    return names if found else None


def _parsed(setup_sources):
    try:
        return [ast.parse(source) for source in setup_sources]
    except SyntaxError as error:
        raise RoomError(f"the setup cell does not parse: {error}") from None


def answered(setup_sources, trees=None):
    """The setup's helpers the trusted process answers for the room, in order (maybe none).
    RoomError when one is not a function the setup defines at its top level, or when the lab
    declares them without a room. `trees`: the setup cells already parsed."""
    names = declared(setup_sources, ANSWERED) or []
    if names and declared(setup_sources) is None:
        raise RoomError("the setup declares helpers answered by the grader but no room")
    functions = {
        node.name
        for tree in trees or _parsed(setup_sources)
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }
    missing = [n for n in names if n not in functions]
    if missing:
        raise RoomError(
            f"the grader is to answer {', '.join(missing)}, which the setup cells do not "
            "define as functions"
        )
    return names


def _outside(module):
    return (module or "").split(".")[0] in OUTSIDE


def _imported(node):
    """Names an import statement binds, and whether it imports from outside the room."""
    if isinstance(node, ast.Import):
        names = [(a.asname or a.name.split(".")[0]) for a in node.names]
        return names, any(_outside(a.name) for a in node.names)
    names = [a.asname or a.name for a in node.names]
    return names, node.level > 0 or _outside(node.module)


def _names_read(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def sandbox_setup(setup_sources, names):
    """(sources, shipped): each setup cell's source as the room runs it, and the declared
    names that travel as plain copies (the grader's answered helpers are neither: the agent
    binds their stand-ins). The room keeps the setup's definitions of declared
    functions and classes (the lab's own code the student may use), its expression statements
    that read only what the room holds (`torch.manual_seed(0)`), and the imports those and the
    declaration need, from modules a room may hold; the other declared names are shipped.
    RoomError when a declared name is neither imported, defined nor assigned by the setup."""
    trees = _parsed(setup_sources)
    helpers = answered(setup_sources, trees)
    clash = [n for n in helpers if n in names]
    if clash:
        raise RoomError(
            f"{', '.join(clash)}: declared both the student's and answered by the grader"
        )
    allowed, defined, assigned = set(), set(), set()
    for tree in trees:
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                bound, outside = _imported(node)
                if not outside:
                    allowed.update(bound)
            elif isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in names:
                defined.add(node.name)
            else:
                for target in ast.walk(node):
                    if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store):
                        assigned.add(target.id)
                if isinstance(node, ast.FunctionDef | ast.ClassDef):
                    assigned.add(node.name)
    missing = [n for n in names if not {n} & (allowed | defined | assigned)]
    if missing:
        raise RoomError(
            f"the room declares {', '.join(missing)}, which the setup cells neither import "
            "from a module the room may hold, nor define, nor assign"
        )
    # What the kept statements read decides which imports come along.
    kept, needed = [], set(names)
    for tree in trees:
        kept.append([])
        for node in tree.body:
            lab_code = isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in defined
            plain = isinstance(node, ast.Expr) and _names_read(node) <= allowed | defined
            if lab_code or plain:
                kept[-1].append(node)
                needed |= _names_read(node)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                kept[-1].append(node)
    sources = []
    for nodes in kept:
        lines = []
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                bound, outside = _imported(node)
                if outside or not set(bound) & needed:
                    continue
            lines.append(ast.unparse(node))
        sources.append("\n".join(lines))
    return sources, [n for n in names if n not in allowed and n not in defined]


def warm_imports(setup_sources, names):
    """The import statements a warm sandbox of this room runs once (sandbox_exec.serve)."""
    sources, _ = sandbox_setup(setup_sources, names)
    lines = []
    for source in sources:
        for node in ast.parse(source).body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                lines.append(ast.unparse(node))
    return "\n".join(lines)


_NAME = re.compile(r"^name '(\w+)' is not defined")
_ATTRIBUTE = re.compile(r"^module '(\w+)' has no attribute '(\w+)'")
_IMPORT = re.compile(r"^cannot import name '(\w+)' from '(\w+)'")


def absent(error, message, setup_names, held):
    """The message of a student's error `error` ("NameError", ...) with `message`, when it
    says that the student's code reached for what the room does not hold: a name of the setup
    outside the room (`setup_names` less `held`, the room's), or a package no room holds
    (OUTSIDE, or a name of one); None for any other error."""
    held = list(held)
    where = (
        f"the room holds only your own code and, of the setup, {', '.join(held)}"
        if held
        else "the room holds only your own code and none of the setup"
    )
    outside = set(setup_names) - set(held) | set(OUTSIDE)
    name = _NAME.match(message) if error == "NameError" else None
    attribute = _ATTRIBUTE.match(message) if error == "AttributeError" else None
    imported = _IMPORT.match(message) if error in ("ImportError", "ModuleNotFoundError") else None
    if name and name.group(1) in outside:
        missing = name.group(1)
    elif attribute and attribute.group(1) in OUTSIDE:
        missing = f"{attribute.group(1)}.{attribute.group(2)}"
    elif imported and imported.group(2) in OUTSIDE:
        missing = f"{imported.group(2)}.{imported.group(1)}"
    else:
        return None
    return (
        f"{missing} is not in the room while graded: {where} (the lab's introduction says "
        f"why); transformers and lmcourse stay with the grader. ({message})"
    )
