"""DecoderLM against transformers: same weights, same logits, same greedy tokens.

Every family is checked on the random configurations its registry entry lists (`parity`: most at
two sizes, so the implementation is not tuned to one shape). Every parameter is random, norm
scales included, so a norm or scale applied in the wrong place shows.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
import transformers
from lmcourse import from_transformers
from parity_cases import CASES, PARITY, VOCAB, parity_config, random_hf_model

TOL = 1e-4  # max abs logit difference allowed, float32


@pytest.mark.parametrize("config", CASES)
def test_logits_match_transformers(config):
    hf = random_hf_model(config)
    ours = from_transformers(hf)
    ids = torch.randint(0, VOCAB, (2, 13), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected, got = hf(ids).logits, ours(ids)
    assert got.shape == expected.shape == (2, 13, VOCAB)
    torch.testing.assert_close(
        got, expected, rtol=0, atol=TOL, msg=lambda m: f"{config.model_type}: {m}"
    )


@pytest.mark.parametrize("config", CASES)
def test_greedy_generation_matches_transformers(config):
    hf = random_hf_model(config)
    hf.generation_config.eos_token_id = None  # never stop early
    ours = from_transformers(hf)
    prompt = torch.randint(0, VOCAB, (1, 5), generator=torch.Generator().manual_seed(2))
    cached = ours.generate(prompt, 7)  # 12 tokens: past Gemma 2's and Mixtral's windows
    uncached = ours.generate(prompt, 7, use_cache=False)
    expected = hf.generate(prompt, max_new_tokens=7, do_sample=False, pad_token_id=0)
    assert torch.equal(cached, uncached), f"cached {cached.tolist()}, uncached {uncached.tolist()}"
    assert torch.equal(cached, expected), f"ours {cached.tolist()} != hf {expected.tolist()}"


@pytest.mark.parametrize("name", ["gpt2", "opt", "llama", "gemma2", "deepseek_v3"])
def test_position_ids_match_transformers(name):
    hf = random_hf_model(PARITY[f"{name}-main"])
    ours = from_transformers(hf)
    ids = torch.randint(0, VOCAB, (2, 7), generator=torch.Generator().manual_seed(3))
    positions = torch.tensor([[3, 5, 8, 9, 20, 21, 30], [0, 1, 2, 10, 11, 12, 40]])
    with torch.no_grad():
        expected = hf(ids, position_ids=positions).logits
        got = ours(ids, position_ids=positions)
        default = ours(ids)
    torch.testing.assert_close(
        got, expected, rtol=0, atol=TOL, msg=lambda m: f"{name}, position_ids: {m}"
    )
    assert not torch.allclose(got, default, rtol=0, atol=1e-3), (
        f"{name}: position_ids had no effect on the logits"
    )


YARN = {  # long-context rotary scaling, read at positions far beyond the original context (16)
    "deepseek_v3-yarn": parity_config(  # DeepSeek-V3's own rule: mscale² in the score scale
        "deepseek_v3",
        "main",
        max_position_embeddings=640,
        rope_parameters={
            "rope_type": "yarn",
            "rope_theta": 10000.0,
            "factor": 40.0,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
            "original_max_position_embeddings": 16,
        },
    ),
    "qwen2-yarn": parity_config(  # factor alone: cos and sin scaled by 1 + 0.1 ln 4
        "qwen2",
        "main",
        max_position_embeddings=64,
        rope_parameters={
            "rope_type": "yarn",
            "rope_theta": 10000.0,
            "factor": 4.0,
            "original_max_position_embeddings": 16,
        },
    ),
}


@pytest.mark.parametrize("name", YARN)
def test_yarn_scaled_models_match_transformers_beyond_the_original_context(name):
    hf = random_hf_model(YARN[name])
    ours = from_transformers(hf)
    assert ours.rotary.amplitude == pytest.approx(hf.model.rotary_emb.attention_scaling)
    ids = torch.randint(0, VOCAB, (2, 9), generator=torch.Generator().manual_seed(4))
    positions = torch.tensor([[0, 1, 2, 3, 15, 16, 17, 30, 60], [5, 9, 20, 33, 34, 40, 47, 50, 63]])
    with torch.no_grad():
        expected = hf(ids, position_ids=positions).logits
        got = ours(ids, position_ids=positions)
    torch.testing.assert_close(got, expected, rtol=0, atol=TOL, msg=lambda m: f"{name}: {m}")
    prompt = ids[:1, :5]
    hf.generation_config.eos_token_id = None
    expected_tokens = hf.generate(prompt, max_new_tokens=20, do_sample=False, pad_token_id=0)
    assert torch.equal(ours.generate(prompt, 20), expected_tokens), "greedy tokens differ"


def bfloat16_hf_model(config, seed: int = 0):
    """`random_hf_model`'s weights in a transformers model built in bfloat16, as a user loads a
    checkpoint (`from_pretrained(..., dtype=torch.bfloat16)`): parameters rounded to bfloat16,
    the rotary `inv_freq` (not in the state dict) computed in float32 at construction. A float32
    model cast with `.to(torch.bfloat16)` would round inv_freq too, and hide that difference."""
    state = random_hf_model(config, seed).state_dict()
    config = copy.deepcopy(config)  # from_config records the dtype in the config it is given
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    model.load_state_dict(state)
    return model


BF16_EXACT = [  # every family the bridge reads in bfloat16 with the same roundings as transformers
    *(f"{name}-main" for name in ("llama", "qwen3", "mixtral", "gemma2", "mistral", "qwen2")),
    *("llama-smollm2", "phi3-main", "qwen3_moe-main"),
    *("mixtral-held-out", "gemma2-held-out"),  # k = 3 experts
]


@pytest.mark.parametrize("name", BF16_EXACT)
def test_bfloat16_logits_equal_transformers_bit_for_bit(name):
    """Loaded in bfloat16, these families run the same operations in the same dtypes as
    transformers 5.24, so their logits are identical: rotary angles in float32 (inv_freq kept in
    float32), Gemma 2's sqrt(d) rounded to bfloat16 before it scales the embeddings, router
    logits in the model's dtype with a float32 softmax (Mixtral, Qwen3-MoE), the k weighted
    expert outputs summed before one cast. (GPT-2, OPT, OLMo, OLMo 2 and DeepSeek-V3 round in
    another order in places, for example LayerNorm statistics, and differ by a few bfloat16
    steps.)"""
    hf = bfloat16_hf_model(PARITY[name])
    ours = from_transformers(hf)
    ids = torch.randint(0, VOCAB, (2, 13), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected, got = hf(ids).logits, ours(ids)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(
        got, expected, rtol=0, atol=0, msg=lambda m: f"{name}, bfloat16: {m}"
    )


ANGLE_TOL = 1e-3  # radians at position 4,000; a bfloat16 inv_freq is off by several radians there


@pytest.mark.parametrize("build", ["from_transformers", "to(bfloat16)"])
def test_bfloat16_model_keeps_rotary_angles_in_float32(build):
    """SmolLM2's rotary shape (head width 64, base 100,000): transformers loaded in bfloat16
    keeps inv_freq in float32, and so must a DecoderLM converted from it or cast to bfloat16,
    or the angles at position 4,000 drift by radians. The cos and sin reaching the heads agree
    bit for bit."""
    config = transformers.LlamaConfig(
        hidden_size=256,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        vocab_size=VOCAB,
        max_position_embeddings=8192,
        rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
    )
    hf = bfloat16_hf_model(config)
    if build == "from_transformers":
        ours = from_transformers(hf)
    else:
        ours = from_transformers(random_hf_model(config)).to(torch.bfloat16)
    assert ours.head.weight.dtype == torch.bfloat16
    theirs = hf.model.rotary_emb.inv_freq
    assert theirs.dtype == ours.rotary.inv_freq.dtype == torch.float32
    error = (4000 * (ours.rotary.inv_freq.double() - theirs.double())).abs().max().item()
    rounded = (4000 * (theirs.bfloat16().double() - theirs.double())).abs().max().item()
    assert error < ANGLE_TOL, f"{build}: angle error {error:.3g} rad at position 4,000"
    assert rounded > 1.0, f"a bfloat16 inv_freq errs by only {rounded:.3g} rad: test too weak"
    positions = torch.tensor([[0, 1, 999, 1000, 3999, 4000]])
    x = torch.zeros(1, 6, 256, dtype=torch.bfloat16)
    cos, sin = ours.rotary(positions, torch.bfloat16)  # [1, 1, T, 64]
    hf_cos, hf_sin = hf.model.rotary_emb(x, positions)  # [1, T, 64]
    assert cos.dtype == hf_cos.dtype == torch.bfloat16
    torch.testing.assert_close(cos[:, 0], hf_cos, rtol=0, atol=0, msg=lambda m: f"cos: {m}")
    torch.testing.assert_close(sin[:, 0], hf_sin, rtol=0, atol=0, msg=lambda m: f"sin: {m}")


def test_bfloat16_gemma2_scales_embeddings_by_the_rounded_sqrt_d():
    """Gemma 2 multiplies its embeddings by sqrt(d) rounded to the model's dtype
    (Gemma2ScaledWordEmbedding): sqrt(32) = 5.657 becomes 5.656 in bfloat16. What enters the
    first block is identical in both models."""
    hf = bfloat16_hf_model(PARITY["gemma2-main"])
    ours = from_transformers(hf)
    assert hf.model.embed_tokens.embed_scale.to(torch.bfloat16).item() != math.sqrt(32)
    ids = torch.randint(0, VOCAB, (2, 13), generator=torch.Generator().manual_seed(1))
    seen = {}

    def keep(name):
        def hook(module, args, kwargs):
            seen[name] = args[0] if args else kwargs["hidden_states"]

        return hook

    hooks = [
        hf.model.layers[0].register_forward_pre_hook(keep("hf"), with_kwargs=True),
        ours.blocks[0].register_forward_pre_hook(keep("ours"), with_kwargs=True),
    ]
    with torch.no_grad():
        hf(ids), ours(ids)
    for hook in hooks:
        hook.remove()
    assert seen["ours"].dtype == torch.bfloat16
    torch.testing.assert_close(seen["ours"], seen["hf"], rtol=0, atol=0)


@pytest.mark.parametrize("name", ["mixtral", "qwen3_moe", "deepseek_v3"])
def test_bfloat16_router_matches_transformers_dtypes(name):
    """The router of the first mixture layer, fed the same bfloat16 hidden states: the same
    experts, and weights equal bit for bit in the dtype transformers returns them (float32 for
    Mixtral and DeepSeek-V3, bfloat16 for Qwen3-MoE, whose router casts them back), from a
    router weight in the same dtype (DeepSeek-V3's stays float32)."""
    config = PARITY[f"{name}-main"]
    hf = bfloat16_hf_model(config)
    ours = from_transformers(hf)
    layer = next(i for i, b in enumerate(ours.blocks) if hasattr(b.ffn, "router"))
    x = torch.randn(40, config.hidden_size, generator=torch.Generator().manual_seed(5))
    x = x.bfloat16()
    gate = hf.model.layers[layer].mlp.gate
    assert ours.blocks[layer].ffn.router.weight.dtype == gate.weight.dtype
    with torch.no_grad():
        _, hf_weights, hf_chosen = gate(x)
        weights, chosen = ours.blocks[layer].ffn.router(x)
    assert weights.dtype == hf_weights.dtype, f"{name}: {weights.dtype} vs {hf_weights.dtype}"
    order, hf_order = chosen.argsort(-1), hf_chosen.argsort(-1)  # same experts, any order
    assert torch.equal(chosen.gather(1, order), hf_chosen.gather(1, hf_order))
    torch.testing.assert_close(
        weights.gather(1, order), hf_weights.gather(1, hf_order), rtol=0, atol=0
    )
