"""The slips: a wrong answer made by a common slip is named, a right one gets no hint.

The rules (grading/slips/l<n>.py) name slips in the grader's trusted process; lmcourse.slips,
which a student's kernel imports, only looks up the values the rules give on the visible
tests' inputs (lib/lmcourse/data/slips-l<n>.json, written by `make release`). The examples
that every slip must be named on are read off the labs themselves (grading/slips/table.py
runs each solution notebook and records the hints its tests ask for), never copied here.
"""

import base64
import copy
import json
import re
from pathlib import Path

import lmcourse
import nbformat
import numpy as np
import pytest
import torch
from lmcourse import configs
from lmcourse import slips as lookup

from grading import slips
from grading.slips import table

ROOT = Path(__file__).resolve().parents[2]


def named(part, got, want, **inputs):
    """The slips the rules' hint names, joined by " | " (None for no hint)."""
    text = slips.hint(part, got, want, **inputs)
    found = lookup.named(text, part)
    assert text.count(lookup.PREFIX) <= 1, f"{part}: one value, one hint line: {text!r}"
    assert bool(found) == bool(text), f"{part}: a hint that names no slip: {text!r}"
    return " | ".join(found) or None


def block(d):
    return 12 * d * d + 13 * d  # GPT-2: attention 4d^2 + 4d, MLP 8d^2 + 5d, two LayerNorms 4d


def test_the_right_answer_gets_no_hint():
    assert slips.hint("l1_test_gpt2_block", block(768), block(768), d=768) == ""
    assert slips.hint("l2_test_cache", 131_072, 131_072, layers=32, kv_heads=8, head_dim=128) == ""
    config = configs.load("DeepSeek-V3")
    right = lmcourse.describe(config)
    want = (right["total"], right["active"])
    assert slips.hint("l6_test_moe", want, want, config=config) == ""


def test_an_unknown_mistake_gets_the_plain_message():
    assert slips.hint("l1_test_gpt2_block", block(768) + 7, block(768), d=768) == ""
    assert slips.hint("l1_test_gpt2_block", "a string", block(768), d=768) == ""


@pytest.mark.parametrize(
    ("part", "got", "want", "inputs", "sentence"),
    [
        ("l1_test_gpt2_block", 12 * 768**2 + 4 * 768, block(768), dict(d=768), "every bias left"),
        ("l1_test_gpt2_block", 12 * 64**2 + 9 * 64, block(64), dict(d=64), "both LayerNorms"),
        ("l1_test_gpt2_block", block(64) + 9 * 64, block(64), dict(d=64), "counted twice"),
        (
            "l1_test_gpt2_model",
            124_439_808 + 50_257 * 768,
            124_439_808,
            dict(d=768, layers=12, vocab=50_257, positions=1_024),
            "tied to the token table",
        ),
        (
            "l1_test_attention",
            4 * 1_024 * 16 * 64,
            2_621_440,
            dict(d=1_024, heads=16, kv_heads=4, head_dim=64),
            "a column per query head",
        ),
        # heads x head_dim = 2,048 != d: queries and output d x d, keys and values 8 x 128 wide
        (
            "l1_test_attention",
            2 * 1_024 * 1_024 + 2 * 1_024 * 8 * 128,
            2 * 1_024 * 2_048 + 2 * 1_024 * 8 * 128,
            dict(d=1_024, heads=16, kv_heads=8, head_dim=128),
            "queries and output as d x d",
        ),
        (
            "l1_test_attention",
            2 * 1_024 * 1_024 + 2 * 1_024 * 8 * 64,
            2 * 1_024 * 2_048 + 2 * 1_024 * 8 * 128,
            dict(d=1_024, heads=16, kv_heads=8, head_dim=128),
            "head_dim taken as d // heads",
        ),
        (
            "l1_test_count",
            124_439_808 + 50_257 * 768,
            124_439_808,
            dict(config=dict(d=768, layers=12, vocab=50_257, heads=12, norm="layer", tied=True)),
            "ties it to the token table",
        ),
        (
            "l2_test_attention",
            4 * 4_096**2,
            41_943_040,
            dict(d=4_096, heads=32, kv_heads=8),
            "d x d whatever kv_heads",
        ),
        (
            "l2_test_cache",
            65_536,
            262_144,
            dict(layers=32, kv_heads=8, head_dim=128, bytes_per_number=4),
            "numbers counted, not bytes",
        ),
        ("l2_test_cache", 4_096, 131_072, dict(layers=32, kv_heads=8, head_dim=128), "one layer"),
        (
            "l2_test_flops",
            100_000,
            200_000,
            dict(d=512, heads=8, kv_heads=2, layers=3, context=100),
            "multiply-add counted as one",
        ),
        (
            "l2_test_serving",
            66,
            65,
            dict(
                gpu_bytes=80 * 2**30,
                weight_bytes=2 * 8_030_261_248,
                cache_bytes_per_token=131_072,
                tokens_per_request=8_192,
            ),
            "rounded up",
        ),
        ("l6_test_ffn_width", 11_008 - 256, 11_008, dict(d=4096, multiple_of=256), "rounded down"),
    ],
)
def test_each_catalogued_slip_is_named(part, got, want, inputs, sentence):
    found = named(part, got, want, **inputs)
    assert found and sentence in found, f"{part}: {got} named {found!r}, expected {sentence!r}"


