"""The tables of lmcourse.slips: what each slip gives on the inputs of a lab's visible tests.

    python -m grading.slips.table LM10-L1 [LM10-L2 ...]     (`make release LAB=...` runs it)
    python -m grading.slips.table --check                   (exit 1 when a table is stale:
                                                             `same`, below)

writes lib/lmcourse/data/slips-l<n>.json. The inputs are read off the lab itself: the solution
notebook runs top to bottom (solutions/LM10-L<n>/, in its folder, in this process) with its
test cells as the release shows them, hidden tests removed. Before a test cell runs as it is,
it runs once for each answer function it calls, that function's answers made wrong by one and
every failed check going on to the next: each `hint(...)` the cell asks for on a wrong answer
is recorded (the part, the right value, the inputs), and the rules (grading/slips/l<n>.py) give
the value of every slip that applies on them: data, never a formula. The table also lists each
part's sentences (fixed text: they appear in the feedback). `record(..., hidden=True)` runs the
hidden tests too, for the tests to reach every slip on the lab's own inputs; no table ever holds
a hidden input.
"""

import argparse
import ast
import base64
import contextlib
import functools
import io
import json
import os
import random
import sys
from pathlib import Path

import nbformat
import numpy as np
from lmcourse import slips as lookup

from grading import slips

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def notebook(lab):
    return ROOT / "solutions" / lab / f"{lab}.ipynb"


def visible(source):
    """A test cell's source as the release shows it: the hidden region removed."""
    kept, inside = [], False
    for text_line in source.split("\n"):
        if BEGIN in text_line:
            inside = True
        elif END in text_line:
            inside = False
        elif not inside:
            kept.append(text_line)
    return "\n".join(kept)


class _Lenient(ast.NodeTransformer):
    """A failed check evaluates its message and goes on: `assert test, message` becomes
    `if not test: message`, `raise AssertionError(message)` becomes `message`."""

    def visit_Assert(self, node):
        if node.msg is None:
            return ast.Pass()
        return ast.If(
            test=ast.UnaryOp(op=ast.Not(), operand=node.test), body=[ast.Expr(node.msg)], orelse=[]
        )

    def visit_Raise(self, node):
        exc = node.exc
        if isinstance(exc, ast.Call) and getattr(exc.func, "id", None) == "AssertionError":
            return [ast.Expr(a) for a in exc.args] or ast.Pass()
        return node


def lenient(source):
    tree = ast.fix_missing_locations(_Lenient().visit(ast.parse(source)))
    return compile(tree, "<test cell, lenient>", "exec")


def _wrong(value):
    """A wrong answer of the right type: one more (tensors: in every entry; a module: its
    outputs)."""
    import torch

    if type(value) is tuple:
        return tuple(_wrong(v) for v in value)
    if type(value) in (int, float):
        return value + 1
    if isinstance(value, torch.Tensor):
        return ~value if value.dtype == torch.bool else value + 1
    if isinstance(value, torch.nn.Module):  # a module an answer builds (L5's port_layer)
        value.register_forward_hook(lambda module, args, output: _wrong(output))
    return value


def _wrongly(function):
    @functools.wraps(function)
    def answer(*args, **kwargs):
        return _wrong(function(*args, **kwargs))

    return answer


class Recorder:
    """Stands behind lmcourse.slips.hint while a lab runs: records each call's example."""

    def __init__(self):
        self.calls = []

    def hint(self, part, got, want, **inputs):
        self.calls.append((part, slips.example(part, want, **inputs), (want, inputs)))
        return ""

    def sentences(self, part):
        return slips.sentences(part)


def _answers(source):
    """The functions an answer cell defines."""
    return [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]


