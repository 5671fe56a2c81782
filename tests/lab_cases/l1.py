"""Submissions of LM10-L1 (count the parameters) for the grading round trip."""

from . import fill, replaced, solution_answers

LAB = "LM10-L1"


def correct(nb):
    return fill(nb, solution_answers(LAB))


def alternatives(nb):
    """Correct answers written unlike the model solution: every count as a sum over a list of
    (inputs, outputs, bias) matrices, the attention counted head by head. Full marks."""
    return fill(
        nb,
        {
            "l1_gpt2_block": (
                "def gpt2_block(d):\n"
                "    linears = [(d, 3 * d), (d, d), (d, 4 * d), (4 * d, d)]  # all with biases\n"
                "    return sum(i * o + o for i, o in linears) + 2 * (d + d)\n"
            ),
            "l1_gpt2_model": (
                "def gpt2_model(d, layers, vocab, positions):\n"
                "    total = (vocab + positions) * d\n"
                "    for _ in range(layers):\n"
                "        total += gpt2_block(d)\n"
                "    return total + d + d\n"
            ),
            "l1_attention": (
                "def attention_parameters(d, heads, kv_heads, head_dim):\n"
                "    per_query_head = d * head_dim + head_dim * d  # query rows, output columns\n"
                "    per_kv_head = 2 * d * head_dim\n"
                "    return sum(per_query_head for _ in range(heads)) + kv_heads * per_kv_head\n"
            ),
            "l1_count": (
                "def count_parameters(config):\n"
                "    if config['ffn'] not in ('gelu', 'swiglu'):\n"
                "        raise ValueError(f\"unknown ffn {config['ffn']!r}: 'gelu' or 'swiglu'\")\n"
                "    if config['norm'] not in ('layer', 'rms'):\n"
                "        raise ValueError(f\"unknown norm {config['norm']!r}: 'layer' or 'rms'\")\n"
                "    d, heads = config['d'], config['heads']\n"
                "    kv, w = config.get('kv_heads', heads), config['d'] // config['heads']\n"
                "    bias = bool(config['bias'])\n"
                "    matrices = [(d, heads * w, bias), (d, kv * w, bias), (d, kv * w, bias),\n"
                "                (heads * w, d, bias)]\n"
                "    if config['ffn'] == 'gelu':\n"
                "        matrices += [(d, 4 * d, True), (4 * d, d, True)]\n"
                "    else:\n"
                "        h = config['hidden']\n"
                "        matrices += [(d, h, False), (d, h, False), (h, d, False)]\n"
                "    norm = d * (2 if config['norm'] == 'layer' else 1)\n"
                "    block = sum(i * o + (o if b else 0) for i, o, b in matrices) + 2 * norm\n"
                "    tables = config['vocab'] * d * (1 if config['tied'] else 2)\n"
                "    positions = config.get('positions', 0) * d\n"
                "    return config['layers'] * block + tables + positions + norm\n"
            ),
        },
    )


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
    widths fail; the model, which calls the block, is judged on what it adds to the blocks
    and keeps its points."""
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
        "l1_test_gpt2_model": 2.0,
        "l1_test_attention": 2.0,
        "l1_test_count": 4.0,
    },
}


def delegate(nb):
    """Parts 2 to 4 handed to what the tests compare against: the GPT-2 model built and counted
    with the setup's transformers_count, the attention layer built by transformers, the whole
    count left to lmcourse.describe. Those parts score 0; the block, counted by hand, keeps
    its points."""
    answers = solution_answers(LAB)
    answers["l1_gpt2_model"] = """
def gpt2_model(d, layers, vocab, positions):
    config = GPT2Config(n_embd=d, n_layer=layers, n_head=1, vocab_size=vocab, n_positions=positions)
    with torch.device("meta"):
        return transformers_count(GPT2LMHeadModel(config))
"""
    answers["l1_attention"] = """
