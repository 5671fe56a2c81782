"""The labs' hidden inputs cover what each prompt allows, and the release holds no marking scheme.

Fast, with no sandbox and no nbgrader: each lab's solution runs top to bottom in this process
(setup, answers, tests, hidden tests included), with every answer function a test cell calls
recorded. AXES below declares, per part, the axes its prompt allows (read from the prompt, not
from the tests) and a function that places one recorded call on them; a part whose calls miss
a combination the prompt allows fails, and the failure shows the coverage. The sandboxed round
trip of the same notebooks is tests/test_labs.py (minutes per lab).

    pytest tests/test_lab_inputs.py -s     prints each part's coverage
"""

import contextlib
import importlib
import inspect
import io
import itertools
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]


def meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def _sharing(heads, kv_heads):
    if kv_heads in (None, heads):
        return "all"
    return "one" if kv_heads == 1 else "grouped"


def _l1_count(config):
    kv = config.get("kv_heads")
    return (
        config["ffn"],
        config["norm"],
        config["bias"],
        "omitted" if "kv_heads" not in config else _sharing(config["heads"], kv),
        config["tied"],
        "positions" if config.get("positions") else "no positions",
    )


def _l2_fit(gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request):
    free, request = gpu_bytes - weight_bytes, cache_bytes_per_token * tokens_per_request
    if free >= request:
        return "exactly" if free % request == 0 else "room to spare"
    if free >= 0:
        return "less than a request free" if free else "no memory free"
    return "short by less than a request" if -free < request else "short by more than a request"


def _l6_kind(config):
    if getattr(config, "kv_lora_rank", None):
        return "latent"
    sharing = _sharing(config.num_attention_heads, config.num_key_value_heads)
    return "full" if sharing == "all" else sharing


def _l6_window(config, tokens):
    window = getattr(config, "sliding_window", None)
    kinds = getattr(config, "layer_types", None)
    if not window:
        sliding = "none"
    elif kinds and "full_attention" in kinds:
        sliding = "some layers"
    else:
        sliding = "every layer"
    edge = window or 6  # the hidden tests' stand-in for a model without a window
    fill = (
        "below the window"
        if tokens < edge - 1
        else "at its edge"
        if tokens == edge - 1
        else "beyond"
    )
    return sliding, fill


