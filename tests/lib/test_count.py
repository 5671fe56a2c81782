"""The counter against the seed's worked example, published checkpoint sizes and transformers."""

import functools
import warnings

import pytest
import torch
from conftest import decoder_blocks as blocks
from conftest import meta_model
from lmcourse import as_spec, configs
from lmcourse.count import (
    DESCRIBE_FIRST_KEYS,
    PARTS,
    SHARE_GROUPS,
    block_parts,
    breakdown,
    cache_bytes,
    cached_tokens,
    decode_step,
    describe,
    flops_per_token,
    parameter_shares,
    table,
)
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoModelForCausalLM, DynamicCache

# Parameter counts published with the checkpoints (model cards, safetensors index files).
PUBLISHED_TOTAL = {
    "SmolLM2-135M": 134_515_008,
    "Llama-3.1-8B": 8_030_261_248,
    "Llama-3.1-405B": 405_853_388_800,
    "Qwen3-30B-A3B": 30_532_122_624,
    "Mixtral-8x7B": 46_702_792_704,
    "DeepSeek-V3": 671_026_404_352,
    "OLMo-2-7B": 7_298_617_344,  # 2 x 100,352 x 4,096 + 32 x 202,391,552 + 4,096
}
# Active counts pinned from the meta-device transformers models (every parameter but the routed
# experts a token skips, both embedding tables included). Not published figures: the model card
# rounds Qwen3-30B-A3B to "3.3B activated", the Mixtral paper gives 13B active parameters.
PINNED_ACTIVE = {"Qwen3-30B-A3B": 3_353_032_704, "Mixtral-8x7B": 12_879_925_248}
MOE = ["Mixtral-8x7B", "Qwen3-30B-A3B", "DeepSeek-V3"]