def record(lab, hidden=False):
    """[(part, example, (want, inputs))] of every hint call the lab's tests make, in order,
    each once: the visible tests' (with `hidden`, the hidden tests' too). Each test cell runs
    once with each answer function it calls made wrong by one (its checks then fail and ask
    for their hints, and go on to the next check), then as it is, which must pass; a cell that
    asks for no hint runs as it is only."""
    import torch

    path = notebook(lab)
    cells = nbformat.read(path, as_version=4).cells
    recorder, namespace, answers = Recorder(), {"__name__": "__main__"}, []
    before, cwd = lookup.use_rules(recorder), os.getcwd()
    try:
        os.chdir(path.parent)
        with contextlib.redirect_stdout(io.StringIO()):
            for index, cell in enumerate(cells):
                if cell.cell_type != "code":
                    continue
                grade = cell.metadata.get("nbgrader", {})
                where = f"{lab}: cell {index} ({grade.get('grade_id', 'no grade_id')})"
                source = cell.source if hidden else visible(cell.source)
                if grade.get("grade") and not grade.get("solution") and "hint(" in source:
                    state = torch.get_rng_state(), random.getstate()
                    for name in answers:
                        if name not in source:
                            continue
                        wrong = dict(namespace, **{name: _wrongly(namespace[name])})
                        torch.set_rng_state(state[0])
                        random.setstate(state[1])
                        with contextlib.suppress(Exception):  # a wrong answer may crash a test
                            exec(lenient(source), wrong)
                    torch.set_rng_state(state[0])
                    random.setstate(state[1])
                elif grade.get("solution"):
                    answers += _answers(source)
                try:
                    exec(compile(source, "<cell>", "exec"), namespace)
                except Exception as error:
                    raise RuntimeError(
                        f"{where} failed on the solution: {type(error).__name__}: {error}"
                    ) from error
    finally:
        os.chdir(cwd)
        lookup.use_rules(before)
    found, seen = [], set()
    for part, example, raw in recorder.calls:
        key = json.dumps([part, example], sort_keys=True)
        if key not in seen:
            seen.add(key)
            found.append((part, example, raw))
    return found


def build(lab):
    """The table of `lab`: its parts' sentences, and the examples of its visible tests that
    some slip applies to."""
    prefix = lab.lower().removeprefix("lm10-") + "_"
    parts = {
        part: {"sentences": list(rules), "examples": []}
        for part, rules in slips.CATALOGUE.items()
        if part.startswith(prefix)
    }
    for part, example, _ in record(lab):
        if example["slips"]:
            parts[part]["examples"].append(example)
    return {
        "lab": lab,
        "written by": "python -m grading.slips.table (make release): do not edit",
        "parts": parts,
    }


def text(table):
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


def same(stored, built):
    """Whether the table `stored` (read from its file) is the table `built`: every tensor's
    numbers to the tolerance the lookup itself reads them with (lmcourse.slips.TOLERANCE),
    everything else exactly. A slip's value computed in float32 changes in its last bits with
    the thread count and the CPU's vector width (built on one thread, slips-l3.json's layer
    norms differ from those built on two), and no rule's change is that small."""
    if type(stored) is not type(built):
        return False
    if type(stored) is dict:
        if set(stored) == {"tensor"} == set(built):
            a, b = stored["tensor"], built["tensor"]
            if {k: v for k, v in a.items() if k != "data"} != {
                k: v for k, v in b.items() if k != "data"
            }:
                return False
            x, y = (np.frombuffer(base64.b64decode(t["data"]), dtype="<f8") for t in (a, b))
            if x.shape != y.shape:
                return False
            scale = 1.0 + (np.abs(x).max() if x.size else 0.0)
            return bool(x.size == 0 or np.abs(x - y).max() <= lookup.TOLERANCE * scale)
        return set(stored) == set(built) and all(same(stored[k], built[k]) for k in stored)
    if type(stored) is list:
        return len(stored) == len(built) and all(map(same, stored, built))
    return stored == built


def labs():
    return sorted(p.parent.name for p in (ROOT / "solutions").glob("LM10-L*/LM10-L*.ipynb"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*", help="LM10-L1 ... (default: every lab)")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for lab in args.labs or labs():
        path = lookup.table_path(lab)
        built = build(lab)
        if args.check:
            if not path.is_file() or not same(json.loads(path.read_text()), built):
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text(built))
            print(f"{path.relative_to(ROOT)}: written")
    if stale:
        print("stale (run `make release LAB=...`):", *stale, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
