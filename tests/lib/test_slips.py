"""lmcourse.slips: a wrong answer made by a common slip is named; a right one gets no hint."""

import math
import re
from pathlib import Path

import lmcourse
import nbformat
import pytest
import torch
from lmcourse import configs, slips


def named(part, got, want, **inputs):
    """The slips the hint names, one line each, joined by " | " (None for no hint)."""
    text = slips.hint(part, got, want, **inputs)
    found = slips.named(text, part)
    assert len(found) == text.count(slips.PREFIX), f"{part}: a hint that names no slip: {text!r}"
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
    # two slips that give the same value are both named
    both = named("l2_test_cache", 65_536, 131_072, layers=32, kv_heads=8, head_dim=128)
    assert both.startswith("numbers counted") and "keys only" in both
    assert named("l3_test_layer_norm", right.clone(), right, **inputs) is None
    rms = torch.nn.functional.rms_norm(x, (6,), weight, eps)
    rms_outside = x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * weight
    assert named("l3_test_rms_norm", rms_outside, rms, x=x, weight=weight, eps=eps).startswith(
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
    cache = 2 * 61 * 576
    assert "rotary part" in named("l6_test_cache", 2 * 61 * 512, cache, config=deepseek)
    mistral = configs.load("Mistral-7B-v0.1")
    per_token = right_per_token = lmcourse.describe(mistral)["cache_bytes_per_token"]
    want = 4095 * per_token
    got = 4096 * right_per_token
    assert "sliding_window - 1" in named("l6_test_window", got, want, config=mistral, tokens=32_768)


def test_every_sentence_is_one_question_and_every_part_a_test_cell():
    """Sentences are fixed text: the feedback may show them after a hidden test."""
    for part, catalogue in slips.CATALOGUE.items():
        assert re.fullmatch(r"l\d+_test_\w+", part), part
        for sentence in catalogue:
            assert "\n" not in sentence and sentence.endswith("?"), sentence
    with pytest.raises(KeyError, match="no slips catalogued for 'l9_test_nothing'"):
        slips.hint("l9_test_nothing", 1, 2)


def test_each_lab_test_asks_for_its_own_parts_slips_and_every_catalogue_is_used():
    root = Path(__file__).resolve().parents[2]
    used = set()
    for path in sorted((root / "solutions").glob("LM10-L*/LM10-L*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
            asked = set(re.findall(r'hint\(\s*"(\w+)"', cell.source))
            assert asked <= {grade_id}, f"{path.name} {grade_id} asks for the slips of {asked}"
            used |= asked
    assert used == set(slips.CATALOGUE), (
        f"catalogued but never asked: {set(slips.CATALOGUE) - used}"
    )


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
    side = named(
        "l5_test_rope",
        pairs.flatten(-2).float(),
        right.float(),
        x=x,
        positions=positions,
        base=base,
    )
    assert side.startswith("pairs side by side")
    wrong_way = x.double() * cos - torch.cat([-x2, x1], -1) * sin
    way = named(
        "l4_test_rotate", wrong_way.float(), right.float(), x=x, cos=cos.float(), sin=sin.float()
    )
    assert way.startswith("rotated the wrong way")
    interleaved = angles.cos().repeat_interleave(2, dim=-1).float()
    assert named("l4_test_angles", interleaved, cos.float(), table="cos").startswith("each angle")
    assert named("l4_test_angles", cos.float(), cos.float(), table="cos") is None


def _visible_inputs():
    """(right value, the test's inputs) per part: the labs' visible examples, with the right
    values from lmcourse (torch's and transformers' own functions for the tensors)."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb, repeat_kv

    torch.manual_seed(0)
    x, weight, bias = torch.randn(4, 6) * 0.3, torch.rand(6) + 0.5, torch.randn(6)
    layer = dict(x=x, weight=weight, bias=bias, eps=0.5)
    rms = dict(x=x, weight=weight, eps=0.5)
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    angles = torch.arange(5).double()[:, None] * theta
    cos, sin = angles.cos().repeat(1, 2).float(), angles.sin().repeat(1, 2).float()
    q = torch.randn(1, 2, 5, 8)
    rotated, _ = apply_rotary_pos_emb(q, q, cos[None], sin[None])
    kv = torch.randn(2, 2, 5, 8)
    gpt2 = dict(d=768, layers=12, vocab=50_257, heads=12, norm="layer", tied=True)
    big = dict(d=4096, layers=32, vocab=32000, heads=32, norm="rms", tied=False)
    flops = 32 * (2 * (2 * 4096**2 + 2 * 4096 * 8 * 128) + 4 * 32 * 128 * 8_192)
    serving = dict(
        gpu_bytes=80 * 2**30,
        weight_bytes=2 * 8_030_261_248,
        cache_bytes_per_token=131_072,
        tokens_per_request=8_192,
    )
    deepseek, tied = (
        configs.load("DeepSeek-V3"),
        configs.toy("DeepSeek-V3", tie_word_embeddings=True),
    )

    def mixture(config):
        described = lmcourse.describe(config)
        return (described["total"], described["active"]), dict(config=config)

    def cache(name):
        config = configs.load(name)
        return lmcourse.describe(config)["cache_bytes_per_token"], dict(config=config)

    def window(name, tokens):
        config = configs.load(name)
        return lmcourse.cache_bytes(config, tokens), dict(config=config, tokens=tokens)

    return {
        "l1_test_gpt2_block": [(7_087_872, dict(d=768))],
        "l1_test_gpt2_model": [
            (124_439_808, dict(d=768, layers=12, vocab=50_257, positions=1_024))
        ],
        "l1_test_attention": [(2_621_440, dict(d=1_024, heads=16, kv_heads=4, head_dim=64))],
        "l1_test_count": [
            (124_439_808, dict(config=gpt2)),
            (6_738_415_616, dict(config=big)),
            (6_738_415_616 - 805_306_368, dict(config=dict(big, kv_heads=8))),
        ],
        "l2_test_attention": [(41_943_040, dict(d=4_096, heads=32, kv_heads=8))],
        "l2_test_cache": [(131_072, dict(layers=32, kv_heads=8, head_dim=128))],
        "l2_test_flops": [(flops, dict(d=4_096, heads=32, kv_heads=8, layers=32, context=8_192))],
        "l2_test_serving": [(65, serving)],
        "l3_test_layer_norm": [(torch.nn.functional.layer_norm(x, (6,), weight, bias, 0.5), layer)],
        "l3_test_rms_norm": [(torch.nn.functional.rms_norm(x, (6,), weight, 0.5), rms)],
        "l4_test_angles": [
            (torch.tensor([1.0, 0.1, 0.01, 0.001]), dict(head_dim=8, base=10000.0)),
            (cos, dict(table="cos")),
        ],
        "l4_test_rotate": [(rotated, dict(x=q, cos=cos, sin=sin))],
        "l4_test_periods": [(2 * math.pi / theta, {})],
        "l5_test_expand_kv": [(repeat_kv(kv, 3), dict(kv=kv, n_rep=3))],
        "l5_test_rope": [(rotated, dict(x=q, positions=torch.arange(5), base=10000.0))],
        "l6_test_ffn_width": [
            (11_008, dict(d=4096, multiple_of=256)),
            (14_336, dict(d=4096, multiple_of=1024, multiplier=1.3)),
        ],
        "l6_test_moe": [mixture(deepseek), mixture(tied)],
        "l6_test_cache": [cache("Llama-3.1-405B"), cache("DeepSeek-V3")],
        "l6_test_window": [window("Mistral-7B-v0.1", 32_768), window("Gemma-2-2B", 32_768)],
    }


def test_every_catalogued_slip_loses_the_points_and_is_named_on_the_labs_examples():
    """For each slip, on some visible example of its lab: its value is not the right one (the
    part loses its points) and the hint for that value names it."""
    examples = _visible_inputs()
    assert set(examples) == set(slips.CATALOGUE)
    for part, catalogue in slips.CATALOGUE.items():
        for sentence, rule in catalogue.items():
            reached = False
            for want, inputs in examples[part]:
                try:
                    value = rule(want, **inputs)
                except (AssertionError, ArithmeticError, AttributeError, KeyError, TypeError):
                    continue
                if value is None or slips._same(want, value):
                    continue
                if isinstance(value, tuple):
                    value = tuple(w if v is None else v for v, w in zip(value, want, strict=True))
                assert sentence in slips.named(slips.hint(part, value, want, **inputs), part), (
                    f"{part}: the value of {sentence!r} is not named"
                )
                reached = True
            assert reached, f"{part}: no visible example shows the slip {sentence!r}"