def test_two_slips_of_one_value_are_alternatives_on_one_line():
    text = slips.hint("l2_test_cache", 65_536, 131_072, layers=32, kv_heads=8, head_dim=128)
    assert text == (
        f"\n{lookup.PREFIX}numbers counted, not bytes: times bytes_per_number?"
        f"{lookup.OR}keys only: the cache holds the values too?"
    )
    assert lookup.named(text, "l2_test_cache") == [
        "numbers counted, not bytes: times bytes_per_number?",
        "keys only: the cache holds the values too?",
    ]
    assert lookup.lines(f"off by 3{text}\nLikely slip: made up?", "l2_test_cache") == [text[1:]]


def test_slips_of_the_norms_are_read_off_the_tensors():
    torch.manual_seed(0)
    x, weight, bias = torch.randn(4, 6) * 0.3, torch.rand(6) + 0.5, torch.randn(6)
    eps = 0.5
    mean = x.mean(-1, keepdim=True)
    right = torch.nn.functional.layer_norm(x, (6,), weight, bias, eps)
    unbiased = (x - mean) / (x.var(-1, keepdim=True) + eps).sqrt() * weight + bias
    outside = (x - mean) / (x.var(-1, keepdim=True, unbiased=False).sqrt() + eps) * weight + bias
    inputs = dict(x=x, weight=weight, bias=bias, eps=eps)
    assert named("l3_test_layer_norm", unbiased, right, **inputs).startswith("the variance")
    assert named("l3_test_layer_norm", outside, right, **inputs).startswith("eps added outside")
    assert named("l3_test_layer_norm", right.clone(), right, **inputs) is None
    # a slip whose value lies within float32 rounding of the right one's scale, but which
    # the answer is far closer to: L3's hidden LayerNorm of [5, 512] inputs near 20 +- 30
    torch.manual_seed(11)
    wide, eps = torch.randn(5, 512) * 30 + 20, 1e-3
    right = torch.nn.functional.layer_norm(wide, (512,), weight=None, bias=None, eps=eps)
    centred = wide - wide.mean(-1, keepdim=True)
    outside = centred / (centred.pow(2).mean(-1, keepdim=True).sqrt() + eps)
    gap = (outside - right).abs().max().item()
    assert 1e-5 < gap < lookup.TOLERANCE * (1 + right.abs().max().item())
    inputs = dict(x=wide, weight=None, bias=None, eps=eps)
    assert named("l3_test_layer_norm", outside, right, **inputs).startswith("eps added outside")
    rms = torch.nn.functional.rms_norm(x, (6,), weight, 0.5)
    rms_outside = x / (x.pow(2).mean(-1, keepdim=True).sqrt() + 0.5) * weight
    assert named("l3_test_rms_norm", rms_outside, rms, x=x, weight=weight, eps=0.5).startswith(
        "eps added outside"
    )


