"""lmcourse.fastdecode against the reference DecoderLM: the same greedy tokens and, step by step,
logits within 1e-4, on every family of the parity tests (and on the ablation variants, whose
swapped modules the fast path calls as they are)."""

from __future__ import annotations

import pytest
import torch
from conftest import spec
from lmcourse import from_transformers
from lmcourse.ablations import TiledAttention, UngatedMLP, tile_kv_heads, without_gate
from lmcourse.fastdecode import FastDecoder
from parity_cases import CASES, PARITY, VOCAB, parity_config, random_hf_model

TOL = 1e-4


def reference_and_fast(config, parts=1):
    model = from_transformers(random_hf_model(config)).eval()
    return model, FastDecoder(model, parts=parts)


def assert_same_decoding(model, fast, steps: int = 9, batch: int = 2):
    """Greedy tokens equal, and every step's logits within TOL, on a batch of prompts."""
    prompt = torch.randint(0, VOCAB, (batch, 5), generator=torch.Generator().manual_seed(5))
    expected = model.generate(prompt, steps)  # 14 tokens: past every sliding window here
    assert torch.equal(fast.generate(prompt, steps), expected)
    ours, theirs = model.new_cache(batch, 14), model.new_cache(batch, 14)
    with torch.inference_mode():
        fast.prefill(prompt, ours)
        model(prompt, cache=theirs)
        for t in range(5, 14):
            token = expected[:, t : t + 1]
            got, want = fast.step(token, ours), model(token, cache=theirs)
            torch.testing.assert_close(
                got, want, rtol=0, atol=TOL, msg=lambda m, t=t: f"step {t}: {m}"
            )


# parts=1: the matrices stored [in, out] (one thread, a GPU); parts=3: cut into three blocks of
# columns, the last padded wherever a width is not a multiple of three
@pytest.mark.parametrize("parts", [1, 3], ids=["columns", "blocks"])
@pytest.mark.parametrize("config", CASES)
def test_fast_decoding_gives_the_reference_tokens_and_logits(config, parts):
    assert_same_decoding(*reference_and_fast(config, parts))


@pytest.mark.parametrize("ablate", [tile_kv_heads, without_gate], ids=["tile", "no-gate"])
def test_fast_decoding_follows_the_ablated_model(ablate):
    model = ablate(from_transformers(random_hf_model(PARITY["llama-main"])).eval())
    fast = FastDecoder(model)
    # a module an ablation swapped in has no fast form (its type is not the one the fast form
    # rewrites): the decoder calls it as it is
    swapped = [
        m for b in model.blocks for m in (b.attn, b.ffn) if type(m) in (TiledAttention, UngatedMLP)
    ]
    assert len(swapped) == model.spec.layers, swapped
    assert all(any(m is kept for kept in fast.attention + fast.ffn) for m in swapped)
    assert_same_decoding(model, fast)


def graphs():
    """How many graphs torch.compile has compiled in this process."""
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


@pytest.mark.slow  # torch.compile compiles the step first
def test_compiled_fast_decoding_gives_the_reference_tokens_and_logits():
    """torch.compile of the step (opt-in, slow to compile): the same tokens and
    logits for one sequence (each product a loop of its own) and for two (`F.linear`), with no
    new compilation as the cached length grows, and for a second decoder of another shape."""
    model = from_transformers(random_hf_model(PARITY["llama-smollm2"])).eval()
    fast = FastDecoder(model, compiled=True)
    before = graphs()
    # Two graphs for one sequence, whatever the token (generate's own, a column of its output,
    # or a slice of that output made in inference mode: assert_same_decoding's steps): one for
    # every step but one, which fills the cache's last slot (the filled slots are then the
    # whole cache, which the compiled graph's guards tell apart)
    assert_same_decoding(model, fast, batch=1)
    assert graphs() == before + 2
    assert_same_decoding(model, fast, batch=1)
    assert graphs() == before + 2
    # each graph's guards dropped are those on the decoder's own tensors, one per tensor: four
    # fused matrices and a score scale per layer, and the output matrix
    own = len(fast._own_tensors())
    assert own == 5 * model.spec.layers + 1 and set(fast._unguarded) == {own}, fast._unguarded
    assert_same_decoding(model, fast, batch=2)
    assert graphs() == before + 4  # and two for two sequences
    # A second decoder, of a model that differs only in its feed-forward width, compiles its
    # own code, so that the graphs compiled for the first one, which do not check the first
    # one's matrices, are never looked up for it; and it decodes its own model's tokens.
    narrower = from_transformers(
        random_hf_model(parity_config("llama", "smollm2", intermediate_size=48), seed=1)
    ).eval()
    second = FastDecoder(narrower, compiled=True)
    assert second._step_code is not fast._step_code
    assert all(
        code is not FastDecoder._step.__code__ for code in (fast._step_code, second._step_code)
    )
    assert_same_decoding(narrower, second, batch=1)
    assert graphs() == before + 6
    assert set(second._unguarded) == {own}, second._unguarded


