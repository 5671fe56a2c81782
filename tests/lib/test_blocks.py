"""The parts of lmcourse.blocks, each against transformers' module or a property it must have."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
import transformers
from conftest import random_model, spec
from lmcourse import ModelSpec, as_spec
from lmcourse.blocks import (
    DecoderLM,
    LayerCache,
    LayerNorm,
    RMSNorm,
    apply_rotary,
    attend,
    causal_mask,
    group_kv,
    inverse_frequencies,
    llama3_scaled,
    own_tokens_mask,
)
from lmcourse.blocks.rope import rope_amplitude, rope_frequencies
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.gemma2.modeling_gemma2 import Gemma2RMSNorm
from transformers.models.llama.modeling_llama import LlamaRMSNorm
from transformers.models.olmo.modeling_olmo import OlmoLayerNorm

torch.manual_seed(0)
X = torch.randn(2, 5, 16) * 3 + 1  # rows with a clear mean, so centring matters


def test_rmsnorm_matches_llama_and_gemma2():
    weight = torch.randn(16)
    ours, theirs = RMSNorm(16, 1e-6), LlamaRMSNorm(16, eps=1e-6)
    ours.weight.data.copy_(weight)
    theirs.weight.data.copy_(weight)
    torch.testing.assert_close(
        ours(X),
        theirs(X),
        rtol=0,
        atol=1e-6,
        msg=lambda m: f"RMSNorm differs from LlamaRMSNorm: {m}",
    )
    ours, theirs = RMSNorm(16, 1e-6, offset=1.0), Gemma2RMSNorm(16, eps=1e-6)
    ours.weight.data.copy_(weight)
    theirs.weight.data.copy_(weight)
    torch.testing.assert_close(
        ours(X),
        theirs(X),
        rtol=0,
        atol=1e-6,
        msg=lambda m: f"RMSNorm(offset=1) differs from Gemma2RMSNorm: {m}",
    )


def test_layernorm_matches_torch_and_olmo():
    ours, theirs = LayerNorm(16, 1e-5), torch.nn.LayerNorm(16, 1e-5)
    with torch.no_grad():
        for p in (ours.weight, ours.bias):
            p.normal_()
        theirs.weight.copy_(ours.weight)
        theirs.bias.copy_(ours.bias)
    torch.testing.assert_close(
        ours(X),
        theirs(X),
        rtol=0,
        atol=1e-5,
        msg=lambda m: f"LayerNorm differs from torch.nn.LayerNorm: {m}",
    )
    free = LayerNorm(16, 1e-5, affine=False)
    assert not list(free.parameters()), "OLMo's LayerNorm must have no parameters"
    torch.testing.assert_close(
        free(X),
        OlmoLayerNorm(16)(X),
        rtol=0,
        atol=1e-5,
        msg=lambda m: f"parameter-free LayerNorm differs from OLMo's: {m}",
    )


def test_rope_frequencies_match_transformers_default_and_llama3():
    config = transformers.LlamaConfig(
        hidden_size=64,
        num_attention_heads=2,
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
    )
    expected, _ = ROPE_INIT_FUNCTIONS["llama3"](config)
    plain = inverse_frequencies(500000.0, 32)
    got = llama3_scaled(plain, 8.0, 1.0, 4.0, 64)
    torch.testing.assert_close(
        got, expected, rtol=1e-6, atol=0, msg=lambda m: f"llama3 scaling: {m}"
    )
    assert (got < plain).any() and (got == plain).any(), "scaling should slow some pairs, not all"


YARN_CASES = {  # rope_parameters beyond rope_type and rope_theta
    "deepseek-v3": dict(
        factor=40.0,
        beta_fast=32.0,
        beta_slow=1.0,
        mscale=1.0,
        mscale_all_dim=1.0,
        original_max_position_embeddings=4096,
    ),
    "mscale-ratio": dict(
        factor=16.0, mscale=0.707, mscale_all_dim=1.0, original_max_position_embeddings=512
    ),
    "factor-only": dict(factor=4.0, original_max_position_embeddings=2048),
    "untruncated": dict(
        factor=8.0,
        beta_fast=16.0,
        beta_slow=2.0,
        truncate=False,
        original_max_position_embeddings=1024,
    ),
    "explicit-attention-factor": dict(
        factor=4.0, attention_factor=0.9, original_max_position_embeddings=256
    ),
}


@pytest.mark.parametrize("name", YARN_CASES)
def test_yarn_frequencies_and_amplitude_match_transformers(name):
    params = {"rope_type": "yarn", "rope_theta": 10000.0, **YARN_CASES[name]}
    config = transformers.LlamaConfig(
        hidden_size=128,
        num_attention_heads=2,
        max_position_embeddings=16384,
        rope_parameters=params,
    )
    expected, amplitude = ROPE_INIT_FUNCTIONS["yarn"](config)
    s = as_spec(config)
    got = rope_frequencies(s)
    assert torch.equal(got, expected), f"{name}: yarn inv_freq {got} vs {expected}"
    assert rope_amplitude(s) == pytest.approx(amplitude, rel=1e-12)
    plain = inverse_frequencies(10000.0, 64)
    assert (got < plain).any() and (got == plain).any(), "yarn should slow some pairs, not all"


def test_yarn_without_a_factor_is_refused():
    s = spec(
        head_dim=16,
        heads=1,
        kv_heads=1,
        d=16,
        rope_theta=10000.0,
        rope_scaling=(("original_max_position_embeddings", 64), ("rope_type", "yarn")),
    )
    with pytest.raises(ValueError, match="yarn needs a 'factor'"):
        rope_frequencies(s)


def test_unknown_rope_types_are_refused_naming_the_valid_ones():
    s = spec(
        head_dim=16,
        heads=1,
        kv_heads=1,
        d=16,
        rope_theta=10000.0,
        rope_scaling=(("rope_type", "longrope"),),
    )
    with pytest.raises(ValueError, match="'default', 'llama3' or 'yarn', got 'longrope'"):
        rope_frequencies(s)


def test_rope_score_depends_only_on_relative_position():
    s = spec(head_dim=16, heads=1, kv_heads=1, d=16)
    rotary = DecoderLM(s).rotary
    q, k = torch.randn(1, 1, 1, 16), torch.randn(1, 1, 1, 16)

    def score(m, n):
        cq, sq = rotary(torch.tensor([[m]]))
        ck, sk = rotary(torch.tensor([[n]]))
        return (apply_rotary(q, cq, sq) * apply_rotary(k, ck, sk)).sum().item()

    assert score(10, 3) == pytest.approx(score(1010, 1003), abs=1e-3)
    assert abs(score(10, 3) - score(10, 4)) > 1e-3, "moving the key should change the score"


def test_group_kv_interleaves_and_tile_tiles():
    kv = torch.arange(3.0).view(1, 3, 1, 1)  # kv head j holds the number j
    interleaved = group_kv(kv, 4, "interleave").flatten().tolist()
    tiled = group_kv(kv, 4, "tile").flatten().tolist()
    assert interleaved == [i // 4 for i in range(12)], interleaved
    assert tiled == [i % 3 for i in range(12)], tiled


SHARED_MASKS = {  # queries, mask: each kind of mask attend takes (5 keys)
    "one-query-all": (1, "all"),
    "causal": (5, "causal"),
    "tensor": (3, causal_mask(torch.arange(2, 5), torch.arange(5), window=2)),
}


@pytest.mark.parametrize("softcap", [0.0, 2.0])
@pytest.mark.parametrize("case", SHARED_MASKS)
def test_attend_reads_shared_heads_as_if_copied(softcap, case):
    # attend takes the cache's key-value heads as they are (no group_kv copy on the fused
    # path): the result is the one of the copied heads, bit for bit
    queries, mask = SHARED_MASKS[case]
    torch.manual_seed(0)
    q = torch.randn(2, 6, queries, 8)
    k, v = torch.randn(2, 2, 2, 5, 8).unbind(0)  # 2 key-value heads for 6 query heads
    shared = attend(q, k, v, mask, 0.3, softcap=softcap)
    copied = attend(q, group_kv(k, 3), group_kv(v, 3), mask, 0.3, softcap=softcap)
    assert torch.equal(shared, copied), (shared - copied).abs().max().item()


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"sliding_window": 3},
        {"attn_softcap": 2.0, "sliding_window": 4, "norms_per_block": 4},
        {"kv_heads": 1, "qk_norm": True},
    ],
    ids=["plain", "sliding", "softcap-sandwich", "mqa-qknorm"],
)
def test_cache_in_chunks_equals_one_forward(changes):
    model = random_model(spec(**changes))
    ids = torch.randint(0, 64, (2, 11))
    with torch.no_grad():
        full = model(ids)
        cache = model.new_cache(2, 11)
        chunks = ((0, 4), (4, 5), (5, 6), (6, 9), (9, 10), (10, 11))  # decode steps, then a chunk
        parts = [model(ids[:, a:b], cache=cache) for a, b in chunks]
    torch.testing.assert_close(
        torch.cat(parts, dim=1),
        full,
        rtol=0,
        atol=1e-5,
        msg=lambda m: f"{changes}: chunked cached forward differs: {m}",
    )


def test_sliding_layers_cache_only_the_window():
    s = spec(sliding_window=3, layer_pattern=("sliding_attention", "full_attention"))
    model = random_model(s)
    cache = model.new_cache(1, 20)
    with torch.no_grad():
        model(torch.randint(0, 64, (1, 6)), cache=cache)
        model(torch.randint(0, 64, (1, 1)), cache=cache)
    slots = [layer.keys.shape[2] for layer in cache.layers]
    assert slots == [3, 20], f"cache slots per layer {slots}, expected [window, max_tokens]"
    held = sorted(cache.layers[0].slot_positions.tolist())
    assert held == [4, 5, 6], f"sliding layer holds positions {held}, expected the last 3"


def test_shifting_positions_keeps_rope_logits_and_moves_learned_ones():
    ids = torch.randint(0, 64, (1, 8))
    shifted = torch.arange(500, 508)[None]
    rope = random_model(spec())
    learned = random_model(spec(positions=600, rope_theta=0.0))
    with torch.no_grad():
        torch.testing.assert_close(
            rope(ids, shifted),
            rope(ids),
            rtol=0,
            atol=1e-4,
            msg=lambda m: f"RoPE logits moved under a constant shift: {m}",
        )
        learned_diff = (learned(ids, shifted) - learned(ids)).abs().max().item()
    assert learned_diff > 1e-2, f"learned-position logits moved only {learned_diff:.2e}"


def test_seed_style_spec_builds_and_runs():
    model = DecoderLM(
        ModelSpec.from_dict(
            dict(
                d=32,
                layers=2,
                vocab=50,
                heads=4,
                ffn="gelu",
                bias=True,
                norm="layer",
                tied=True,
                positions=16,
            )
        )
    )
    logits = model(torch.randint(0, 50, (3, 7)))
    assert logits.shape == (3, 7, 50), f"logits shape {tuple(logits.shape)}"
    assert model.head.weight is model.embed.weight, "tied=True must share the token table"


def test_generate_returns_prompt_then_new_tokens():
    model = random_model(spec())
    prompt = torch.randint(0, 64, (2, 3))
    out = model.generate(prompt, 5)
    assert out.shape == (2, 8) and torch.equal(out[:, :3], prompt), f"got {out.tolist()}"


def test_bad_input_raises_value_error():
    model = random_model(spec())
    with pytest.raises(ValueError, match="input_ids"):
        model(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="grouping must be 'interleave' or 'tile', got 'shuffle'"):
        group_kv(torch.zeros(1, 2, 1, 1), 2, "shuffle")
    with pytest.raises(ValueError, match="cache holds 4"):
        model(torch.zeros(1, 5, dtype=torch.long), cache=model.new_cache(1, 4))


@pytest.mark.parametrize("window", [0, 3])
@pytest.mark.parametrize("queries", [1, 4, 6])
def test_attend_masks_what_a_query_may_not_see(window, queries):
    # attend's masks (causal, sliding window, queries at the end of a longer cache) against
    # softmax written out with the mask as a loop over positions
    torch.manual_seed(0)
    q = torch.randn(1, 2, queries, 8)
    k, v = torch.randn(2, 1, 2, 6, 8).unbind(0)
    kpos = torch.arange(6)
    qpos = kpos[6 - queries :]
    visible = torch.tensor(
        [[j <= i and (not window or j > i - window) for j in range(6)] for i in qpos.tolist()]
    )
    scores = (q @ k.transpose(-2, -1)) * 0.3
    manual = F.softmax(scores.masked_fill(~visible, float("-inf")), -1) @ v
    # the keys are the queries' own tokens, or the queries continue a cache of 6 - queries keys
    mask = own_tokens_mask(qpos, window) if queries == 6 else causal_mask(qpos, kpos, window)
    torch.testing.assert_close(attend(q, k, v, mask, 0.3), manual)
    if queries == 1 and not window:  # one new token sees every key: no mask needed
        torch.testing.assert_close(attend(q, k, v, "all", 0.3), manual)


def test_own_tokens_and_the_cache_name_the_cheapest_exact_mask():
    """One new token: "all"; a prompt with nothing cached before it: "causal" (built by the
    kernel itself), or a tensor when a sliding window is shorter than the prompt; tokens after
    cached ones: a tensor from their positions."""
    assert own_tokens_mask(torch.arange(1)) == "all"
    assert own_tokens_mask(torch.arange(5)) == own_tokens_mask(torch.arange(5), 5) == "causal"
    windowed = causal_mask(torch.arange(5), torch.arange(5), 3)
    assert torch.equal(own_tokens_mask(torch.arange(5), 3), windowed)

    def masks(window):  # a prompt of 5 tokens, one new token, then two more
        cache, kv = LayerCache(1, 1, 2, 2, 12, window), torch.zeros(1, 1, 5, 2)
        return [
            cache.update(kv[:, :, :n], kv[:, :, :n], torch.arange(start, start + n), start)[2]
            for start, n in ((0, 5), (5, 1), (6, 2))
        ]

    prompt, token, two = masks(window=0)
    assert (prompt, token) == ("causal", "all")
    assert torch.equal(two, causal_mask(torch.arange(6, 8), torch.arange(8)))
    prompt, token, two = masks(window=3)  # a ring of 3 slots: keys at 3, 4, 5, then 6 and 7
    assert torch.equal(prompt, windowed) and token == "all"
    assert torch.equal(two, causal_mask(torch.arange(6, 8), torch.tensor([3, 4, 5, 6, 7]), 3))


def test_the_blocks_import_neither_the_bridge_nor_transformers():
    """DESIGN: the blocks know nothing of transformers; weights come in through
    `lmcourse.from_transformers` (lmcourse.bridge) only."""
    import ast
    from pathlib import Path

    import lmcourse.blocks
    from lmcourse import bridge

    imported = {}
    for path in Path(lmcourse.blocks.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            bad = [n for n in names if "bridge" in n or n.split(".")[0] == "transformers"]
            if bad:
                imported.setdefault(path.name, []).extend(bad)
    assert imported == {}, f"blocks import the bridge or transformers: {imported}"
    assert not hasattr(DecoderLM, "from_transformers"), "use lmcourse.from_transformers"
    import lmcourse

    assert lmcourse.from_transformers is bridge.from_transformers


def test_the_blocks_never_ask_which_family_they_build():
    """DESIGN: what a family chose is a spec field (docs/ADDING_A_FAMILY.md); the blocks read
    the fields, never `spec.family` nor a family's name."""
    import ast
    from pathlib import Path

    import lmcourse.blocks
    from lmcourse.families import FAMILIES

    found = {}
    for path in sorted(Path(lmcourse.blocks.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "family":
                found.setdefault(path.name, []).append(f"line {node.lineno}: .family")
            elif isinstance(node, ast.Constant) and node.value in FAMILIES:
                found.setdefault(path.name, []).append(f"line {node.lineno}: {node.value!r}")
    assert found == {}, f"the blocks test a family's name: {found}"
