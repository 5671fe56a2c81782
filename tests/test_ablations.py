"""Each ablation returns a new model that differs from its input in one place, and only there."""

from __future__ import annotations

import pytest
import torch
from lmcourse import ModelSpec
from lmcourse.ablations import (
    expand_kv_heads,
    mean_pool_kv_heads,
    rope_pairs_side_by_side,
    tile_kv_heads,
    with_activation,
    with_norm,
    with_rope_base,
    without_gate,
)
from lmcourse.blocks import DecoderLM
from test_blocks import random_model

SPEC = ModelSpec(d=48, layers=2, vocab=64, heads=6, kv_heads=2, head_dim=8, ffn="swiglu",
                 hidden=64, act="silu", norm="rms", tied=True, rope_theta=100000.0)
IDS = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def model():
    return random_model(SPEC)


def logits(m):
    with torch.no_grad():
        return m(IDS)


def n_params(m) -> int:
    return sum(p.numel() for p in m.parameters())


def max_diff(a, b) -> float:
    return (a - b).abs().max().item()


def test_expand_kv_heads_is_exact_and_costs_parameters(model):
    before = logits(model)
    full = expand_kv_heads(model)
    assert full.spec.kv_heads == SPEC.heads
    diff = max_diff(logits(full), before)
    assert diff < 1e-6, f"expanded model's logits differ by {diff:.2e}"
    extra = 2 * (SPEC.heads - SPEC.kv_heads) * SPEC.head_dim * SPEC.d * SPEC.layers  # k and v
    assert n_params(full) == n_params(model) + extra, (n_params(full), n_params(model), extra)
    assert torch.equal(logits(model), before), "expand_kv_heads changed the original model"


@pytest.mark.parametrize("ablate", [
    tile_kv_heads, rope_pairs_side_by_side, lambda m: with_rope_base(m, 10000.0),
    lambda m: with_norm(m, "layer"), lambda m: with_activation(m, "gelu"), without_gate,
], ids=["tile", "pairs", "base", "layernorm", "gelu", "no-gate"])
def test_ablation_changes_logits_and_leaves_original(model, ablate):
    before = logits(model)
    new = ablate(model)
    assert new is not model
    assert n_params(new) == n_params(model), "an ablation must keep every weight"
    diff = max_diff(logits(new), before)
    assert diff > 1e-3, f"ablation changed the logits by only {diff:.2e}"
    assert torch.equal(logits(model), before), "the original model's logits changed"
    shared = {p.data_ptr() for p in model.parameters()} & {p.data_ptr() for p in new.parameters()}
    assert not shared, "the new model shares storage with the original"


def test_identity_settings_change_nothing(model):
    before = logits(model)
    for same in (with_rope_base(model, SPEC.rope_theta), with_activation(model, "silu"),
                 with_norm(model, "rms")):
        diff = max_diff(logits(same), before)
        assert diff == 0.0, f"an ablation to the model's own setting moved logits by {diff:.2e}"


def test_tiling_is_harmless_without_grouping():
    mha = DecoderLM(ModelSpec(**{**SPEC.__dict__, "kv_heads": SPEC.heads})).eval()
    tiled = tile_kv_heads(mha)
    assert torch.equal(logits(tiled), logits(mha)), "tiling with group 1 must be a no-op"


def test_without_gate_is_down_of_up(model):
    ffn = without_gate(model).blocks[0].ffn
    x = torch.randn(3, SPEC.d)
    with torch.no_grad():
        expected = ffn.down_proj(ffn.up_proj(x))
        assert torch.equal(ffn(x), expected)


def test_with_norm_layer_centres_rows(model):
    norm = with_norm(model, "layer").blocks[0].attn_norm
    x = torch.randn(4, SPEC.d) + 5.0
    with torch.no_grad():
        centred = norm(x) / norm.weight
    assert centred.mean(-1).abs().max().item() < 1e-4, "LayerNorm output (unscaled) must be centred"
    assert torch.equal(norm.weight, model.blocks[0].attn_norm.weight), "the scale must be kept"


def test_bad_ablation_arguments_raise_value_error(model):
    with pytest.raises(ValueError, match="kind"):
        with_norm(model, "batch")
    with pytest.raises(ValueError, match="name"):
        with_activation(model, "swish2")
    with pytest.raises(ValueError, match="base"):
        with_rope_base(model, 0.0)
    gpt2_like = DecoderLM(ModelSpec.from_dict(dict(d=16, layers=1, vocab=20, heads=2, ffn="gelu",
                                                   bias=True, norm="layer", tied=True,
                                                   positions=8)))
    with pytest.raises(ValueError, match="gated"):
        without_gate(gpt2_like)
    with pytest.raises(ValueError, match="rotary"):
        rope_pairs_side_by_side(gpt2_like)


def test_mean_pooling_the_expanded_heads_gives_back_the_model_exactly(model):
    pooled = mean_pool_kv_heads(expand_kv_heads(model), SPEC.kv_heads)
    assert pooled.spec == model.spec
    with torch.no_grad():
        diff = (model(IDS) - pooled(IDS)).abs().max().item()
    assert diff == 0.0, f"pooling copies back changed the logits by {diff:.2e}"


def test_mean_pooling_distinct_heads_to_one_averages_them(model):
    mqa = mean_pool_kv_heads(model, 1)
    assert mqa.spec.kv_heads == 1
    k = model.state_dict()["blocks.0.attn.k_proj.weight"].view(SPEC.kv_heads, SPEC.head_dim, -1)
    assert torch.allclose(mqa.state_dict()["blocks.0.attn.k_proj.weight"], k.mean(0))


@pytest.mark.parametrize("kv_heads", [0, 3, 1.0, True])
def test_mean_pooling_refuses_a_count_that_does_not_divide_the_heads(model, kv_heads):
    with pytest.raises(ValueError, match=r"kv_heads must divide the model's 2 key-value heads"):
        mean_pool_kv_heads(model, kv_heads)
