"""A synthetic class of LM10-L2 for the instructor's report (tests/test_class_report.py): 77
submissions a real class could hand in, and two students who handed in nothing.

Every catalogued slip of the lab (lmcourse.slips, the parts l2_test_attention, _cache, _flops
and _serving) is made by a few students, each by a different number of students, so that the
report's "most common first" has an order to get right; beside them correct answers (the model
solution and other ways), late ones, blank and broken notebooks, submissions the grader flags,
a delegated and a hard-coded one, the round trip's one-mistake case, and two that put HTML
where the instructor's page shows text (a student id, an error message).

`build(released)` returns {student: (notebook or None, files)}: the notebook to hand in as
<lab>.ipynb (None: hand in only `files`, name -> text), and `DESIGN`, what each student did,
for the test's own expectations: student -> {"case": ..., "slip": (grade_id, sentence) or None,
"late": bool}.
"""

import copy

from . import fill, replaced, solution_answers
from . import l2 as cases

LAB = "LM10-L2"

# Each slip of the catalogue as the answer a student would write, and how many students write
# it (all counts differ within a part).
SLIPS = {
    "l2_test_attention": [
        (
            "keys and values as d x d whatever kv_heads: they have kv_heads x head_dim columns?",
            4,
            (
                "l2_attention",
                "def attention_parameters(d, heads, kv_heads):\n    return 4 * d * d\n",
            ),
        ),
        (
            "keys and values given kv_heads x d columns, not kv_heads x head_dim?",
            2,
            (
                "l2_attention",
                "def attention_parameters(d, heads, kv_heads):\n"
                "    return 2 * d * d + 2 * d * kv_heads * d\n",
            ),
        ),
    ],
    "l2_test_cache": [
        (
            "numbers counted, not bytes: times bytes_per_number?",
            5,
            (
                "l2_cache",
                "def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):\n"
                "    return 2 * layers * kv_heads * head_dim\n",
            ),
        ),
        (
            "keys only: the cache holds the values too?",
            3,
            (
                "l2_cache",
                "def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):\n"
                "    return layers * kv_heads * head_dim * bytes_per_number\n",
            ),
        ),
        (
            "one layer only: every layer keeps its own keys and values?",
            2,
            (
                "l2_cache",
                "def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):\n"
                "    return 2 * kv_heads * head_dim * bytes_per_number\n",
            ),
        ),
        (
            "bytes_per_number ignored: 2 bytes a number whatever it is given?",
            4,
            (
                "l2_cache",
                "def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):\n"
                "    return 2 * layers * kv_heads * head_dim * 2\n",
            ),
        ),
        (
            "bits, not bytes?",
            1,
            (
                "l2_cache",
                "def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):\n"
                "    return 2 * layers * kv_heads * head_dim * bytes_per_number * 8\n",
            ),
        ),
    ],
    "l2_test_flops": [
        (
            "a multiply-add counted as one FLOP: it is two?",
            4,
            (
                "l2_flops",
                "def attention_flops_per_token(d, heads, kv_heads, layers, context):\n"
                "    head_dim = d // heads\n"
                "    weights = 2 * d * d + 2 * d * kv_heads * head_dim\n"
                "    return layers * (weights + 2 * heads * head_dim * context)\n",
            ),
        ),
        (
            "scores counted per key-value head: every query head scores every position?",
            3,
            (
                "l2_flops",
                "def attention_flops_per_token(d, heads, kv_heads, layers, context):\n"
                "    head_dim = d // heads\n"
                "    weights = 2 * d * d + 2 * d * kv_heads * head_dim\n"
                "    return layers * (2 * weights + 4 * kv_heads * head_dim * context)\n",
            ),
        ),
        (
            "one of the two products with the context (scores, weighted values) left out?",
            2,
            (
                "l2_flops",
                "def attention_flops_per_token(d, heads, kv_heads, layers, context):\n"
                "    head_dim = d // heads\n"
                "    weights = 2 * d * d + 2 * d * kv_heads * head_dim\n"
                "    return layers * (2 * weights + 2 * heads * head_dim * context)\n",
            ),
        ),
        (
            "the four projections left out?",
            1,
            (
                "l2_flops",
                "def attention_flops_per_token(d, heads, kv_heads, layers, context):\n"
                "    return layers * 4 * heads * (d // heads) * context\n",
            ),
        ),
        (
            "one layer only?",
            5,
            (
                "l2_flops",
                "def attention_flops_per_token(d, heads, kv_heads, layers, context):\n"
                "    head_dim = d // heads\n"
                "    weights = 2 * d * d + 2 * d * kv_heads * head_dim\n"
                "    return 2 * weights + 4 * heads * head_dim * context\n",
            ),
        ),
    ],
    "l2_test_serving": [
        ("rounded up: only whole requests fit?", 3, None),  # built from the solution below
        (
            "the weights' memory not taken off the GPU's?",
            1,
            (
                "l2_serving",
                "def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token,\n"
                "                            tokens_per_request):\n"
                "    return gpu_bytes // (cache_bytes_per_token * tokens_per_request)\n",
            ),
        ),
        (
            "a negative count when the weights alone do not fit (int() of a negative share): "
            "never below 0?",
            2,
            (
                "l2_serving",
                "def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token,\n"
                "                            tokens_per_request):\n"
                "    return int((gpu_bytes - weight_bytes) / (cache_bytes_per_token * "
                "tokens_per_request))\n",
            ),
        ),
        (
            "a negative count when the weights alone do not fit (floor division of a negative "
            "free memory): never below 0?",
            4,
            (
                "l2_serving",
                "def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token,\n"
                "                            tokens_per_request):\n"
                "    return (gpu_bytes - weight_bytes) // (cache_bytes_per_token * "
                "tokens_per_request)\n",
            ),
        ),
    ],
}