# lab -> grade_id -> (the answer function its test calls, the prompt's axes, where a call lies)
AXES = {
    "LM10-L1": {
        "l1_test_attention": (
            "attention_parameters",
            {"sharing": ("all", "grouped", "one"), "width": ("heads*head_dim == d", "!= d")},
            lambda d, heads, kv_heads, head_dim: (
                _sharing(heads, kv_heads),
                "heads*head_dim == d" if heads * head_dim == d else "!= d",
            ),
        ),
        "l1_test_count": (
            "count_parameters",
            {
                "ffn": ("gelu", "swiglu"),
                "norm": ("layer", "rms"),
                "bias": (True, False),
                "kv_heads": ("omitted", "all", "grouped", "one"),
                "tied": (True, False),
                "positions": ("positions", "no positions"),
            },
            lambda config: _l1_count(config),
        ),
    },
    "LM10-L2": {
        "l2_test_attention": (
            "attention_parameters",
            {"sharing": ("all", "grouped", "one")},
            lambda d, heads, kv_heads: (_sharing(heads, kv_heads),),
        ),
        "l2_test_cache": (
            "cache_bytes_per_token",
            {"bytes_per_number": ("default", "given"), "kv_heads": ("one", "several")},
            lambda layers, kv_heads, head_dim, bytes_per_number=None: (
                "default" if bytes_per_number is None else "given",
                "one" if kv_heads == 1 else "several",
            ),
        ),
        "l2_test_flops": (
            "attention_flops_per_token",
            {"sharing": ("all", "grouped", "one"), "context": ("the token alone", "longer")},
            lambda d, heads, kv_heads, layers, context: (
                _sharing(heads, kv_heads),
                "the token alone" if context == 1 else "longer",
            ),
        ),
        "l2_test_serving": (
            "max_concurrent_requests",
            {
                "fit": (
                    "room to spare",
                    "exactly",
                    "less than a request free",
                    "no memory free",
                    "short by less than a request",
                    "short by more than a request",
                )
            },
            lambda **arguments: (_l2_fit(**arguments),),
        ),
    },
    "LM10-L3": {
        "l3_test_layer_norm": (
            "layer_norm",
            {"weight": ("given", "None"), "bias": ("given", "None")},
            lambda x, weight=None, bias=None, eps=1e-5: (
                "None" if weight is None else "given",
                "None" if bias is None else "given",
            ),
        ),
        "l3_test_rms_norm": (
            "rms_norm",
            {"weight": ("given", "None")},
            lambda x, weight=None, eps=1e-6: ("None" if weight is None else "given",),
        ),
    },
    "LM10-L4": {
        "l4_test_angles": (
            "rope_cos_sin",
            {"positions": ("0 .. T-1", "any order"), "pairs": ("even count", "odd count")},
            lambda positions, head_dim, base: (
                "0 .. T-1" if positions.tolist() == list(range(len(positions))) else "any order",
                "odd count" if head_dim // 2 % 2 else "even count",
            ),
        ),
        "l4_test_score": (
            "rope_score",
            {"order": ("query after the key", "query before the key", "same position")},
            lambda q, k, m, n, base: (
                "query after the key"
                if m > n
                else "query before the key"
                if m < n
                else "same position",
            ),
        ),
    },
    "LM10-L5": {
        "l5_test_expand_kv": (
            "expand_kv",
            {"kv_heads": ("one", "several"), "n_rep": ("once", "several times")},
            lambda kv, n_rep: (
                "one" if kv.shape[1] == 1 else "several",
                "once" if n_rep == 1 else "several times",
            ),
        ),
        "l5_test_rope": (
            "apply_rope",
            {"positions": ("0 .. T-1", "any order"), "pairs": ("even count", "odd count")},
            lambda x, positions, base: (
                "0 .. T-1" if positions.tolist() == list(range(len(positions))) else "any order",
                "odd count" if x.shape[-1] // 2 % 2 else "even count",
            ),
        ),
        "l5_test_block": (
            "port_layer",
            {"sharing": ("all", "grouped", "one"), "width": ("heads*head_dim == d", "!= d")},
            lambda layer, config, **parts: (
                _sharing(config.num_attention_heads, config.num_key_value_heads),
                "heads*head_dim == d"
                if config.num_attention_heads * config.head_dim == config.hidden_size
                else "!= d",
            ),
        ),
    },
    "LM10-L6": {
        "l6_test_ffn_width": (
            "ffn_width",
            {"multiplier": ("none", "given"), "8d/3": ("a multiple", "rounded up")},
            lambda d, multiple_of, multiplier=None: (
                "none" if multiplier is None else "given",
                "a multiple"
                if int((multiplier or 1) * int(2 * 4 * d / 3)) % multiple_of == 0
                else "rounded up",
            ),
        ),
        "l6_test_moe": (
            "moe_parameters",
            {"tied": (True, False), "shared experts": (0, 1, 2), "dense first": ("none", "some")},
            lambda config: (
                config.tie_word_embeddings,
                config.n_shared_experts,
                "some" if config.first_k_dense_replace else "none",
            ),
        ),
        "l6_test_cache": (
            "cache_bytes_per_token",
            {
                "key-value heads": ("full", "grouped", "one", "latent"),
                "kv_bytes": ("default", "given"),
            },
            lambda config, kv_bytes=None: (
                _l6_kind(config),
                "default" if kv_bytes is None else "given",
            ),
        ),
        "l6_test_window": (
            "cache_bytes",
            {
                "sliding": ("every layer", "some layers", "none"),
                "tokens": ("below the window", "at its edge", "beyond"),
            },
            lambda config, tokens, kv_bytes=2: _l6_window(config, tokens),
        ),
    },
}


BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def hidden_numbers(source):
    """The numbers (1-based) of the lines of a test cell's hidden region."""
    numbers, inside = set(), False
    for number, text in enumerate(source.split("\n"), 1):
        if BEGIN in text:
            inside = True
        elif END in text:
            inside = False
        elif inside:
            numbers.add(number)
    return numbers


def _recorder(function, calls, test_file, details=None, hidden=()):
    def recorded(*args, **kwargs):
        frame = sys._getframe(1)
        if frame.f_code.co_filename != test_file:  # the test's own calls only
            return function(*args, **kwargs)
        arguments = inspect.signature(function).bind(*args, **kwargs).arguments
        calls.append(arguments)
        result = function(*args, **kwargs)
        if details is not None:
            while frame.f_code.co_name != "<module>" or frame.f_code.co_filename != test_file:
                frame = frame.f_back
            details.append((dict(arguments), result, frame.f_lineno in hidden))
        return result

    recorded.__wrapped__ = function
    return recorded