def test_slips_of_the_mixture_and_the_caches_are_read_off_the_config():
    deepseek = configs.load("DeepSeek-V3")
    right = lmcourse.describe(deepseek)
    want = (right["total"], right["active"])
    d, moe_layers = (
        deepseek.hidden_size,
        deepseek.num_hidden_layers - deepseek.first_k_dense_replace,
    )
    shared = moe_layers * deepseek.n_shared_experts * 3 * d * deepseek.moe_intermediate_size
    got = (want[0] - shared, want[1] - shared)
    assert named("l6_test_moe", got, want, config=deepseek) == "the shared experts left out?"
    assert "every routed expert" in named("l6_test_moe", (want[0], want[0]), want, config=deepseek)
    no_input_table = (want[0], want[1] - deepseek.vocab_size * d)
    assert named("l6_test_moe", no_input_table, want, config=deepseek).startswith("the input table")
    cache = 2 * 61 * 576
    assert "rotary part" in named("l6_test_cache", 2 * 61 * 512, cache, config=deepseek)
    mistral = configs.load("Mistral-7B-v0.1")
    per_token = lmcourse.describe(mistral)["cache_bytes_per_token"]
    got, want = 4096 * per_token, 4095 * per_token
    assert "sliding_window - 1" in named("l6_test_window", got, want, config=mistral, tokens=32_768)


def test_slips_of_the_rotation_are_read_off_the_tensors():
    from transformers.models.llama.modeling_llama import repeat_kv

    kv = torch.arange(2.0).view(1, 2, 1, 1)
    tiled = named("l5_test_expand_kv", kv.repeat(1, 3, 1, 1), repeat_kv(kv, 3), kv=kv, n_rep=3)
    assert tiled.startswith("the stack of key-value heads tiled")
    torch.manual_seed(0)
    x, positions, base = torch.randn(1, 2, 5, 8), torch.arange(5), 10000.0
    theta = base ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    angles = positions.double()[:, None] * theta
    cos, sin = angles.cos().repeat(1, 2), angles.sin().repeat(1, 2)
    x1, x2 = x.double()[..., :4], x.double()[..., 4:]
    right = x.double() * cos + torch.cat([-x2, x1], -1) * sin
    even, odd = x.double()[..., 0::2], x.double()[..., 1::2]
    pairs = torch.stack(
        [even * angles.cos() - odd * angles.sin(), odd * angles.cos() + even * angles.sin()], -1
    )
    rope = dict(x=x, positions=positions, base=base)
    side = named("l5_test_rope", pairs.flatten(-2).float(), right.float(), **rope)
    assert side.startswith("pairs side by side")
    swapped = x.double() * sin + torch.cat([-x2, x1], -1) * cos
    assert named("l5_test_rope", swapped.float(), right.float(), **rope).startswith("cos and sin")
    wrong_way = x.double() * cos - torch.cat([-x2, x1], -1) * sin
    turn = dict(x=x, cos=cos.float(), sin=sin.float())
    way = named("l4_test_rotate", wrong_way.float(), right.float(), **turn)
    assert way.startswith("rotated the wrong way")
    assert named("l4_test_rotate", swapped.float(), right.float(), **turn).startswith("cos and")
    interleaved = angles.cos().repeat_interleave(2, dim=-1).float()
    assert named("l4_test_angles", interleaved, cos.float(), table="cos").startswith("each angle")
    assert named("l4_test_angles", cos.float(), cos.float(), table="cos") is None


