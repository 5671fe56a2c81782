"""Submissions of LM10-L6 (count what is stored and what is used) for the grading round trip."""

from . import fill, replaced, solution_answers

LAB = "LM10-L6"


def correct(nb):
    return fill(nb, solution_answers(LAB))


def alternatives(nb):
    """Correct answers written unlike the model solution: the width rounded with math.ceil, the
    mixture counted layer by layer, the cache summed layer by layer, a field looked up with `in
    config` (the sixty-third hub tester: TypeError in the room, fixed). Full marks."""
    return fill(
        nb,
        {
            "l6_ffn_width": (
                "import math\n"
                "\n"
                "\n"
                "def ffn_width(d, multiple_of, multiplier=None):\n"
                "    hidden = (8 * d) // 3  # two thirds of 4d, truncated\n"
                "    if multiplier is not None:\n"
                "        hidden = int(hidden * multiplier)\n"
                "    return math.ceil(hidden / multiple_of) * multiple_of\n"
            ),
            "l6_moe": (
                "def moe_parameters(config):\n"
                "    d = config.hidden_size\n"
                "    untied = 1 if config.tie_word_embeddings else 2\n"
                "    total = active = untied * config.vocab_size * d + d  # tables, final norm\n"
                "    expert = 3 * d * config.moe_intermediate_size\n"
                "    for layer in range(config.num_hidden_layers):\n"
                "        common = attention_parameters(config) + 2 * d\n"
                "        if layer < config.first_k_dense_replace:\n"
                "            common += 3 * d * config.intermediate_size\n"
                "            total, active = total + common, active + common\n"
                "            continue\n"
                "        common += config.n_routed_experts * d  # the router\n"
                "        common += config.n_shared_experts * expert\n"
                "        total += common + config.n_routed_experts * expert\n"
                "        active += common + config.num_experts_per_tok * expert\n"
                "    return total, active\n"
            ),
            "l6_cache": (
                "def head_width(config):\n"
                "    width = getattr(config, 'head_dim', None)\n"
                "    if width:\n"
                "        return width\n"
                "    return config.hidden_size // config.num_attention_heads\n"
                "\n"
                "\n"
                "def cache_bytes_per_token(config, kv_bytes=2):\n"
                "    if 'kv_lora_rank' in config:  # it iterates its keys, in the room too\n"
                "        numbers = config.kv_lora_rank + config.qk_rope_head_dim\n"
                "    else:\n"
                "        kv = getattr(config, 'num_key_value_heads', None)\n"
                "        kv = kv or config.num_attention_heads\n"
                "        numbers = 2 * kv * head_width(config)\n"
                "    return sum(numbers * kv_bytes for _ in range(config.num_hidden_layers))\n"
            ),
            "l6_window": (
                "def cache_bytes(config, tokens, kv_bytes=2):\n"
                "    layers = config.num_hidden_layers\n"
                "    per_layer = cache_bytes_per_token(config, kv_bytes) // layers\n"
                "    window = getattr(config, 'sliding_window', None)\n"
                "    kinds = getattr(config, 'layer_types', None)\n"
                "    held = 0\n"
                "    for layer in range(layers):\n"
                "        kind = kinds[layer] if kinds else 'sliding_attention'\n"
                "        slides = bool(window) and kind == 'sliding_attention'\n"
                "        held += min(tokens, window - 1) if slides else tokens\n"
                "    return held * per_layer\n"
            ),
        },
    )


def mistake(nb):
    """Sliding windows ignored: every layer keeps every token. Parts 1 to 3 are right."""
    answers = solution_answers(LAB)
    answers["l6_window"] = replaced(
        answers["l6_window"],
        'if kind == "sliding_attention" and window else tokens',
        'if kind == "never" else tokens',
    )
    return fill(nb, answers)


def hardcoded(nb):
    """The values the visible tests expect, looked up by a field that identifies each example."""
    answers = solution_answers(LAB)
    answers["l6_ffn_width"] = (
        "def ffn_width(d, multiple_of, multiplier=None):\n"
        "    return {256: 11008, 1024: 14336}[multiple_of]\n"
    )
    answers["l6_moe"] = "def moe_parameters(config):\n    return 671_026_404_352, 37_552_282_624\n"
    answers["l6_cache"] = (
        "def head_width(config):\n"
        "    return 128\n\n\n"
        "def cache_bytes_per_token(config, kv_bytes=2):\n"
        "    return {32: 524_288, 126: 516_096, 61: 70_272, 2: 256}[config.num_hidden_layers]\n"
    )
    answers["l6_window"] = (
        "def cache_bytes(config, tokens, kv_bytes=2):\n"
        "    return {32_768: 4095 * 131_072, 10: 1664}.get(tokens, 0)\n"
    )
    return fill(nb, answers)