@pytest.mark.parametrize("storage", ["columns", "blocks", "rows"])
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("bias", [False, True])
def test_fused_weights_give_each_linear_its_own_output(storage, batch, bias):
    """Two nn.Linear side by side, stored each way (widths 5 and 6 cut into 4 blocks: padded),
    give the two outputs concatenated, and add_to adds them to the residual as a block joins a
    stage's output: after a post norm, and times the block's residual scale (Granite)."""
    from lmcourse.blocks import Block
    from lmcourse.fastdecode import _Weights

    torch.manual_seed(0)
    linears = [torch.nn.Linear(7, width, bias=bias) for width in (5, 6)]
    x, residual = torch.randn(batch, 7), torch.randn(batch, 11)
    fused = _Weights(*linears, storage=storage, parts=4)
    plain, scaled = Block(spec(), 0), Block(spec(residual_scale=0.22), 0)
    with torch.no_grad():
        expected = torch.cat([linear(x) for linear in linears], dim=-1)
        torch.testing.assert_close(fused(x), expected, rtol=0, atol=1e-6)
        for block, post, want in (
            (plain, None, residual + expected),
            (plain, torch.tanh, residual + torch.tanh(expected)),
            (scaled, None, residual + 0.22 * expected),
            (scaled, torch.tanh, residual + 0.22 * torch.tanh(expected)),
        ):
            got = fused.add_to(residual, x, post, block)
            torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
    stored = {"columns": (7, 11), "blocks": (4, 7, 3), "rows": (11, 7)}[storage]
    assert fused.weight.shape == stored


def test_the_fast_path_cuts_its_matrices_for_the_threads_and_falls_back_for_other_blocks():
    dense = from_transformers(random_hf_model(PARITY["llama-smollm2"])).eval()
    block, d = dense.blocks[0], dense.spec.d
    fused = block.attn.q_proj.out_features + 2 * block.attn.k_proj.out_features
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # the default: as many blocks as torch has threads
        two = FastDecoder(dense)
    finally:
        torch.set_num_threads(threads)
    assert two.parts == 2 and two.attention[0].qkv.weight.shape == (2, d, fused // 2)
    assert two.ffn[0].up.weight.shape == (2, d, block.ffn.up_proj.out_features)
    one = FastDecoder(dense, parts=1)
    assert one.attention[0].qkv.weight.shape == (d, fused)
    assert one.head.weight.shape == (d, dense.spec.vocab)
    assert FastDecoder(dense, compiled=True).head.weight.shape == (dense.spec.vocab, d)
    latent = from_transformers(random_hf_model(PARITY["deepseek_v3-main"])).eval()
    fast = FastDecoder(latent)
    assert fast.attention[0] is latent.blocks[0].attn  # latent attention: the block itself
    assert fast.ffn[-1] is latent.blocks[-1].ffn  # mixture of experts: the block itself


def test_bad_inputs_are_named():
    model, fast = reference_and_fast(PARITY["llama-main"])
    with pytest.raises(ValueError, match="DecoderLM"):
        FastDecoder(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"parts must be an integer >= 1"):
        FastDecoder(model, parts=0)
    with pytest.raises(ValueError, match="applies to the eager step"):
        FastDecoder(model, compiled=True, parts=2)
    with pytest.raises(ValueError, match=r"\[batch, 1\]"):
        fast.step(torch.zeros(1, 3, dtype=torch.long), model.new_cache(1, 8))
    with pytest.raises(ValueError, match="max_new_tokens"):
        fast.generate(torch.zeros(1, 3, dtype=torch.long), 0)
    with pytest.raises(ValueError, match=r"\[batch, tokens\]"):
        fast.generate(torch.zeros(3, dtype=torch.long), 2)