def run_solution(lab, parts, answers=None, details=None):
    """Run the lab's solution (its answer cells replaced by `answers`, grade_id -> source) in
    this process, printing nothing: ({grade_id: [arguments of each recorded call]},
    {test grade_id: None if it passed, else its error}). `details`, a dict: filled with
    {grade_id: [(arguments, result, whether from a hidden line)]}."""
    nb = nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    namespace, calls, verdicts = {"__name__": "__main__"}, {g: [] for g in parts}, {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        grade_id = meta(cell).get("grade_id", "")
        test_file = f"<{lab} {grade_id}>"
        if grade_id in parts:
            name = parts[grade_id][0]
            kept = None if details is None else details.setdefault(grade_id, [])
            namespace[name] = _recorder(
                namespace[name], calls[grade_id], test_file, kept, hidden_numbers(cell.source)
            )
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(
                    compile((answers or {}).get(grade_id, cell.source), test_file, "exec"),
                    namespace,
                )
        except Exception as error:  # noqa: BLE001 (a test's verdict, or an answer's error)
            if answers is None or (meta(cell).get("locked") and not meta(cell).get("grade")):
                raise  # the solution, or the setup: an answer's error in any other cell (a
                # demonstration that calls it) is its output there, as in a kernel
            if meta(cell).get("grade"):  # an answer cell's own error is only its output
                verdicts[grade_id] = f"{type(error).__name__}: {error}"[:500]
        else:
            if meta(cell).get("grade") and not meta(cell).get("solution"):
                verdicts[grade_id] = None
        if grade_id in parts:
            namespace[name] = namespace[name].__wrapped__
    return calls, verdicts


# Parts whose prompt offers no axis to combine, and why (a new part goes in AXES or here).
WITHOUT_AXES = {
    "l1_test_gpt2_block": "one argument, the width: the hidden widths vary it",
    "l1_test_gpt2_model": "GPT-2 only, tied: the hidden sizes vary every argument",
    "l2_test_compare": "assembles Parts 1-3, whose axes their own tests cover",
    "l3_test_mean_fraction": "one tensor in, its rows of any length and sign: varied by the tests",
    "l3_test_norm_inputs": "the hidden states of other text, of other lengths",
    "l4_test_rotate": "rotates tables the test gives it: shapes and bases vary",
    "l4_test_periods": "a function of the width and base, varied by the hidden inputs",
    "l5_test_logits": "the block's axes are Part 3's; a second model's sizes here",
}


def test_every_part_declares_its_axes():
    """Every autograded part of a lab in AXES is listed there or in WITHOUT_AXES."""
    for lab, parts in AXES.items():
        nb = nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
        graded = {
            meta(c)["grade_id"]
            for c in nb.cells
            if meta(c).get("grade") and not meta(c).get("solution")
        }
        unlisted = sorted(graded - set(parts) - set(WITHOUT_AXES))
        assert not unlisted, (
            f"{lab}: parts {unlisted} declare no axes: add them to AXES (the prompt's axes) or to "
            "WITHOUT_AXES (why there is none) in tests/test_lab_inputs.py"
        )


# L3's setup loads SmolLM2's real weights and runs it: 10 to 30 s a run on 2 cores.
SLOW_LABS = {"LM10-L3"}
LABS = [
    pytest.param(lab, marks=pytest.mark.slow) if lab in SLOW_LABS else lab for lab in sorted(AXES)
]


@pytest.mark.parametrize("lab", LABS)
def test_hidden_inputs_cover_every_combination_the_prompt_allows(lab, capsys):
    parts = AXES[lab]
    calls, _ = run_solution(lab, parts)
    missing = {}
    for grade_id, (name, axes, place) in parts.items():
        covered = {place(**arguments) for arguments in calls[grade_id]}
        allowed = set(itertools.product(*axes.values()))
        with capsys.disabled():
            print(
                f"\n{lab} {grade_id} ({name}): {len(calls[grade_id])} calls cover "
                f"{len(covered & allowed)} of {len(allowed)} combinations of {list(axes)}"
            )
        if allowed - covered:
            missing[grade_id] = sorted(allowed - covered, key=str)
    assert not missing, f"{lab}: combinations the prompt allows that no test tries: {missing}"


# Parts whose test calls its function with plain arguments (numbers, strings): lab -> grade_id
# -> the function (a part with tensor, dict or configuration arguments is not listed).
PLAIN_ARGUMENTS = {
    "LM10-L1": {"l1_test_gpt2_model": "gpt2_model", "l1_test_attention": "attention_parameters"},
    "LM10-L2": {
        "l2_test_attention": "attention_parameters",
        "l2_test_cache": "cache_bytes_per_token",
        "l2_test_flops": "attention_flops_per_token",
        "l2_test_compare": "compare_variants",
        "l2_test_serving": "max_concurrent_requests",
    },
}


def _same(a, b):
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("lab", sorted(PLAIN_ARGUMENTS))
def test_no_answer_keyed_on_one_visible_argument_escapes_the_hidden_tests(lab):
    """For each visible call of a part and each of its arguments, a hidden call gives that
    argument the same value and has another right answer: an answer that returns the visible
    result whenever that one argument has its visible value (`{32: 8_589_934_592}.get(kv_heads,
    formula)`) fails a hidden test."""
    parts = {g: (name, None, None) for g, name in PLAIN_ARGUMENTS[lab].items()}
    details = {}
    run_solution(lab, parts, details=details)
    escapes = []
    for grade_id, made in details.items():
        visible = [(a, r) for a, r, hidden in made if not hidden]
        hidden = [(a, r) for a, r, hid in made if hid]
        assert visible and hidden, f"{lab} {grade_id}: no visible or no hidden call recorded"
        for arguments, result in visible:
            if len(arguments) < 2:
                continue  # one argument: its visible value's result is the right answer
            for name, value in arguments.items():
                if not any(
                    name in other and _same(other[name], value) and other_result != result
                    for other, other_result in hidden
                ):
                    escapes.append(f"{grade_id}: {name}={value!r}")
    assert not escapes, (
        f"{lab}: an answer keyed on one visible argument passes every hidden test: "
        f"{sorted(set(escapes))}"
    )


FAIRNESS = ("cascade", "combinations", "numpy")


@pytest.mark.parametrize("case", FAIRNESS)
@pytest.mark.parametrize("lab", LABS)
def test_fairness_cases_before_the_sandbox(lab, case):
    """tests/lab_cases' fairness cases run here, with no sandbox: every part expected to keep
    its points passes, every other fails. The sandboxed round trip (test_labs.py) grades the
    same cases for real (scores, feedback, the room, which holds far less than this process:
    an answer that uses a setup name the room lacks passes here only)."""
    fair_before_the_sandbox(lab, case)


@pytest.mark.parametrize("lab", LABS)
def test_more_fairness_cases_before_the_sandbox(lab):
    """The lab's further fairness cases (its module's tuple `more`), as above."""
    number = lab.rsplit("L", 1)[1]
    for case in getattr(importlib.import_module(f"lab_cases.l{number}"), "more", ()):
        fair_before_the_sandbox(lab, case)


def fair_before_the_sandbox(lab, case):
    number = lab.rsplit("L", 1)[1]
    cases = importlib.import_module(f"lab_cases.l{number}")
    from lab_cases import answer_cells

    released = nbformat.read(ROOT / "labs" / lab / f"{lab}.ipynb", as_version=4)
    submitted = answer_cells(getattr(cases, case)(released))
    answers = {grade_id: cell.source for grade_id, cell in submitted.items()}
    _, verdicts = run_solution(lab, {}, answers)
    want = {grade_id: score > 0 for grade_id, score in cases.expected[case].items()}
    got = {grade_id: verdict is None for grade_id, verdict in verdicts.items()}
    assert got == want, f"{lab} {case}: passed {got}, expected {want}; errors: {verdicts}"


WRITTEN = re.compile(r"(one|half a) point each for", re.IGNORECASE)
SCHEME = "**Marking scheme**"


def marking_scheme(nb):
    """The lines under "**Marking scheme**" in the notebook's written-answer (solution) cells."""
    lines = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and meta(cell).get("solution") and SCHEME in cell.source:
            lines += cell.source.split(SCHEME, 1)[1].split("\n")
    return [line.strip() for line in lines if len(line.strip()) > 30]


@pytest.mark.parametrize("lab", sorted(p.name for p in (ROOT / "labs").glob("LM10-L*")))
def test_released_rubrics_say_what_is_assessed_not_the_answer(lab):
    """A written part's marking scheme (what earns each point) lives in its solution cell, under
    "**Marking scheme**", which nbgrader replaces in the release; the prompt names the criteria
    only. The release holds none of the scheme's lines and no "one point each for ..." list."""
    source = nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    released = nbformat.read(ROOT / "labs" / lab / f"{lab}.ipynb", as_version=4)
    text = "\n".join(c.source for c in released.cells)
    leaked = [line for line in marking_scheme(source) if line in text]
    assert not leaked, f"labs/{lab} shows marking-scheme lines: {leaked[:3]}"
    given = [c.source[:80] for c in released.cells if WRITTEN.search(c.source)]
    assert not given, f"labs/{lab}: a prompt lists what earns each point: {given}"
