"""Submissions of LM10-L2 (compare attention variants) for the grading round trip."""

from . import fill, replaced, solution_answers

LAB = "LM10-L2"


def correct(nb):
    return fill(nb, solution_answers(LAB))


def alternatives(nb):
    """Correct answers written unlike the model solution: each projection counted by itself,
    the cache summed layer by layer, the FLOPs matrix product by matrix product, the table
    built by a comprehension, the requests by divmod. Full marks."""
    return fill(
        nb,
        {
            "l2_attention": (
                "def attention_parameters(d, heads, kv_heads):\n"
                "    head_dim = d // heads\n"
                "    query = output = d * heads * head_dim\n"
                "    key = value = d * kv_heads * head_dim\n"
                "    return query + key + value + output\n"
            ),
            "l2_cache": (
                "def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):\n"
                "    per_layer = kv_heads * head_dim * bytes_per_number  # keys, then values\n"
                "    return sum(per_layer + per_layer for _ in range(layers))\n"
            ),
            "l2_flops": (
                "def attention_flops_per_token(d, heads, kv_heads, layers, context):\n"
                "    hd = d // heads\n"
                "    def matmul(m, k, n):\n"
                "        return 2 * m * k * n\n"
                "    one = (matmul(1, d, heads * hd) + 2 * matmul(1, d, kv_heads * hd)\n"
                "           + matmul(1, heads * hd, d))\n"
                "    one += heads * (matmul(1, hd, context) + matmul(1, context, hd))\n"
                "    return layers * one\n"
            ),
            "l2_compare": (
                "def compare_variants(d, heads, layers, gqa_kv_heads, context):\n"
                "    kinds = {'MHA': heads, 'GQA': gqa_kv_heads, 'MQA': 1}\n"
                "    return {\n"
                "        name: dict(\n"
                "            parameters=attention_parameters(d, heads, kv) * layers,\n"
                "            cache_bytes=cache_bytes_per_token(layers, kv, d // heads),\n"
                "            flops=attention_flops_per_token(d, heads, kv, layers, context),\n"
                "        )\n"
                "        for name, kv in kinds.items()\n"
                "    }\n"
            ),
            "l2_serving": (
                "def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token,\n"
                "                            tokens_per_request):\n"
                "    if weight_bytes >= gpu_bytes:\n"
                "        return 0\n"
                "    fits, _ = divmod(gpu_bytes - weight_bytes,\n"
                "                     cache_bytes_per_token * tokens_per_request)\n"
                "    return fits\n"
            ),
        },
    )


def mistake(nb):
    """Lets a request that does not fit count as negative capacity; everything else is right.

    The visible tests pass (both of their cases fit), the hidden test with weights larger than
    the GPU catches it: one cell of five loses its points.
    """
    answers = solution_answers(LAB)
    answers["l2_serving"] = """
def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request):
    return (gpu_bytes - weight_bytes) // (cache_bytes_per_token * tokens_per_request)
"""
    return fill(nb, answers)


def hardcoded(nb):
    """Returns the published Llama 3.1 8B figures the visible tests use."""
    return fill(
        nb,
        {
            "l2_attention": (
                "def attention_parameters(d, heads, kv_heads):\n"
                "    return {32: 4 * 4_096**2, 8: 41_943_040}[kv_heads]\n"
            ),
            "l2_cache": (
                "def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):\n"
                "    return 131_072 if layers == 32 else 36_864\n"
            ),
            "l2_flops": (
                "def attention_flops_per_token(d, heads, kv_heads, layers, context):\n"
                "    return {32: 8_589_934_592, 8: 6_979_321_856, 1: 6_509_559_808}[kv_heads]\n"
            ),
            "l2_compare": (
                "def compare_variants(d, heads, layers, gqa_kv_heads, context):\n"
                "    return {'MHA': {'parameters': 2_147_483_648, 'cache_bytes': 524_288,\n"
                "                    'flops': 8_589_934_592},\n"
                "            'GQA': {'parameters': 1_342_177_280, 'cache_bytes': 131_072,\n"
                "                    'flops': 6_979_321_856},\n"
                "            'MQA': {'parameters': 1_107_296_256, 'cache_bytes': 16_384,\n"
                "                    'flops': 6_509_559_808}}\n"
            ),
            "l2_serving": (
                "def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token,\n"
                "                            tokens_per_request):\n"
                "    return 59 if cache_bytes_per_token == 131_072 else 14\n"
            ),
        },
    )