@functools.cache
def toy_model(name):
    """A randomly initialised toy model of the family; eager kernels so every matmul is seen."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(
            configs.toy(name), attn_implementation="eager", experts_implementation="eager"
        )
    return model.eval()


def count(params) -> int:
    return sum(p.numel() for p in params)


# ---- the seed's worked example ---------------------------------------------------------


def test_seed_worked_example_prints_the_seed_figures():
    gpt2, big = describe(configs.T1_GPT2), describe(configs.T1_7B)
    assert repr(gpt2).startswith(
        "{'block': 7087872, 'total': 124439808, 'cache_bytes_per_token': 36864, 'ffn_share': 0.666"
    )
    assert repr(big).startswith(
        "{'block': 202383360, 'total': 6738415616, 'cache_bytes_per_token': 524288, "
        "'ffn_share': 0.668"
    )
    assert tuple(gpt2)[:4] == DESCRIBE_FIRST_KEYS


def test_seed_grouped_query_attention_saves_cache_and_parameters():
    big, gqa = describe(configs.T1_7B), describe(dict(configs.T1_7B, kv_heads=8))
    assert gqa["cache_bytes_per_token"] == 131072
    assert big["total"] - gqa["total"] == 805306368


# ---- parameters against transformers (meta device) and published sizes ----------------


@pytest.mark.parametrize("name", configs.available())
def test_total_and_first_block_equal_transformers_parameters(name):
    model, got = meta_model(name), describe(configs.load(name))
    want_total, want_block = count(model.parameters()), count(blocks(model)[0].parameters())
    assert got["total"] == want_total, f"{name}: total off by {got['total'] - want_total:,}"
    assert got["block"] == want_block, f"{name}: block off by {got['block'] - want_block:,}"


@pytest.mark.parametrize("name", sorted(PUBLISHED_TOTAL))
def test_total_equals_published_checkpoint_size(name):
    got = describe(configs.load(name))["total"]
    assert got == PUBLISHED_TOTAL[name], f"{name}: off by {got - PUBLISHED_TOTAL[name]:,}"


def component(name: str) -> str:
    """The `breakdown` part a transformers parameter belongs to, from its qualified name."""
    parts = name.split(".")
    for marker, part in [
        ("embed_tokens", "embeddings"),
        ("wte", "embeddings"),
        ("wpe", "positions"),
        ("embed_positions", "positions"),
        ("lm_head", "output_head"),
        ("fc1", "ffn"),
        ("fc2", "ffn"),
        ("self_attn", "attention"),
        ("attn", "attention"),
        ("shared_experts", "shared_experts"),
        ("experts", "experts"),
        ("gate", "router"),
        ("mlp", "ffn"),
    ]:
        if marker in parts:
            return part
    assert "norm" in name or ".ln_" in name, f"unclassified parameter {name}"
    return "norms"


@pytest.mark.parametrize("name", configs.available())
def test_breakdown_equals_transformers_parameters_per_component(name):
    want = dict.fromkeys(PARTS, 0)
    for param_name, param in meta_model(name).named_parameters():
        want[component(param_name)] += param.numel()
    got = breakdown(configs.load(name))
    diff = {k: got[k] - want[k] for k in PARTS if got[k] != want[k]}
    assert not diff, f"{name}: breakdown minus transformers: {diff}"


def test_parameter_share_groups_cover_every_component_once():
    grouped = [part for names in SHARE_GROUPS.values() for part in names]
    assert sorted(grouped) == sorted(PARTS), f"grouped {sorted(grouped)}, components {PARTS}"


@pytest.mark.parametrize("name", ["gpt2", "SmolLM2-135M", "DeepSeek-V3"])
def test_parameter_shares_are_the_breakdown_grouped_and_sum_to_one(name):
    config = configs.load(name)
    parts, shares = breakdown(config), parameter_shares(config)
    total = sum(parts.values())
    assert list(shares) == list(SHARE_GROUPS)
    assert shares["attention"] == parts["attention"] / total
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-12)


def test_dense_layers_of_deepseek_v3_are_wider_than_moe_layers_without_experts():
    config = configs.load("DeepSeek-V3")
    dense, moe = block_parts(config, 0), block_parts(config, config.first_k_dense_replace)
    model = meta_model("DeepSeek-V3")
    assert sum(dense.values()) == count(blocks(model)[0].parameters())
    assert sum(moe.values()) == count(blocks(model)[config.first_k_dense_replace].parameters())
    assert dense["experts"] == 0 and moe["ffn"] == 0


@pytest.mark.parametrize("name", MOE)
def test_active_is_total_less_the_routed_experts_a_token_skips(name):
    config, model = configs.load(name), meta_model(name)
    routed = count(p for n, p in model.named_parameters() if ".mlp.experts." in n)
    spec = as_spec(config)
    want = count(model.parameters()) - routed + routed * spec.experts_per_token // spec.experts
    got = describe(config)["active"]
    assert got == want, f"{name}: active off by {got - want:,}"
    if name in PINNED_ACTIVE:
        assert got == PINNED_ACTIVE[name], f"{name}: off by {got - PINNED_ACTIVE[name]:,}"


@pytest.mark.parametrize("name", ["gpt2", "Llama-3.1-8B", "Gemma-2-2B"])
def test_dense_models_use_every_parameter(name):
    got = describe(configs.load(name))
    assert got["active"] == got["total"]


# ---- key-value cache against transformers' DynamicCache --------------------------------


def cache_numbers(cache) -> int:
    return sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers)


@pytest.mark.parametrize("name", configs.available())
def test_cache_bytes_equal_dynamic_cache_before_and_past_the_window(name):
    """Prefill 10 tokens (past the toy window of 4), then decode 3 more, batch of 2."""
    config, model = configs.toy(name), toy_model(name)
    ids = torch.randint(0, config.vocab_size, (2, 13), generator=torch.Generator().manual_seed(0))
    cache = DynamicCache(config=config)
    steps = [ids[:, :1], ids[:, 1:10], ids[:, 10:11], ids[:, 11:12], ids[:, 12:13]]
    seen = 0
    with torch.no_grad():
        for step in steps:
            model(step, cache=cache, use_cache=True)
            seen += step.shape[1]
            kv_bytes = cache.layers[0].keys.element_size()
            want = cache_numbers(cache) * kv_bytes
            got = cache_bytes(config, seen, kv_bytes=kv_bytes, batch=2)
            assert got == want, f"{name} after {seen} tokens: {got} bytes, transformers {want}"
            held = [layer.keys.shape[-2] for layer in cache.layers]
            assert cached_tokens(config, seen) == held, f"{name}: tokens held per layer"
    per_token = describe(config, kv_bytes=kv_bytes)["cache_bytes_per_token"]
    assert per_token == cache_bytes(config, 1, kv_bytes=kv_bytes)


@pytest.mark.parametrize("name", ["Gemma-2-2B", "Mistral-7B-v0.1"])
def test_sliding_layers_keep_window_minus_one_tokens(name):
    config, model = configs.toy(name), toy_model(name)
    cache = DynamicCache(config=config)
    with torch.no_grad():
        model(torch.zeros(1, 3 * config.sliding_window, dtype=torch.long), cache=cache)
    kinds = getattr(config, "layer_types", None) or ["sliding_attention"] * config.num_hidden_layers
    for kind, layer in zip(kinds, cache.layers, strict=True):
        full = 3 * config.sliding_window
        want = config.sliding_window - 1 if kind == "sliding_attention" else full
        assert layer.keys.shape[-2] == want, f"{name} {kind} layer holds {layer.keys.shape}"


def test_mla_cache_holds_the_latent_and_the_rotary_key():
    config, model = configs.toy("DeepSeek-V3"), toy_model("DeepSeek-V3")
    cache = DynamicCache(config=config)
    with torch.no_grad():
        model(torch.zeros(1, 5, dtype=torch.long), cache=cache)
    for layer in cache.layers:  # one "head": the shared latent and the shared rotary key
        assert tuple(layer.keys.shape) == (1, 1, 5, config.kv_lora_rank)
        assert tuple(layer.values.shape) == (1, 1, 5, config.qk_rope_head_dim)
    real = configs.load("DeepSeek-V3")
    per_token = real.num_hidden_layers * (real.kv_lora_rank + real.qk_rope_head_dim) * 2
    assert describe(real)["cache_bytes_per_token"] == per_token


def test_cache_grows_with_batch_and_bytes_per_number():
    config = configs.load("Llama-3.1-8B")
    assert cache_bytes(config, 100, kv_bytes=1, batch=4) == 2 * cache_bytes(config, 100, batch=1)
    assert cache_bytes(config, 100, kv_bytes=0.5) == cache_bytes(config, 100) // 4
    assert cache_bytes(config, 0) == 0


# ---- FLOPs against torch's FLOP counter ------------------------------------------------


@pytest.mark.parametrize("name", configs.available())
def test_flops_per_token_equal_torch_flop_counter_on_one_decode_step(name):
    config, model, context = configs.toy(name), toy_model(name), 7  # past the toy window
    ids = torch.randint(
        0, config.vocab_size, (1, context), generator=torch.Generator().manual_seed(0)
    )
    cache = DynamicCache(config=config)
    with torch.no_grad():
        model(ids[:, :-1], cache=cache)
        with FlopCounterMode(display=False) as counter:
            model(ids[:, -1:], cache=cache)
    want = counter.get_total_flops()
    spec = as_spec(config)
    if spec.kv_lora_rank:  # transformers re-expands every cached latent at every step
        want -= (
            spec.layers
            * 2
            * spec.kv_lora_rank
            * spec.heads
            * (spec.qk_nope_head_dim + spec.v_head_dim)
            * (context - 1)
        )
    got = flops_per_token(config, context)
    assert got == want, f"{name}: {got:,} FLOPs, torch counted {want:,}"


# ---- printing and bad input ------------------------------------------------------------


def test_table_aligns_numbers_right_and_text_left():
    text = table(
        [
            {"name": "gpt2", "total": 124439808, "share": 0.6664},
            {"name": "Llama-2-7B", "total": 6738415616},
        ]
    )
    lines = text.splitlines()
    assert lines[0].split() == ["name", "total", "share"]
    assert lines[2].startswith("gpt2 ") and "124,439,808" in lines[2] and lines[2].endswith("0.666")
    assert lines[3].startswith("Llama-2-7B") and lines[3].endswith("6,738,415,616")
    assert len({len(line) for line in lines[:3]}) == 1, "columns line up"


LLAMA = configs.T1_7B
BAD_INPUTS = {
    "negative_tokens": (lambda: cache_bytes(LLAMA, -1), r"tokens must be an integer >= 0, got -1"),
    "fractional_tokens": (lambda: cache_bytes(LLAMA, 2.5), r"tokens must be an integer >= 0"),
    "zero_kv_bytes": (
        lambda: cache_bytes(LLAMA, 8, kv_bytes=0),
        r"kv_bytes must be a positive number of bytes per cached number",
    ),
    "text_kv_bytes": (lambda: describe(LLAMA, kv_bytes="2"), r"kv_bytes must be a positive"),
    "zero_batch": (lambda: cache_bytes(LLAMA, 8, batch=0), r"batch must be an integer >= 1, got 0"),
    "zero_context": (lambda: flops_per_token(LLAMA, 0), r"context must be an integer >= 1"),
    "layer_out_of_range": (lambda: block_parts(LLAMA, 32), r"layer must be an integer in 0..31"),
    "empty_table": (lambda: table([]), r"rows must be a non-empty list of dicts"),
    "bad_config": (lambda: describe("gpt2"), r"config must be a dict, a transformers config"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_raises_value_error_naming_field_and_valid_values(case):
    make, message = BAD_INPUTS[case]
    with pytest.raises(ValueError, match=message):
        make()


def test_decode_step_reads_the_weights_once_and_every_sequences_cache():
    llama = configs.load("Llama-3.1-8B")  # untied: the input table is read one row per sequence
    info, spec = describe(llama), as_spec(llama)
    for batch in (1, 8, 64):
        step = decode_step(llama, 4096, batch)
        weights = info["total"] - spec.vocab * spec.d + batch * spec.d
        assert step["bytes"] == 2 * weights + cache_bytes(llama, 4096, batch=batch)
        assert step["flops"] == batch * flops_per_token(llama, 4096)
        assert step["intensity"] == step["flops"] / step["bytes"]
    gpt2 = configs.load("gpt2")  # tied token table, read whole by the head; position rows looked up
    step = decode_step(gpt2, 100, 2, weight_bytes=4, kv_bytes=4)
    weights = describe(gpt2)["total"] - 1024 * 768 + 2 * 768
    assert step["bytes"] == 4 * weights + cache_bytes(gpt2, 100, kv_bytes=4, batch=2)
    one, many = (decode_step(llama, 4096, b)["intensity"] for b in (1, 256))
    assert 1.0 < one < 1.2 and many > 20 * one, "batching shares the weight reads"


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: decode_step(configs.load("Mixtral-8x7B"), 10), "dense models only"),
        (lambda: decode_step(configs.load("gpt2"), 10, 0), "batch must be an integer >= 1"),
        (lambda: decode_step(configs.load("gpt2"), 10, True), "batch must be an integer >= 1"),
        (lambda: decode_step(configs.load("gpt2"), 0), "context must be an integer >= 1"),
        (lambda: decode_step(configs.load("gpt2"), 8, weight_bytes=0), "weight_bytes must be"),
        (lambda: decode_step(configs.load("gpt2"), 8, kv_bytes="2"), "kv_bytes must be"),
    ],
)
def test_decode_step_refuses_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
