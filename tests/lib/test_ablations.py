"""Each ablation returns a new model that differs from its input in one place, and only there."""

from __future__ import annotations

import pytest
import torch
from conftest import random_model
from lmcourse import ModelSpec, evaluate
from lmcourse.ablations import (
    ESSAY,
    Result,
    TiledAttention,
    UngatedMLP,
    expand_kv_heads,
    mean_pool_kv_heads,
    rope_pairs_side_by_side,
    run_all,
    table_rows,
    tile_kv_heads,
    with_activation,
    with_norm,
    with_rope_base,
    without_gate,
)
from lmcourse.blocks import DecoderLM

SPEC = ModelSpec(
    d=48,
    layers=2,
    vocab=64,
    heads=6,
    kv_heads=2,
    head_dim=8,
    ffn="swiglu",
    hidden=64,
    act="silu",
    norm="rms",
    tied=True,
    rope_theta=100000.0,
)
IDS = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def model():
    return random_model(SPEC)


def logits(m):
    with torch.no_grad():
        return m(IDS)


def n_params(m) -> int:
    return sum(p.numel() for p in m.parameters())


def tiny_gpt2_like():
    """A one-layer GPT-2-style model: learned positions, LayerNorm, a GELU MLP, no rotation."""
    spec = dict(
        d=16,
        layers=1,
        vocab=20,
        heads=2,
        ffn="gelu",
        bias=True,
        norm="layer",
        tied=True,
        positions=8,
    )
    return DecoderLM(ModelSpec.from_dict(spec))


def test_expand_kv_heads_is_exact_and_costs_parameters(model):
    before = logits(model)
    full = expand_kv_heads(model)
    assert full.spec.kv_heads == SPEC.heads
    torch.testing.assert_close(
        logits(full),
        before,
        rtol=0,
        atol=1e-6,
        msg=lambda m: f"expanded model's logits differ: {m}",
    )
    extra = 2 * (SPEC.heads - SPEC.kv_heads) * SPEC.head_dim * SPEC.d * SPEC.layers  # k and v
    assert n_params(full) == n_params(model) + extra, (n_params(full), n_params(model), extra)
    assert torch.equal(logits(model), before), "expand_kv_heads changed the original model"


@pytest.mark.parametrize(
    "ablate",
    [
        tile_kv_heads,
        rope_pairs_side_by_side,
        lambda m: with_rope_base(m, 10000.0),
        lambda m: with_norm(m, "layer"),
        lambda m: with_activation(m, "gelu"),
        without_gate,
    ],
    ids=["tile", "pairs", "base", "layernorm", "gelu", "no-gate"],
)
def test_ablation_changes_logits_and_leaves_original(model, ablate):
    before = logits(model)
    new = ablate(model)
    assert new is not model
    assert n_params(new) == n_params(model), "an ablation must keep every weight"
    diff = (logits(new) - before).abs().max().item()
    assert diff > 1e-3, f"ablation changed the logits by only {diff:.2e}"
    assert torch.equal(logits(model), before), "the original model's logits changed"
    shared = {p.data_ptr() for p in model.parameters()} & {p.data_ptr() for p in new.parameters()}
    assert not shared, "the new model shares storage with the original"


def test_identity_settings_change_nothing(model):
    before = logits(model)
    for same in (
        with_rope_base(model, SPEC.rope_theta),
        with_activation(model, "silu"),
        with_norm(model, "rms"),
    ):
        torch.testing.assert_close(
            logits(same),
            before,
            rtol=0,
            atol=0,
            msg=lambda m: f"an ablation to the model's own setting: {m}",
        )