# Slips that give the same wrong value on the visible test that fails first, so that the
# report names both for a student who made either (bytes_per_number is 2 there; the four
# projections cost as much as the two products with the context at a context of 2d).
SAME_VALUE = {
    "numbers counted, not bytes: times bytes_per_number?": "keys only: the cache holds the "
    "values too?",
    "a multiply-add counted as one FLOP: it is two?": "the four projections left out?",
}
SAME_VALUE |= {b: a for a, b in SAME_VALUE.items()}

LATE = 4  # correct answers handed in after the due date (and one slip, below)
CORRECT = 14
TIMESTAMP = "2026-11-20 12:00:00.000000 UTC"  # before the due date the test sets
LATE_TIMESTAMP = "2026-11-23 09:30:00.000000 UTC"
HOSTILE_ID = "<img src=x onerror=alert(1)>"
HOSTILE_MESSAGE = "<script>alert(2)</script><a href='javascript:alert(3)'>x</a>"
MISSING = ("zz-missing-1", "zz-missing-2")  # in the gradebook, nothing handed in


def _answer(grade_id, edit):
    answers = solution_answers(LAB)
    if edit is None:  # requests rounded up
        answers["l2_serving"] = replaced(
            answers["l2_serving"],
            "return free // (cache_bytes_per_token * tokens_per_request)",
            "return -(-free // (cache_bytes_per_token * tokens_per_request))",
        )
    else:
        answers[edit[0]] = edit[1]
    return answers


def build(released):
    """{student: (notebook or None, files)} and DESIGN (module docstring)."""
    class_, design = {}, {}

    def add(student, nb, case, slip=None, late=False, files=None):
        stamp = LATE_TIMESTAMP if late else TIMESTAMP
        class_[student] = (nb, {"timestamp.txt": stamp, **(files or {})})
        design[student] = {"case": case, "slip": slip, "late": late}

    fresh = lambda: copy.deepcopy(released)  # noqa: E731
    for i in range(CORRECT):
        add(f"correct-{i:02d}", cases.correct(fresh()), "correct")
    for i in range(2):
        add(f"another-way-{i}", cases.alternatives(fresh()), "correct")
    for i in range(LATE):
        add(f"late-{i}", cases.correct(fresh()), "correct", late=True)
    for grade_id, slips in SLIPS.items():
        for number, (sentence, count, edit) in enumerate(slips):
            answers = _answer(grade_id, edit)
            for i in range(count):
                student = f"slip-{grade_id[8:]}-{number}-{i}"
                late = grade_id == "l2_test_cache" and number == 0 and i == 0
                add(student, fill(fresh(), answers), "slip", (grade_id, sentence), late)
    add("blank-0", fresh(), "blank")
    add("blank-1", fresh(), "blank")
    add("broken-json", None, "broken", files={f"{LAB}.ipynb": '{"cells": [ not json'})
    add("broken-empty", None, "broken", files={"notes.txt": "forgot the notebook"})
    flops_slip = SLIPS["l2_test_flops"][1][0]  # refpatch's FLOPs count scores per KV head
    add("flag-refpatch", cases.refpatch(fresh()), "flagged", ("l2_test_flops", flops_slip))
    answers = solution_answers(LAB)
    answers["l2_serving"] += "\nimport os\nprint(os.listdir('.'))\n"
    peek = fill(fresh(), answers)
    add("flag-files", peek, "flagged")
    add("delegate", cases.delegate(fresh()), "delegate")
    add("hardcoded", cases.hardcoded(fresh()), "hardcoded")
    floor = SLIPS["l2_test_serving"][3][0]  # the one mistake: floor division left negative
    add("one-mistake", cases.mistake(fresh()), "mistake", ("l2_test_serving", floor))
    # What reaches the instructor's page from a student: an id and an error message in HTML.
    add(HOSTILE_ID, cases.correct(fresh()), "correct")
    answers = solution_answers(LAB)
    answers["l2_serving"] = (
        "def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token,\n"
        "                            tokens_per_request):\n"
        f"    raise ValueError({HOSTILE_MESSAGE!r})\n"
    )
    add("hostile-message", fill(fresh(), answers), "wrong")
    return class_, design
