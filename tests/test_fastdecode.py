"""lmcourse.fastdecode against the reference DecoderLM: the same greedy tokens and, step by step,
logits within 1e-4, on every family of the parity tests (and on the ablation variants whose
grouping or gate the fast path rewrites)."""

from __future__ import annotations

import pytest
import torch
from lmcourse import from_transformers
from lmcourse.ablations import tile_kv_heads, without_gate
from lmcourse.fastdecode import FastDecoder
from test_parity import CASES, OTHER_FAMILIES, VOCAB, random_hf_model

TOL = 1e-4
FAMILIES = CASES + [pytest.param(cfg, id=name) for name, cfg in OTHER_FAMILIES.items()]


def reference_and_fast(config):
    model = from_transformers(random_hf_model(config)).eval()
    return model, FastDecoder(model)


def assert_same_decoding(model, fast, steps: int = 9):
    """Greedy tokens equal, and every step's logits within TOL, on a batch of two prompts."""
    prompt = torch.randint(0, VOCAB, (2, 5), generator=torch.Generator().manual_seed(5))
    expected = model.generate(prompt, steps)  # 14 tokens: past every sliding window here
    assert torch.equal(fast.generate(prompt, steps), expected)
    ours, theirs = model.new_cache(2, 14), model.new_cache(2, 14)
    with torch.inference_mode():
        fast.prefill(prompt, ours)
        model(prompt, cache=theirs)
        for t in range(5, 14):
            token = expected[:, t : t + 1]
            got, want = fast.step(token, ours), model(token, cache=theirs)
            torch.testing.assert_close(
                got, want, rtol=0, atol=TOL, msg=lambda m, t=t: f"step {t}: {m}"
            )


@pytest.mark.parametrize("config", FAMILIES)
def test_fast_decoding_gives_the_reference_tokens_and_logits(config):
    assert_same_decoding(*reference_and_fast(config))


@pytest.mark.parametrize("ablate", [tile_kv_heads, without_gate], ids=["tile", "no-gate"])
def test_fast_decoding_follows_the_ablated_model(ablate):
    from test_parity import MAIN

    model = ablate(from_transformers(random_hf_model(MAIN["llama"])).eval())
    assert_same_decoding(model, FastDecoder(model))


@pytest.mark.slow  # torch.compile: about 20 s on 2 cores
def test_compiled_fast_decoding_gives_the_reference_tokens_and_logits():
    """torch.compile of the step (opt-in, about a minute to compile): the same tokens and
    logits, with no new compilation as the cached length grows."""
    from test_parity import MAIN

    model = from_transformers(random_hf_model(MAIN["smollm2"])).eval()
    fast = FastDecoder(model, compiled=True)
    assert_same_decoding(model, fast)
    frames = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    assert_same_decoding(model, fast)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == frames


def test_fast_path_fuses_projections_and_falls_back_for_other_blocks():
    from test_parity import MAIN

    dense, _ = reference_and_fast(MAIN["smollm2"])
    fast = FastDecoder(dense)
    block = dense.blocks[0]
    qkv = fast.attention[0].qkv
    d = dense.spec.d
    assert qkv.shape == (d, block.attn.q_proj.out_features + 2 * block.attn.k_proj.out_features)
    assert fast.ffn[0].up.shape == (d, 2 * block.ffn.up_proj.out_features)
    latent, _ = reference_and_fast(MAIN["deepseek_v3"])
    fast = FastDecoder(latent)
    assert fast.attention[0] is latent.blocks[0].attn  # latent attention: the block itself
    assert fast.ffn[-1] is latent.blocks[-1].ffn  # mixture of experts: the block itself


def test_bad_inputs_are_named():
    from test_parity import MAIN

    model, fast = reference_and_fast(MAIN["llama"])
    with pytest.raises(ValueError, match="DecoderLM"):
        FastDecoder(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"\[batch, 1\]"):
        fast.step(torch.zeros(1, 3, dtype=torch.long), model.new_cache(1, 8))
    with pytest.raises(ValueError, match="max_new_tokens"):
        fast.generate(torch.zeros(1, 3, dtype=torch.long), 0)
    with pytest.raises(ValueError, match=r"\[batch, tokens\]"):
        fast.generate(torch.zeros(3, dtype=torch.long), 2)