def test_tiled_attention_reads_kv_head_i_mod_kv_heads(model):
    # the tiled model computes what full heads compute when query head i's key-value head is a
    # copy of head i % kv_heads (kv heads repeated whole: 0, 1, 0, 1, ...)
    tiled = tile_kv_heads(model)
    assert all(type(block.attn) is TiledAttention for block in tiled.blocks)
    state = model.state_dict()
    for name, tensor in state.items():
        if ".attn.k_proj." in name or ".attn.v_proj." in name:
            heads = tensor.view(SPEC.kv_heads, SPEC.head_dim, SPEC.d)
            state[name] = heads.repeat(SPEC.heads // SPEC.kv_heads, 1, 1).view(-1, SPEC.d)
    full = DecoderLM(ModelSpec(**{**SPEC.__dict__, "kv_heads": SPEC.heads}))
    full.load_state_dict(state)
    torch.testing.assert_close(
        logits(tiled),
        logits(full.eval()),
        rtol=0,
        atol=1e-5,
        msg=lambda m: f"tiled heads differ from heads copied in tiles: {m}",
    )


def test_a_later_ablation_keeps_the_modules_an_earlier_one_swapped_in(model):
    both = with_rope_base(without_gate(tile_kv_heads(model)), 10000.0)
    kinds = {(type(block.attn), type(block.ffn)) for block in both.blocks}
    assert kinds == {(TiledAttention, UngatedMLP)}, kinds
    assert all(type(block.attn) is not TiledAttention for block in model.blocks)


def test_tiling_is_harmless_without_grouping():
    mha = DecoderLM(ModelSpec(**{**SPEC.__dict__, "kv_heads": SPEC.heads})).eval()
    tiled = tile_kv_heads(mha)
    assert torch.equal(logits(tiled), logits(mha)), "tiling with group 1 must be a no-op"


def test_without_gate_is_down_of_up(model):
    ffn = without_gate(model).blocks[0].ffn
    assert type(ffn) is UngatedMLP
    x = torch.randn(3, SPEC.d)
    with torch.no_grad():
        expected = ffn.down_proj(ffn.up_proj(x))
        assert torch.equal(ffn(x), expected)


def test_with_norm_layer_centres_rows(model):
    norm = with_norm(model, "layer").blocks[0].attn_norm
    x = torch.randn(4, SPEC.d) + 5.0
    with torch.no_grad():
        centred = norm(x) / norm.weight
    torch.testing.assert_close(
        centred.mean(-1),
        torch.zeros(4),
        rtol=0,
        atol=1e-4,
        msg=lambda m: f"LayerNorm output (unscaled) must be centred: {m}",
    )
    assert torch.equal(norm.weight, model.blocks[0].attn_norm.weight), "the scale must be kept"


def test_bad_ablation_arguments_raise_value_error(model):
    with pytest.raises(ValueError, match="kind"):
        with_norm(model, "batch")
    with pytest.raises(ValueError, match="name"):
        with_activation(model, "swish2")
    with pytest.raises(ValueError, match="base"):
        with_rope_base(model, 0.0)
    gpt2_like = tiny_gpt2_like()
    with pytest.raises(ValueError, match="gated"):
        without_gate(gpt2_like)
    with pytest.raises(ValueError, match="rotary"):
        rope_pairs_side_by_side(gpt2_like)


def test_mean_pooling_the_expanded_heads_gives_back_the_model_exactly(model):
    pooled = mean_pool_kv_heads(expand_kv_heads(model), SPEC.kv_heads)
    assert pooled.spec == model.spec
    with torch.no_grad():
        torch.testing.assert_close(
            pooled(IDS),
            model(IDS),
            rtol=0,
            atol=0,
            msg=lambda m: f"pooling copies back changed the logits: {m}",
        )


def test_mean_pooling_distinct_heads_to_one_averages_them(model):
    mqa = mean_pool_kv_heads(model, 1)
    assert mqa.spec.kv_heads == 1
    k = model.state_dict()["blocks.0.attn.k_proj.weight"].view(SPEC.kv_heads, SPEC.head_dim, -1)
    assert torch.allclose(mqa.state_dict()["blocks.0.attn.k_proj.weight"], k.mean(0))


@pytest.mark.parametrize("kv_heads", [0, 3, 1.0, True])
def test_mean_pooling_refuses_a_count_that_does_not_divide_the_heads(model, kv_heads):
    with pytest.raises(ValueError, match=r"kv_heads must divide the model's 2 key-value heads"):
        mean_pool_kv_heads(model, kv_heads)


# run_all: every change of lesson T6 undone, one forward pass each.


@pytest.fixture(scope="module")
def all_results(model):
    return run_all(model, IDS)


def test_run_all_measures_each_change_as_the_single_ablation_would(model, all_results):
    by_change = {r.change: r for r in all_results}
    assert list(by_change) == list(ESSAY), "one row per change, in the essay's order"
    positions = torch.arange(IDS.shape[1]).expand_as(IDS)
    expected = {
        "as trained": evaluate.loss(model, IDS),
        "positions + 5,000": evaluate.loss(model, IDS, positions + 5000),
        "every position 0": evaluate.loss(model, IDS, torch.zeros_like(IDS)),
        "rotation base 10,000": evaluate.loss(with_rope_base(model, 10000.0), IDS),
        "LayerNorm, no bias": evaluate.loss(with_norm(model, "layer"), IDS),
        "GELU instead of SiLU": evaluate.loss(with_activation(model, "gelu"), IDS),
        "gate removed": evaluate.loss(without_gate(model), IDS),
        "kv heads tiled": evaluate.loss(tile_kv_heads(model), IDS),
        "rotation pairs as neighbours": evaluate.loss(rope_pairs_side_by_side(model), IDS),
    }
    for change, loss in expected.items():
        got = by_change[change].loss
        assert got == pytest.approx(loss, abs=1e-6), f"{change}: run_all {got}, alone {loss}"
    base = by_change["as trained"].loss
    for change in (
        "every position 0",
        "kv heads tiled",
        "rotation pairs as neighbours",
        "gate removed",
        "GELU instead of SiLU",
    ):
        assert abs(by_change[change].loss - base) > 1e-4, f"{change} left the loss at {base}"


def test_run_all_reports_the_expansion_exact_and_larger(model, all_results):
    full = all_results[-1]
    assert full.change == "kv heads expanded (exact)"
    assert full.max_logit_diff is not None and full.max_logit_diff < 1e-5, full
    assert full.loss == pytest.approx(all_results[0].loss, abs=1e-6)
    extra = 2 * (SPEC.heads - SPEC.kv_heads) * SPEC.head_dim * SPEC.d * SPEC.layers
    assert full.params == all_results[0].params + extra
    assert all(r.max_logit_diff is None for r in all_results[:-1])


def test_run_all_leaves_the_model_as_it_was(model, all_results):
    assert evaluate.loss(model, IDS) == all_results[0].loss


def test_table_rows_give_the_change_in_nats_and_the_essays_figure(all_results):
    rows = table_rows(all_results)
    assert [r["change undone"] for r in rows] == list(ESSAY)
    assert rows[0]["vs trained"] == ""
    for row, result in zip(rows[1:], all_results[1:], strict=True):
        assert float(row["vs trained"]) == pytest.approx(
            result.loss - all_results[0].loss, abs=5e-4
        )
        assert row["the essay (SmolLM2-135M, its own text)"] == ESSAY[result.change]
    tiny = [Result("as trained", 2.0, 1), Result("positions + 500", 2.0 - 2e-6, 1)]
    assert table_rows(tiny)[1]["vs trained"] == "+0.000", "a change of -2e-6 printed with a sign"


def test_run_all_and_table_rows_refuse_what_they_cannot_handle(model):
    gpt2_like = tiny_gpt2_like()
    with pytest.raises(ValueError, match="rotary positions, .*RMSNorm, a gated SiLU"):
        run_all(gpt2_like, torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="grouped key-value heads, interleaved"):
        run_all(tile_kv_heads(model), IDS)
    with pytest.raises(ValueError, match="input_ids must be a LongTensor"):
        run_all(model, IDS.float())
    with pytest.raises(ValueError, match="non-empty list that run_all returns"):
        table_rows([])


def test_loss_of_logits_is_the_loss_and_checks_shapes(model):
    assert evaluate.loss_of_logits(logits(model), IDS) == evaluate.loss(model, IDS)
    with pytest.raises(ValueError, match=r"logits must be \[batch, tokens, vocab\]"):
        evaluate.loss_of_logits(logits(model)[:, :-1], IDS)


def test_all_lists_every_public_name_the_module_defines():
    import ast
    import inspect

    from lmcourse import ablations

    defined = set()  # names bound at the top of the module (not imported)
    for node in ast.parse(inspect.getsource(ablations)).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined.update(target.id for target in node.targets if isinstance(target, ast.Name))
    public = {name for name in defined if not name.startswith("_")}
    assert sorted(ablations.__all__) == sorted(public), (
        f"missing from __all__: {sorted(public - set(ablations.__all__))}; "
        f"not defined in the module: {sorted(set(ablations.__all__) - public)}"
    )