def test_every_sentence_is_one_question_and_every_part_a_test_cell():
    """Sentences are fixed text: the feedback may show them after a hidden test."""
    for part, catalogue in slips.CATALOGUE.items():
        assert re.fullmatch(r"l\d+_test_\w+", part), part
        assert part.startswith(f"{slips.LABS[part.split('_')[0]].__name__.split('.')[-1]}_")
        for sentence in catalogue:
            assert "\n" not in sentence and sentence.endswith("?"), sentence
            assert "?" + lookup.OR not in sentence, f"reads as two alternatives: {sentence}"
    with pytest.raises(KeyError, match="no slips catalogued for 'l9_test_nothing'"):
        slips.hint("l9_test_nothing", 1, 2)
    with pytest.raises(KeyError, match="no slips catalogued for 'l9_test_nothing'"):
        lookup.lookup("l9_test_nothing", 1, 2)


def test_each_lab_test_asks_for_its_own_parts_slips_and_every_catalogue_is_used():
    used = set()
    for path in sorted((ROOT / "solutions").glob("LM10-L*/LM10-L*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
            asked = set(re.findall(r'hint\(\s*"(\w+)"', cell.source))
            assert asked <= {grade_id}, f"{path.name} {grade_id} asks for the slips of {asked}"
            used |= asked
    assert used == set(slips.CATALOGUE), (
        f"catalogued but never asked: {set(slips.CATALOGUE) - used}; "
        f"asked but not catalogued: {used - set(slips.CATALOGUE)}"
    )


def test_the_tables_hold_every_part_and_its_sentences_as_the_rules_do():
    for part, rules in slips.CATALOGUE.items():
        assert lookup.sentences(part) == set(rules)  # the rules, where installed: here, none
        stored = lookup._table(part.split("_")[0])[part]
        assert stored["sentences"] == list(rules), f"{part}: the table is stale"


def test_the_table_names_only_the_slips_of_the_inputs_it_holds():
    """On a visible test's inputs the table names the slip the rules name; on any other
    input (a hidden test's, a student's own), it names nothing, though the rules would."""
    assert lookup._rules is None
    visible = dict(d=768)  # the block test's visible input
    slip = 12 * 768**2 + 4 * 768  # every bias left out
    assert lookup.hint("l1_test_gpt2_block", slip, block(768), **visible) == slips.hint(
        "l1_test_gpt2_block", slip, block(768), **visible
    )
    assert "every bias" in lookup.hint("l1_test_gpt2_block", slip, block(768), **visible)
    other = 12 * 64**2 + 4 * 64
    assert "every bias" in slips.hint("l1_test_gpt2_block", other, block(64), d=64)
    assert lookup.hint("l1_test_gpt2_block", other, block(64), d=64) == ""
    before = lookup.use_rules(slips)
    try:  # the trusted process: the rules behind the same hint
        assert "every bias" in lookup.hint("l1_test_gpt2_block", other, block(64), d=64)
    finally:
        lookup.use_rules(before)


@pytest.fixture(scope="module")
def recorded():
    """Every hint call of every lab's tests, hidden ones too: {lab: [(part, example, (want,
    inputs))]}, read off the solution notebooks (about a minute on 2 cores)."""
    return {lab: table.record(lab, hidden=True) for lab in table.labs()}


@pytest.mark.slow
def test_every_catalogued_slip_loses_the_points_and_is_named_on_the_labs_own_inputs(recorded):
    """For each slip, on some input of its lab's tests: its value is not the right one (the
    part loses its points) and the rules' hint for that value names it; on a visible input the
    table names the same slips as the rules."""
    reached = {part: set() for part in slips.CATALOGUE}
    visible_examples = {}
    for lab in table.labs():
        prefix = lab.lower().removeprefix("lm10-")
        for part, example in lookup._table(prefix).items():
            visible_examples[part] = example["examples"]
    for lab, calls in recorded.items():
        for part, example, (want, inputs) in calls:
            on_visible = example in visible_examples[part] or not example["slips"]
            for sentence, rule in slips.rules(part).items():
                try:
                    value = rule(want, **inputs)
                except slips.SKIPPED:
                    continue
                if isinstance(value, tuple):
                    value = tuple(w if v is None else v for v, w in zip(value, want, strict=True))
                if not lookup._apart(value, lookup.encode(value), want):
                    continue  # the right value here (one key-value head tiled): no slip
                text = slips.hint(part, value, want, **inputs)
                assert sentence in lookup.named(text, part), (
                    f"{lab} {part}: the value of {sentence!r} is not named: {text!r}"
                )
                reached[part].add(sentence)
                if on_visible:
                    assert lookup.lookup(part, value, want, **inputs) == text, (
                        f"{lab} {part}: the table and the rules disagree on {sentence!r}"
                    )
    unreached = {p: set(slips.rules(p)) - found for p, found in reached.items()}
    assert not any(unreached.values()), f"slips no input of their lab shows: {unreached}"


@pytest.mark.slow
def test_the_tables_are_what_the_rules_give_on_the_labs_visible_inputs():
    """lib/lmcourse/data/slips-l<n>.json is generated (`make release`), never edited."""
    for lab in table.labs():
        path = lookup.table_path(lab)
        assert table.same(json.loads(path.read_text()), table.build(lab)), (
            f"{path.name} is stale: `make release LAB={lab}` (or python -m grading.slips.table)"
        )


def test_a_table_is_the_same_to_float32_rounding_and_no_further():
    """`table.same`, the staleness check: a tensor's numbers moved by a float32 rounding (what
    another thread count gives) leave a table the same; a number moved by 1 %, another shape,
    dtype or sentence, or a slip more or less make it stale."""
    stored = json.loads(lookup.table_path("LM10-L3").read_text())
    assert table.same(stored, copy.deepcopy(stored))

    def first_tensor(t):
        return next(
            example["slips"][0][0]["tensor"]
            for part in t["parts"].values()
            for example in part["examples"]
        )

    def changed(how):
        other = copy.deepcopy(stored)
        how(other, first_tensor(other))
        return other

    def scaled(factor):
        def how(_, tensor):
            data = np.frombuffer(base64.b64decode(tensor["data"]), dtype="<f8").copy()
            data[0] = data[0] * factor if data[0] else factor - 1.0
            tensor["data"] = base64.b64encode(data.tobytes()).decode()

        return how

    assert table.same(stored, changed(scaled(1 + 2**-23)))
    assert not table.same(stored, changed(scaled(1.01)))
    assert not table.same(stored, changed(lambda _, t: t.update(shape=[*t["shape"], 1])))
    assert not table.same(stored, changed(lambda _, t: t.update(dtype="float16")))
    part = next(iter(stored["parts"]))
    assert not table.same(
        stored, changed(lambda t, _: t["parts"][part]["sentences"].append("another slip"))
    )
    assert not table.same(stored, changed(lambda t, _: t["parts"][part]["examples"].pop()))


def test_the_block_slips_are_what_transformers_computes_with_the_slip():
    """L5's block slips (ready for l5_test_block: grading/slips/l5.py), against transformers'
    own LlamaDecoderLayer: eager attention without a mask, or with another scaling. Heads of
    width 12 make heads x head_dim (72) differ from hidden_size (48)."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    from grading.slips import l5

    config = LlamaConfig(
        hidden_size=48,
        num_attention_heads=6,
        num_key_value_heads=2,
        head_dim=12,
        intermediate_size=64,
        rms_norm_eps=1e-5,
        attn_implementation="eager",
    )
    torch.manual_seed(0)
    layer = LlamaDecoderLayer(config, layer_idx=0).eval()
    with torch.no_grad():
        for name, p in layer.named_parameters():
            p.copy_(torch.rand_like(p) + 0.5 if "norm" in name else torch.randn_like(p) * 0.2)
    x = torch.randn(2, 7, 48)
    angles = LlamaRotaryEmbedding(config)(x, torch.arange(7)[None])
    causal = torch.full((7, 7), float("-inf")).triu(1)[None, None]
    weights = layer.state_dict()

    def transformers_layer(mask):
        with torch.no_grad():
            return layer(x, attention_mask=mask, position_embeddings=angles).double()

    right = l5.llama_layer(x, weights, config)
    torch.testing.assert_close(right, transformers_layer(causal), rtol=0, atol=1e-5)
    rules = {s.split(":")[0]: rule for s, rule in l5.BLOCK.items()}
    no_mask = rules["no causal mask"](right, x, weights, config)
    torch.testing.assert_close(no_mask, transformers_layer(None), rtol=0, atol=1e-5)
    for slip, scaling in (
        ("scores scaled by 1/sqrt(hidden_size)", 48**-0.5),
        ("scores left unscaled", 1.0),
    ):
        layer.self_attn.scaling = scaling
        value = rules[slip](right, x, weights, config)
        torch.testing.assert_close(value, transformers_layer(causal), rtol=0, atol=1e-5)
        assert (value - right).abs().max() > 1e-2, f"{slip}: no different from the right layer"
    assert (no_mask - right).abs().max() > 1e-2


def test_the_norm_inputs_slip_is_the_hidden_states_shifted_by_one():
    """L3's hidden_states[1:] (l3_test_norm_inputs: grading/slips/l3.py, from the right value
    and the last hidden state), against the inputs of a tiny Llama's norms, seen by hooks."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from grading.slips import l3

    config = LlamaConfig(
        vocab_size=50,
        hidden_size=16,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=32,
        num_hidden_layers=3,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    seen, last = [], []
    for block in model.model.layers:
        block.input_layernorm.register_forward_hook(lambda m, args, out: seen.append(args[0][0]))
    model.model.layers[-1].register_forward_hook(lambda m, args, out: last.append(out))
    with torch.no_grad():
        states = model(torch.arange(5)[None], output_hidden_states=True).hidden_states
        final = model.model.norm(last[0])[0]  # the last entry: after the final norm
    want = torch.stack(seen)  # [layers, T, width]: what each norm receives
    (rule,) = l3.NORM_INPUTS.values()
    shifted = rule(want, states[-1])
    torch.testing.assert_close(shifted, torch.stack(states[1:])[:, 0], rtol=0, atol=0)
    assert shifted.shape == want.shape
    torch.testing.assert_close(shifted[:-1], want[1:], rtol=0, atol=0)
    torch.testing.assert_close(shifted[-1], final, rtol=0, atol=1e-6)
    assert (shifted - want).abs().max() > 1e-2


def test_the_grader_names_slips_on_any_input_where_a_students_kernel_cannot():
    """The trusted process that runs the labs' tests (grading/host/trusted_tests.py) installs the
    rules: the setup's `from lmcourse.slips import hint` names a slip on a hidden test's input
    there, and only there."""
    import time

    from grading.host import trusted_tests

    source = (
        'print(repr(hint("l1_test_gpt2_block", 12 * 64**2 + 4 * 64, 12 * 64**2 + 13 * 64, d=64)))'
    )
    deadline = time.monotonic() + 300
    with trusted_tests.session(["from lmcourse.slips import hint"], set(), deadline) as tested:
        # the one call it makes into the sandbox: the student's names (here none)
        outputs, _ = tested.run(
            source, lambda payload: ('{"value": {"__dict__": []}}', False), deadline
        )
    printed = "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")
    assert "Likely slip: every bias left out" in printed, outputs
    assert lookup.hint("l1_test_gpt2_block", 12 * 64**2 + 4 * 64, 12 * 64**2 + 13 * 64, d=64) == ""