def refpatch(nb):
    """FLOPs counted over the key-value heads (wrong), and measured_attention_flops, the setup
    cell's reference, redefined to agree. The grader defines the reference again before each
    test: flops fails as it would without the redefinition; the comparison, which reuses the
    FLOP count, is judged on how it assembles it and keeps its points."""
    answers = solution_answers(LAB)
    answers["l2_flops"] = """
def attention_flops_per_token(d, heads, kv_heads, layers, context):
    head_dim = d // heads
    projections = 2 * attention_parameters(d, heads, kv_heads)
    return layers * (projections + 2 * 2 * kv_heads * head_dim * context)


def measured_attention_flops(d, heads, kv_heads, context):
    return attention_flops_per_token(d, heads, kv_heads, 1, context)
"""
    return fill(nb, answers)


expected = {
    "mistake": {
        "l2_test_attention": 2.0,
        "l2_test_cache": 2.0,
        "l2_test_flops": 2.0,
        "l2_test_compare": 2.0,
        "l2_test_serving": 0.0,
    },
    "refpatch": {
        "l2_test_attention": 2.0,
        "l2_test_cache": 2.0,
        "l2_test_flops": 0.0,
        "l2_test_compare": 2.0,
        "l2_test_serving": 2.0,
    },
}


def delegate(nb):
    """The cache left to lmcourse.describe and the FLOPs to the setup's
    measured_attention_flops: those parts score 0; the comparison, which calls them, meets their
    right values while its test runs (lmcourse.standins) and, delegating nothing itself, keeps
    its points, as do the parameters and the serving question, written by hand."""
    answers = solution_answers(LAB)
    answers["l2_cache"] = """
import lmcourse


def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):
    model = dict(d=kv_heads * head_dim, layers=layers, vocab=1, heads=kv_heads, ffn="swiglu",
                 hidden=1, bias=False, norm="rms", tied=True)
    return lmcourse.describe(model, kv_bytes=bytes_per_number)["cache_bytes_per_token"]
"""
    answers["l2_flops"] = """
def attention_flops_per_token(d, heads, kv_heads, layers, context):
    return layers * measured_attention_flops(d, heads, kv_heads, context)
"""
    return fill(nb, answers)


expected["delegate"] = {
    "l2_test_attention": 2.0,
    "l2_test_cache": 0.0,
    "l2_test_flops": 0.0,
    "l2_test_compare": 2.0,
    "l2_test_serving": 2.0,
}


def mistakes(nb):
    """One catalogued slip per part: keys and values as d x d, the cache of one layer, a
    multiply-add counted as one FLOP (the projections written out, so the attention slip stays
    its own), requests rounded up. Those parts score 0 and their feedback names the slip; the
    comparison, which assembles the wrong parts' values correctly, keeps its points."""
    answers = solution_answers(LAB)
    answers["l2_attention"] = """
def attention_parameters(d, heads, kv_heads):
    return 4 * d * d
"""
    answers["l2_cache"] = """
def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):
    return 2 * kv_heads * head_dim * bytes_per_number
"""
    answers["l2_flops"] = """
def attention_flops_per_token(d, heads, kv_heads, layers, context):
    head_dim = d // heads
    parameters = 2 * d * d + 2 * d * kv_heads * head_dim
    return layers * (parameters + 2 * heads * head_dim * context)  # one FLOP per multiply-add
"""
    answers["l2_serving"] = replaced(
        answers["l2_serving"],
        "return free // (cache_bytes_per_token * tokens_per_request)",
        "return -(-free // (cache_bytes_per_token * tokens_per_request))",
    )
    return fill(nb, answers)


expected["mistakes"] = {
    "l2_test_attention": 0.0,
    "l2_test_cache": 0.0,
    "l2_test_flops": 0.0,
    "l2_test_compare": 2.0,
    "l2_test_serving": 0.0,
}
slips = {
    "l2_test_attention": (
        "keys and values as d x d whatever kv_heads: they have kv_heads x head_dim columns?"
    ),
    "l2_test_cache": "one layer only: every layer keeps its own keys and values?",
    "l2_test_flops": "a multiply-add counted as one FLOP: it is two?",
    "l2_test_serving": "rounded up: only whole requests fit?",
}