def attention_parameters(d, heads, kv_heads, head_dim):
    config = LlamaConfig(hidden_size=d, num_attention_heads=heads, num_key_value_heads=kv_heads,
                         head_dim=head_dim)
    with torch.device("meta"):
        return transformers_count(LlamaAttention(config, layer_idx=0))
"""
    answers["l1_count"] = """
import lmcourse


def count_parameters(config):
    return lmcourse.describe(config)["total"]
"""
    return fill(nb, answers)


expected["delegate"] = {
    "l1_test_gpt2_block": 2.0,
    "l1_test_gpt2_model": 0.0,
    "l1_test_attention": 0.0,
    "l1_test_count": 0.0,
}


def mistakes(nb):
    """One catalogued slip per part (lmcourse.slips): the block without its biases, the model
    with its tied head counted again (its block written out, so the block's slip stays its
    own), attention with keys and values as wide as the queries, the tied head counted twice
    in the general count. Every part scores 0 and its feedback names the slip."""
    answers = solution_answers(LAB)
    answers["l1_gpt2_block"] = """
def gpt2_block(d):
    return d * 3 * d + d * d + d * 4 * d + 4 * d * d + 2 * 2 * d
"""
    answers["l1_gpt2_model"] = """
def gpt2_model(d, layers, vocab, positions):
    block = 12 * d * d + 13 * d
    return layers * block + 2 * vocab * d + positions * d + 2 * d
"""
    answers["l1_attention"] = """
def attention_parameters(d, heads, kv_heads, head_dim):
    return 4 * d * heads * head_dim
"""
    answers["l1_count"] = replaced(
        answers["l1_count"], 'vocab * d * (1 if config["tied"] else 2)', "vocab * d * 2"
    )
    return fill(nb, answers)


expected["mistakes"] = {
    "l1_test_gpt2_block": 0.0,
    "l1_test_gpt2_model": 0.0,
    "l1_test_attention": 0.0,
    "l1_test_count": 0.0,
}
slips = {
    "l1_test_gpt2_block": "every bias left out (3d + d in attention, 4d + d in the MLP)?",
    "l1_test_gpt2_model": "the output head counted although it is tied to the token table?",
    "l1_test_attention": (
        "keys and values given a column per query head: they have kv_heads x head_dim?"
    ),
    "l1_test_count": "the output head counted although the config ties it to the token table?",
}


def cascade(nb):
    """A slip in Part 1 (every bias left out of the block) and the solution's model, which calls
    the block: the block loses its points and its feedback names the slip; the model, which
    meets the right block counts while its test runs (lmcourse.standins), keeps its points."""
    answers = solution_answers(LAB)
    answers["l1_gpt2_block"] = """
def gpt2_block(d):
    return 12 * d * d + 4 * d
