"""Submissions of LM10-L1 (count the parameters) for the grading round trip."""

from . import fill, solution_answers

LAB = "LM10-L1"


def correct(nb):
    return fill(nb, solution_answers(LAB))


def mistake(nb):
    """Forgets the final LayerNorm of the whole model; every other answer is right."""
    answers = solution_answers(LAB)
    answers["l1_gpt2_model"] = """
def gpt2_model(d, layers, vocab, positions):
    return layers * gpt2_block(d) + vocab * d + positions * d
"""
    return fill(nb, answers)


def hardcoded(nb):
    """Looks up the lesson's figures that the visible tests ask for."""
    return fill(
        nb,
        {
            "l1_gpt2_block": "def gpt2_block(d):\n    return 7_087_872\n",
            "l1_gpt2_model": (
                "def gpt2_model(d, layers, vocab, positions):\n    return 124_439_808\n"
            ),
            "l1_attention": (
                "def attention_parameters(d, heads, kv_heads, head_dim):\n"
                "    return 2_621_440 if kv_heads == 4 else 4 * 1_024**2\n"
            ),
            "l1_count": (
                "def count_parameters(config):\n"
                "    if config['ffn'] not in ('gelu', 'swiglu'):\n"
                "        raise ValueError('ffn')\n"
                "    if config['norm'] not in ('layer', 'rms'):\n"
                "        raise ValueError('norm')\n"
                "    if config['ffn'] == 'gelu':\n"
                "        return 124_439_808\n"
                "    return 6_738_415_616 - (805_306_368 if config.get('kv_heads') == 8 else 0)\n"
            ),
        },
    )


def refpatch(nb):
    """A block formula right only at width 768 (its bias term is 13 x 768 whatever the width),
    and transformers_count, the setup cell's reference, redefined to return that formula for
    a GPT-2 block. The grader defines the reference again before each test: the block's hidden
    widths fail, and so does the model built from the block."""
    answers = solution_answers(LAB)
    answers["l1_gpt2_block"] = """
def gpt2_block(d):
    return 12 * d * d + 13 * 768


def transformers_count(module):
    if isinstance(module, GPT2Block):
        return gpt2_block(module.attn.embed_dim)
    return sum(p.numel() for p in module.parameters())
"""
    return fill(nb, answers)


expected = {
    "mistake": {
        "l1_test_gpt2_block": 2.0,
        "l1_test_gpt2_model": 0.0,
        "l1_test_attention": 2.0,
        "l1_test_count": 4.0,
    },
    "refpatch": {
        "l1_test_gpt2_block": 0.0,
        "l1_test_gpt2_model": 0.0,
        "l1_test_attention": 2.0,
        "l1_test_count": 4.0,
    },
}
