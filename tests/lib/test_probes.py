"""lmcourse.probes: the hook helper leaves no hook behind, and each probe measures what the layers
it hooks really received."""

import pytest
import torch
from conftest import random_model, spec
from lmcourse import probes, tinygpt
from lmcourse.blocks.model import DecoderLM


def test_inputs_of_records_each_modules_last_input_and_removes_its_hooks():
    model = random_model(spec())
    ids = torch.randint(0, 64, (2, 5), generator=torch.Generator().manual_seed(0))
    modules = {"first": model.blocks[0], "head": model.head}
    with probes.inputs_of(modules) as seen:
        logits = model(ids)
    assert seen.keys() == modules.keys()
    assert seen["first"].shape == (2, 5, 32)
    torch.testing.assert_close(model.head(seen["head"]), logits, rtol=0, atol=0)
    assert not any(m._forward_pre_hooks for m in model.modules()), "a hook was left behind"
    with pytest.raises(RuntimeError, match="boom"), probes.inputs_of(modules):
        raise RuntimeError("boom")
    assert not any(m._forward_pre_hooks for m in model.modules()), "an error left a hook behind"


def test_norm_input_mean_fractions_are_the_mean_over_the_rms_of_each_norms_input():
    model = random_model(spec(layers=3))
    ids = torch.randint(0, 64, (2, 7), generator=torch.Generator().manual_seed(1))
    fractions = probes.norm_input_mean_fractions(model, ids)
    assert list(fractions) == [
        (0, "attention"),
        (0, "feed-forward"),
        (1, "attention"),
        (1, "feed-forward"),
        (2, "attention"),
        (2, "feed-forward"),
        (3, "final"),
    ], "keys in the order the model applies the norms"
    x = model.embed(ids).detach().reshape(-1, 32)  # what the first norm reads: [tokens, d]
    expected = x.mean(-1).abs() / x.pow(2).mean(-1).sqrt()
    torch.testing.assert_close(fractions[(0, "attention")], expected)
    with torch.no_grad():  # the residual stream after the last block: the final norm's input
        final, positions = model.embed(ids), torch.arange(7)
        cos, sin = model.rotary(positions.expand(2, 7))
        for block in model.blocks:
            final = block(final, cos, sin, positions)
    final = final.reshape(-1, 32)
    torch.testing.assert_close(
        fractions[(3, "final")], final.mean(-1).abs() / final.pow(2).mean(-1).sqrt()
    )
    assert all(f.shape == (14,) and (f >= 0).all() for f in fractions.values())
    assert not any(m._forward_pre_hooks for m in model.modules())


def random_gpt(seed: int = 0) -> DecoderLM:
    """An untrained tinygpt with large random weights, so that attention is far from uniform."""
    return random_model(tinygpt.spec(), seed)


@torch.no_grad()
def test_attention_weights_reproduce_the_layers_own_output():
    """Weights times values, through o_proj, must equal what the model's attention computed."""
    model = random_gpt()
    ids = torch.randint(0, len(tinygpt.vocabulary()), (3, 20))
    positions = torch.arange(20).expand(3, 20) + torch.tensor([[0], [7], [500]])
    for layer, block in enumerate(model.blocks):
        seen = {}
        hook = block.attn.register_forward_hook(
            lambda module, args, out, seen=seen: seen.update(h=args[0], out=out)
        )
        model(ids, position_ids=positions)
        hook.remove()
        weights = probes.attention_weights(model, ids, positions, layer)
        attn = block.attn
        assert weights.shape == (3, attn.heads, 20, 20)
        assert torch.allclose(weights.sum(-1), torch.ones(3, attn.heads, 20))
        assert weights.triu(1).abs().max() == 0.0, "a query attends to a later key"
        v = attn.v_proj(seen["h"]).view(3, 20, attn.heads, attn.head_dim).transpose(1, 2)
        out = attn.o_proj((weights @ v).transpose(1, 2).reshape(3, 20, -1))
        torch.testing.assert_close(
            out,
            seen["out"],
            rtol=0,
            atol=1e-5,
            msg=lambda m, i=layer: f"layer {i}, weights @ values: {m}",
        )


def test_attention_by_offset_averages_each_diagonal_over_the_same_queries():
    model = random_gpt(seed=1)
    ids = torch.randint(0, len(tinygpt.vocabulary()), (2, 12))
    weights = probes.attention_weights(model, ids, layer=1)  # [2, heads, 12, 12]
    by_offset = probes.attention_by_offset(model, ids, layer=1, offsets=5)
    assert by_offset.shape == (model.spec.heads, 5)
    for head in range(model.spec.heads):
        for d in range(5):
            values = [weights[b, head, q, q - d] for b in range(2) for q in range(4, 12)]
            expected = torch.stack(values).mean()
            assert torch.isclose(by_offset[head, d], expected), (head, d)


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda m, ids: probes.attention_weights(torch.nn.Linear(2, 2), ids),
            "GPT-2-style DecoderLM",
        ),
        (lambda m, ids: probes.attention_weights(m, ids.float()), "input_ids must be a LongTensor"),
        (lambda m, ids: probes.attention_weights(m, ids[0]), "input_ids must be a LongTensor"),
        (
            lambda m, ids: probes.attention_weights(m, ids, layer=tinygpt.LAYERS),
            "layer must be an int",
        ),
        (lambda m, ids: probes.attention_weights(m, ids, layer=-1), "layer must be an int"),
        (
            lambda m, ids: probes.attention_weights(m, ids, torch.arange(5)[None]),
            "position_ids must have the shape",
        ),
        (
            lambda m, ids: probes.attention_by_offset(m, ids, offsets=0),
            r"offsets must be .* \[1, 6\]",
        ),
        (
            lambda m, ids: probes.attention_by_offset(m, ids, offsets=7),
            r"offsets must be .* \[1, 6\]",
        ),
    ],
)
def test_attention_inspection_refuses_bad_input(call, match):
    model = random_gpt()
    with pytest.raises(ValueError, match=match):
        call(model, torch.zeros(2, 6, dtype=torch.long))


def test_attention_inspection_refuses_a_rotary_model():
    from lmcourse import as_spec, configs

    rotary = DecoderLM(as_spec(configs.toy("SmolLM2-135M")))
    with pytest.raises(ValueError, match="GPT-2-style DecoderLM"):
        probes.attention_weights(rotary, torch.zeros(1, 4, dtype=torch.long))
