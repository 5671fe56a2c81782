"""The common slips of the labs' answers, named from the wrong value they give: a look-up.

A lab's test, when an answer is wrong, asks `hint(part, got, want, **inputs)`; if the student's
value `got` is the value a common slip gives on these inputs, the hint names the slip in one
line, the test adds it to its failure message:

    Likely slip: every bias left out (3d + d in attention, ...)?

Two slips that give the same value share the line, as alternatives ("...? or ...?"). A right
value gets no hint, a wrong one that is no known slip the plain message. The sentences are
fixed text, with nothing of a test's inputs in them; the autograde report counts them (`named`).
Where a hidden test found the slip, the feedback lists every sentence of the part instead of the
one named (grading/host/course_preprocessors.py: with_slips): which one matched was chosen by code
that had seen the hidden input.

This module holds no rule. What a slip gives is data: `data/slips-l<n>.json`, written for each
lab by `make release` (grading/slips/table.py) from the slip rules and the inputs of the lab's
*visible* tests, which the student already sees. So in a student's kernel (Validate, JupyterLab)
`hint` names a slip on the visible inputs only, and nothing here computes one for any other
input. The rules themselves (grading/slips/, one module per lab) live only where the grader's
trusted process runs the tests, hidden ones included: there `use_rules` puts them behind `hint`.
"""

import base64
import json
import math
import sys
from functools import cache
from pathlib import Path

PREFIX = "Likely slip: "
OR = " or "  # between two sentences of one line: each ends with "?"
DATA = Path(__file__).resolve().parent / "data"
SAMPLE = 1024  # numbers of a larger tensor the table keeps, evenly spaced
TOLERANCE = 1e-4  # relative: a slip's value is `got` to float32 rounding and a changed order

_rules = None  # the grader's rules (grading/slips), where its trusted process installed them


def use_rules(rules):
    """Name slips with `rules` (an object with `hint(part, got, want, **inputs)` and
    `sentences(part)`, or None for the tables again); returns the ones in use before."""
    global _rules
    before, _rules = _rules, rules
    return before


# ------------------------------------------------------------------------- the tables


def table_path(lab):
    """The table of lab `lab` ("l1" ... or "LM10-L1")."""
    return DATA / f"slips-{lab.lower().removeprefix('lm10-')}.json"


@cache
def _table(lab):
    path = table_path(lab)
    return json.loads(path.read_text())["parts"] if path.is_file() else {}


def _part(part):
    found = _table(str(part).split("_")[0]).get(part)
    if found is None:
        raise KeyError(f"no slips catalogued for {part!r}; parts: {sorted(_catalogued())}")
    return found


def _catalogued():
    return {p for path in sorted(DATA.glob("slips-*.json")) for p in _table(path.stem[6:])}


# ------------------------------------------------------------------- values as data


def _torch():
    return sys.modules.get("torch")


def _is_config(value):
    return hasattr(value, "to_json_string") and hasattr(value, "model_type")