def refpatch(nb):
    """The shared experts left out of the count, and reference_parameters, the setup cell's
    reference, redefined to agree. The grader defines the reference again before each test, so
    Part 2 fails as it would without the redefinition."""
    answers = solution_answers(LAB)
    answers["l6_moe"] = (
        replaced(
            answers["l6_moe"],
            "total = tables + blocks + dense + router + shared + routed + d",
            "total = tables + blocks + dense + router + routed + d",
        )
        + """


def reference_parameters(config):
    return moe_parameters(config)
"""
    )
    return fill(nb, answers)


expected = {
    "mistake": {
        "l6_test_ffn_width": 2.0,
        "l6_test_moe": 4.0,
        "l6_test_cache": 3.0,
        "l6_test_window": 0.0,
    },
    "refpatch": {
        "l6_test_ffn_width": 2.0,
        "l6_test_moe": 0.0,
        "l6_test_cache": 3.0,
        "l6_test_window": 2.0,
    },
}


def delegate(nb):
    """The mixture counted by the setup's reference_parameters, the cache per token read off
    lmcourse.describe and the windowed cache off lmcourse.cache_bytes: Parts 2 to 4 score 0;
    the feed-forward width, computed by hand, keeps its points."""
    answers = solution_answers(LAB)
    answers["l6_moe"] = """
def moe_parameters(config):
    return reference_parameters(config)
"""
    answers["l6_cache"] = """
import lmcourse


def head_width(config):
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def cache_bytes_per_token(config, kv_bytes=2):
    return lmcourse.describe(config, kv_bytes=kv_bytes)["cache_bytes_per_token"]
"""
    answers["l6_window"] = """
def cache_bytes(config, tokens, kv_bytes=2):
    return lmcourse.cache_bytes(config, tokens, kv_bytes=kv_bytes)
"""
    return fill(nb, answers)


expected["delegate"] = {
    "l6_test_ffn_width": 2.0,
    "l6_test_moe": 0.0,
    "l6_test_cache": 0.0,
    "l6_test_window": 0.0,
}


def mistakes(nb):
    """One catalogued slip per part: the width rounded down, the shared experts left out, the
    latent cache without its rotary part, a window of sliding_window tokens kept. Every part
    scores 0 and its feedback names the slip."""
    answers = solution_answers(LAB)
    answers["l6_ffn_width"] = replaced(
        answers["l6_ffn_width"],
        "multiple_of * ((hidden + multiple_of - 1) // multiple_of)",
        "multiple_of * (hidden // multiple_of)",
    )
    answers["l6_moe"] = replaced(
        answers["l6_moe"], "* config.n_shared_experts", "* 0  # shared experts forgotten"
    )
    answers["l6_cache"] = replaced(
        answers["l6_cache"],
        "per_layer = config.kv_lora_rank + config.qk_rope_head_dim",
        "per_layer = config.kv_lora_rank",
    )
    answers["l6_window"] = replaced(
        answers["l6_window"], "min(tokens, window - 1)", "min(tokens, window)"
    )
    return fill(nb, answers)


expected["mistakes"] = {
    "l6_test_ffn_width": 0.0,
    "l6_test_moe": 0.0,
    "l6_test_cache": 0.0,
    "l6_test_window": 0.0,
}
slips = {
    "l6_test_ffn_width": "rounded down: the width rounds up to the next multiple?",
    "l6_test_moe": "the shared experts left out?",
    "l6_test_cache": "the latent cache without its rotary part (qk_rope_head_dim)?",
    "l6_test_window": (
        "a window of sliding_window tokens kept: the current token is one of them, so "
        "sliding_window - 1 earlier ones are kept?"
    ),
}


def cascade(nb):
    """A slip in Part 3 (the latent cache without its rotary part) under the solution's
    windowed cache, which calls it: Part 3 loses its points and its feedback names the slip;
    the windowed cache is judged on the tokens each layer keeps and keeps its points."""
    answers = solution_answers(LAB)
    answers["l6_cache"] = replaced(
        answers["l6_cache"],
        "per_layer = config.kv_lora_rank + config.qk_rope_head_dim",
        "per_layer = config.kv_lora_rank",
    )
    return fill(nb, answers)