"""
    return fill(nb, answers)


def combinations(nb):
    """Key and value biases as wide as the queries (d each), right whenever every query head
    has its own key-value head: only a hidden configuration with biases AND shared key-value
    heads tells it apart. Only the general count loses its points."""
    answers = solution_answers(LAB)
    answers["l1_count"] = replaced(
        answers["l1_count"], "heads * head_dim + 2 * kv_heads * head_dim + d", "4 * d"
    )
    return fill(nb, answers)


def numpy(nb):
    """Every count as a numpy or torch integer (np.prod, a tensor's sum): the prompt asks for
    the number, so an integer of any of these types is the answer. Full marks."""
    return fill(
        nb,
        {
            "l1_gpt2_block": (
                "import numpy as np\n\n\n"
                "def gpt2_block(d):\n"
                "    shapes = [(d, 3 * d), (3 * d,), (d, d), (d,), (d, 4 * d), (4 * d,),\n"
                "              (4 * d, d), (d,), (d,), (d,), (d,), (d,)]\n"
                "    return np.sum([np.prod(s) for s in shapes])\n"
            ),
            "l1_gpt2_model": (
                "def gpt2_model(d, layers, vocab, positions):\n"
                "    tables = np.int64((vocab + positions + 2) * d)\n"
                "    return np.int64(layers) * gpt2_block(d) + tables\n"
            ),
            "l1_attention": (
                "def attention_parameters(d, heads, kv_heads, head_dim):\n"
                "    widths = torch.tensor([heads, kv_heads, kv_heads, heads]) * head_dim\n"
                "    return (d * widths).sum()\n"
            ),
            "l1_count": replaced(
                solution_answers(LAB)["l1_count"],
                "return layers * block + tables + norm",
                "return np.int64(layers) * block + tables + norm",
            ),
        },
    )


expected["cascade"] = {
    "l1_test_gpt2_block": 0.0,
    "l1_test_gpt2_model": 2.0,
    "l1_test_attention": 2.0,
    "l1_test_count": 4.0,
}
expected["combinations"] = {
    "l1_test_gpt2_block": 2.0,
    "l1_test_gpt2_model": 2.0,
    "l1_test_attention": 2.0,
    "l1_test_count": 0.0,
}
expected["numpy"] = {
    "l1_test_gpt2_block": 2.0,
    "l1_test_gpt2_model": 2.0,
    "l1_test_attention": 2.0,
    "l1_test_count": 4.0,
}
KV_BIAS = (
    "key and value biases as wide as the queries: with fewer key-value heads they have "
    "kv_heads x head_dim entries each?"
)
# The slip each case's slipped part names.
named = {
    "cascade": {"l1_test_gpt2_block": slips["l1_test_gpt2_block"]},
    "combinations": {"l1_test_count": KV_BIAS},
}

more = ("cascade_raises", "cascade_alias")


def cascade_raises(nb):
    """Earlier parts that fail without a wrong number under later parts that call them: a block
    count as a float, an attention count that raises (never answered). The model calls the
    block, the general count calls attention_parameters: both meet the right values while
    their tests run and keep their points; the block and the attention lose only their own."""
    answers = solution_answers(LAB)
    answers["l1_gpt2_block"] = """
def gpt2_block(d):
    return 12.0 * d * d + 13 * d
"""
    answers["l1_attention"] = """
def attention_parameters(d, heads, kv_heads, head_dim):
    raise NotImplementedError("not yet")
"""
    answers["l1_count"] = replaced(
        answers["l1_count"],
        "attention = 2 * d * heads * head_dim + 2 * d * kv_heads * head_dim",
        "attention = attention_parameters(d, heads, kv_heads, head_dim)",
    )
    return fill(nb, answers)


def cascade_alias(nb):
    """One LayerNorm left out of the block (2d short), under a model that keeps the block
    function as a default argument, out of the stand-in's reach: the model is judged on what it
    adds to the student's own blocks and keeps its points, even on the hidden one-layer model,
    where 2d short is also what leaving out the final LayerNorm gives (the slip is Part 1's)."""
    answers = solution_answers(LAB)
    answers["l1_gpt2_block"] = """
def gpt2_block(d):
    return 12 * d * d + 11 * d
"""
    answers["l1_gpt2_model"] = """
def gpt2_model(d, layers, vocab, positions, block=gpt2_block):
    return layers * block(d) + vocab * d + positions * d + 2 * d
"""
    return fill(nb, answers)


expected["cascade_raises"] = {
    "l1_test_gpt2_block": 0.0,
    "l1_test_gpt2_model": 2.0,
    "l1_test_attention": 0.0,
    "l1_test_count": 4.0,
}
expected["cascade_alias"] = {
    "l1_test_gpt2_block": 0.0,
    "l1_test_gpt2_model": 2.0,
    "l1_test_attention": 2.0,
    "l1_test_count": 4.0,
}
named["cascade_alias"] = {
    "l1_test_gpt2_block": ("one LayerNorm instead of two, or the LayerNorms without their shift?")
}
