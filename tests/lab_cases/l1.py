"""Submissions of LM10-L1 (count the parameters) for the grading round trip."""

from lab_cases import fill, solution_answers

LAB = "LM10-L1"


def correct(nb):
    return fill(nb, solution_answers(LAB))


def mistake(nb):
    """Forgets the final LayerNorm of the whole model; every other answer is right."""
    answers = solution_answers(LAB)
    answers["l1_gpt2_model"] = '''
def gpt2_model(d, layers, vocab, positions):
    return layers * gpt2_block(d) + vocab * d + positions * d
'''
    return fill(nb, answers)


def hardcoded(nb):
    """Looks up the lesson's figures that the visible tests ask for."""
    return fill(nb, {
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
    })


expected = {
    "mistake": {"l1_test_gpt2_block": 2.0, "l1_test_gpt2_model": 0.0, "l1_test_attention": 2.0,
                "l1_test_count": 4.0},
}