def combinations(nb):
    """The head width always hidden_size // num_attention_heads, right wherever a config's
    head_dim agrees (every visible one); only a hidden configuration that sets another head_dim
    finds it. Only Part 3 loses its points (Part 4, which calls it, is judged on its own)."""
    answers = solution_answers(LAB)
    answers["l6_cache"] = replaced(
        answers["l6_cache"],
        'return getattr(config, "head_dim", None) or config.hidden_size'
        " // config.num_attention_heads",
        "return config.hidden_size // config.num_attention_heads",
    )
    return fill(nb, answers)


def numpy(nb):
    """Every count as a numpy or torch integer: the prompt asks for integers, so any of these
    types is the answer. Full marks."""
    answers = solution_answers(LAB)
    answers["l6_ffn_width"] = replaced(
        answers["l6_ffn_width"],
        "return multiple_of * ((hidden + multiple_of - 1) // multiple_of)",
        "return np.int64(multiple_of) * ((hidden + multiple_of - 1) // multiple_of)",
    )
    answers["l6_ffn_width"] = "import numpy as np\n\n\n" + answers["l6_ffn_width"]
    answers["l6_moe"] = replaced(
        answers["l6_moe"], "return total, active", "return np.int64(total), torch.tensor(active)"
    )
    answers["l6_window"] = replaced(
        answers["l6_window"], "return sum(held) * per_layer", "return np.sum(held) * per_layer"
    )
    return fill(nb, answers)


expected["cascade"] = {
    "l6_test_ffn_width": 2.0,
    "l6_test_moe": 4.0,
    "l6_test_cache": 0.0,
    "l6_test_window": 2.0,
}
expected["combinations"] = {
    "l6_test_ffn_width": 2.0,
    "l6_test_moe": 4.0,
    "l6_test_cache": 0.0,
    "l6_test_window": 2.0,
}
expected["numpy"] = {
    "l6_test_ffn_width": 2.0,
    "l6_test_moe": 4.0,
    "l6_test_cache": 3.0,
    "l6_test_window": 2.0,
}
named = {"cascade": {"l6_test_cache": slips["l6_test_cache"]}}


def cache_float(nb):
    """Part 3 returns its bytes as a float (a true division left in): Part 3 loses its points
    on the type; the windowed cache, which calls it and so returns a float too, is judged on
    the tokens each layer keeps and keeps its points."""
    answers = solution_answers(LAB)
    answers["l6_cache"] = replaced(
        answers["l6_cache"],
        "return config.num_hidden_layers * per_layer * kv_bytes",
        "return config.num_hidden_layers * per_layer * kv_bytes / 1",
    )
    return fill(nb, answers)


def active_without_tables(nb):
    """Both token tables left out of the active count (a token reads one row of the input
    table, and the lab counts both in full): only the mixture part loses its points, and its
    feedback names the slip."""
    answers = solution_answers(LAB)
    answers["l6_moe"] = replaced(
        answers["l6_moe"],
        "active = total - routed + routed",
        "active = total - tables - routed + routed",
    )
    return fill(nb, answers)


def bytes_ignored(nb):
    """kv_bytes ignored (2 bytes a number always): right at the default, which every visible
    check uses; a hidden configuration at 4 bytes finds it, where 'keys only' gives the same
    number, so the two are named as alternatives. Only Part 3 loses its points."""
    answers = solution_answers(LAB)
    answers["l6_cache"] = replaced(
        answers["l6_cache"],
        "return config.num_hidden_layers * per_layer * kv_bytes",
        "return config.num_hidden_layers * per_layer * 2",
    )
    return fill(nb, answers)


more = ("cache_float", "active_without_tables", "bytes_ignored")
FULL = {"l6_test_ffn_width": 2.0, "l6_test_moe": 4.0, "l6_test_cache": 3.0, "l6_test_window": 2.0}
expected["cache_float"] = dict(FULL, l6_test_cache=0.0)
expected["active_without_tables"] = dict(FULL, l6_test_moe=0.0)
expected["bytes_ignored"] = dict(FULL, l6_test_cache=0.0)
named["active_without_tables"] = {
    "l6_test_moe": "both token tables left out of the active count: the lab counts them in full?"
}
named["bytes_ignored"] = {
    "l6_test_cache": "kv_bytes ignored: 2 bytes a number whatever it is given?"
}
