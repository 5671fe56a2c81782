"""Submissions of LM10-L2 (compare attention variants) for the grading round trip."""

from . import fill, solution_answers

LAB = "LM10-L2"


def correct(nb):
    return fill(nb, solution_answers(LAB))


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
    test: flops and compare fail as they would without the redefinition."""
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
        "l2_test_compare": 0.0,
        "l2_test_serving": 2.0,
    },
}


def delegate(nb):
    """The cache left to lmcourse.describe and the FLOPs to the setup's
    measured_attention_flops: those parts score 0, and so does the comparison, which calls the
    FLOP count; the parameters and the serving question, written by hand, keep their points."""
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
    "l2_test_compare": 0.0,
    "l2_test_serving": 2.0,
}