def cascade(nb):
    """A slip in Part 1 (keys and values as d x d whatever kv_heads) under the solution's FLOP
    count and comparison, which call it: Part 1 loses its points and its feedback names the
    slip; the FLOPs and the comparison, which meet the right parameter counts while their tests
    run (lmcourse.standins), keep theirs."""
    answers = solution_answers(LAB)
    answers["l2_attention"] = """
def attention_parameters(d, heads, kv_heads):
    return 4 * d * d
"""
    return fill(nb, answers)


def combinations(nb):
    """Requests counted with an unclamped int(): right whenever the weights fit, and when they
    exceed the GPU by less than one request (int() rounds -0.4 to 0); only a hidden GPU short
    by more than a request gets a negative number. Only the serving part loses its points."""
    answers = solution_answers(LAB)
    answers["l2_serving"] = """
def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request):
    return int((gpu_bytes - weight_bytes) / (cache_bytes_per_token * tokens_per_request))
"""
    return fill(nb, answers)


def numpy(nb):
    """Every number as a numpy or torch integer (the comparison's table too): the prompt asks
    for the numbers, so an integer of any of these types is the answer. Full marks."""
    answers = solution_answers(LAB)
    answers["l2_attention"] = """
import numpy as np


def attention_parameters(d, heads, kv_heads):
    head_dim = d // heads
    return np.int64(2 * d * d) + np.int64(2 * d * kv_heads * head_dim)
"""
    answers["l2_cache"] = """
def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):
    return torch.tensor([2, layers, kv_heads, head_dim, bytes_per_number]).prod()
"""
    answers["l2_serving"] = """
def max_concurrent_requests(gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request):
    free = np.maximum(np.int64(gpu_bytes) - np.int64(weight_bytes), 0)
    return free // np.int64(cache_bytes_per_token * tokens_per_request)
"""
    return fill(nb, answers)


expected["cascade"] = {
    "l2_test_attention": 0.0,
    "l2_test_cache": 2.0,
    "l2_test_flops": 2.0,
    "l2_test_compare": 2.0,
    "l2_test_serving": 2.0,
}
expected["combinations"] = {
    "l2_test_attention": 2.0,
    "l2_test_cache": 2.0,
    "l2_test_flops": 2.0,
    "l2_test_compare": 2.0,
    "l2_test_serving": 0.0,
}
expected["numpy"] = {
    "l2_test_attention": 2.0,
    "l2_test_cache": 2.0,
    "l2_test_flops": 2.0,
    "l2_test_compare": 2.0,
    "l2_test_serving": 2.0,
}
# The slip each case's slipped part names.
named = {
    "cascade": {"l2_test_attention": slips["l2_test_attention"]},
    "combinations": {
        "l2_test_serving": (
            "a negative count when the weights alone do not fit (int() of a negative share): "
            "never below 0?"
        )
    },
}

more = ("cascade_raises", "bytes_ignored")


def cascade_raises(nb):
    """Earlier parts that fail without a wrong integer under later parts that call them: the
    attention count as a float (d / heads), a cache count that raises (never answered). The
    FLOP count and the comparison call them, meet their right values while their tests run,
    and keep their points; the two earlier parts lose only their own."""
    answers = solution_answers(LAB)
    answers["l2_attention"] = """
def attention_parameters(d, heads, kv_heads):
    return 2 * d * d + 2 * d * kv_heads * d / heads
"""
    answers["l2_cache"] = """
def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):
    raise NotImplementedError("not yet")
"""
    return fill(nb, answers)


def bytes_ignored(nb):
    """The cache counted at 2 bytes a number whatever bytes_per_number says: right on the
    visible (bfloat16) inputs, found by a hidden float64 cache, and named as that slip, not as
    the keys-only slip that gives the same number at 4 bytes."""
    answers = solution_answers(LAB)
    answers["l2_cache"] = replaced(
        answers["l2_cache"],
        "return 2 * layers * kv_heads * head_dim * bytes_per_number",
        "return 2 * layers * kv_heads * head_dim * 2",
    )
    return fill(nb, answers)


expected["cascade_raises"] = {
    "l2_test_attention": 0.0,
    "l2_test_cache": 0.0,
    "l2_test_flops": 2.0,
    "l2_test_compare": 2.0,
    "l2_test_serving": 2.0,
}
expected["bytes_ignored"] = {
    "l2_test_attention": 2.0,
    "l2_test_cache": 0.0,
    "l2_test_flops": 2.0,
    "l2_test_compare": 2.0,
    "l2_test_serving": 2.0,
}
named["bytes_ignored"] = {
    "l2_test_cache": "bytes_per_number ignored: 2 bytes a number whatever it is given?"
}