def encode(value):
    """`value` as JSON data: numbers, strings, None, tuples, lists, dicts, tensors (up to SAMPLE
    numbers, else SAMPLE of them evenly spaced) and transformers configurations (their values)."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) in (tuple, list):
        return {type(value).__name__: [encode(v) for v in value]}
    if type(value) is dict:
        return {"dict": {str(k): encode(v) for k, v in value.items()}}
    torch = _torch()
    if torch is not None and isinstance(value, torch.Tensor):
        flat = value.detach().to("cpu", torch.float64).flatten()
        numel = flat.numel()
        if numel > SAMPLE:
            flat = flat[_indices(numel)]
        return {
            "tensor": {
                "dtype": str(value.dtype).removeprefix("torch."),
                "shape": list(value.shape),
                "floating": value.is_floating_point(),
                "numel": numel,
                "data": base64.b64encode(flat.numpy().astype("<f8").tobytes()).decode(),
            }
        }
    if _is_config(value):
        values = json.loads(value.to_json_string(use_diff=False))
        values.pop("transformers_version", None)
        return {"config": {"type": type(value).__name__, "values": values}}
    raise TypeError(f"a slip table holds no {type(value).__name__}")


def _indices(numel):
    torch = _torch()
    return torch.linspace(0, numel - 1, SAMPLE, dtype=torch.float64).round().long()


def _numbers(value, stored):
    """(the stored numbers, `value`'s numbers at the same places) as float64 tensors, or None
    when `value` is no tensor of the stored one's shape."""
    torch = _torch()
    if torch is None or not isinstance(value, torch.Tensor):
        return None
    if list(value.shape) != stored["shape"]:
        return None
    flat = value.detach().to("cpu", torch.float64).flatten()
    if stored["numel"] > SAMPLE:
        flat = flat[_indices(stored["numel"])]
    data = base64.b64decode(stored["data"])
    mine = torch.frombuffer(bytearray(data), dtype=torch.float64) if data else flat[:0]
    return mine, flat


def _close(numbers):
    mine, theirs = numbers
    if not mine.numel():
        return True
    return (theirs - mine).abs().max().item() <= TOLERANCE * (1.0 + mine.abs().max().item())


def matches(stored, value):
    """Whether `value` is the encoded `stored` value: numbers, strings and configurations
    exactly, tensors to float32 rounding, containers entry by entry."""
    if stored is None or type(stored) in (bool, int, str):
        return type(value) is type(stored) and value == stored
    if type(stored) is float:
        return type(value) is float and math.isclose(value, stored, rel_tol=1e-12)
    (kind, inner), *_ = stored.items()
    if kind in ("tuple", "list"):
        return (
            type(value).__name__ == kind
            and len(value) == len(inner)
            and all(matches(s, v) for s, v in zip(inner, value, strict=True))
        )
    if kind == "dict":
        return (
            type(value) is dict
            and set(map(str, value)) == set(inner)
            and all(matches(inner[str(k)], v) for k, v in value.items())
        )
    if kind == "tensor":
        numbers = _numbers(value, inner)
        return numbers is not None and _close(numbers)
    if kind == "config":
        return _is_config(value) and encode(value)["config"] == inner
    return False


def _same(got, stored):
    """Whether `got` is the slip's encoded value: integers exactly, floating tensors to float32
    rounding, tuples entry by entry (None in a slip's tuple: any)."""
    if stored is None:
        return True
    if type(stored) is dict and "tuple" in stored:
        return (
            type(got) is tuple
            and len(got) == len(stored["tuple"])
            and all(_same(g, s) for g, s in zip(got, stored["tuple"], strict=True))
        )
    if type(stored) is int:
        return type(got) is int and got == stored
    if type(stored) is dict and "tensor" in stored:
        torch = _torch()
        return (
            stored["tensor"]["floating"]
            and isinstance(got, torch.Tensor)
            and got.is_floating_point()
            and matches(stored, got)
        )
    return False


def _apart(got, stored, want):
    """Whether the slip's value is told apart from the right one at `got`: another number, or a
    tensor that `got` is far closer to than to the right value."""
    if type(stored) is dict and "tensor" in stored:
        slip = _numbers(got, stored["tensor"])
        right = _numbers(want, stored["tensor"])
        if slip is None or right is None:
            return False
        mine, theirs = slip
        return 4 * (theirs - mine).abs().max().item() < (theirs - right[1]).abs().max().item()
    return not _same(want, stored)


def line(sentences):
    """The hint's line for the slips `sentences`, which give one value: alternatives."""
    return f"\n{PREFIX}{OR.join(sentences)}" if sentences else ""


def recognise(example, got, want):
    """The sentences of the slips of `example` ({"slips": [[encoded value, [sentence, ...]],
    ...]}) whose value is `got`, told apart from the right value `want`."""
    if type(got) is type(want) and type(want) in (int, tuple) and got == want:
        return []
    found = []
    for value, sentences in example["slips"]:
        if _same(got, value) and _apart(got, value, want):
            found += [s for s in sentences if s not in found]
    return found


# ----------------------------------------------------------------------------- the hint


def lookup(part, got, want, **inputs):
    """The hint from the lab's table alone: a slip is named only on inputs (and a right value)
    that the table holds, the visible tests' own."""
    for example in _part(part)["examples"]:
        if matches(example["want"], want) and matches(example["inputs"], inputs):
            return line(recognise(example, got, want))
    return ""


def hint(part, got, want, **inputs):
    """A line "\nLikely slip: <sentence>" naming the slips of `part` whose value is `got`, given
    the right value `want` and the test's inputs (two or more slips: alternatives on one line);
    "" for the right value or an unknown mistake."""
    if _rules is not None:
        return _rules.hint(part, got, want, **inputs)
    return lookup(part, got, want, **inputs)


def sentences(part):
    """Every sentence catalogued for `part` (none for a part without a catalogue)."""
    if _rules is not None:
        return set(_rules.sentences(part))
    found = _table(str(part).split("_")[0]).get(part)
    return set(found["sentences"]) if found else set()


def named(text, part=None):
    """The catalogued sentences an output's `text` names (of `part`, or of any part), in
    order, each once."""
    known = sentences(part) if part else {s for p in _catalogued() for s in sentences(p)}
    found = []
    for text_line in str(text).split("\n"):
        for sentence in _alternatives(text_line):
            if sentence in known and sentence not in found:
                found.append(sentence)
    return found


def lines(text, part):
    """The hint lines of `text` whose every sentence is catalogued for `part`, written anew
    from those sentences (nothing else of `text` is in them)."""
    known = sentences(part)
    return [
        f"{PREFIX}{OR.join(found)}"
        for text_line in str(text).split("\n")
        if (found := _alternatives(text_line)) and all(s in known for s in found)
    ]


def _alternatives(text_line):
    text_line = text_line.strip()
    if not text_line.startswith(PREFIX):
        return []
    body = text_line[len(PREFIX) :]
    parts = body.split("?" + OR)
    return [p if i == len(parts) - 1 else p + "?" for i, p in enumerate(parts)]
