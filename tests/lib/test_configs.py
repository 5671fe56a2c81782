"""Published configurations, built locally, and their toy versions."""

import pytest
from lmcourse import as_spec, configs
from transformers import PretrainedConfig

FEATURES = (
    "family",
    "position_offset",
    "ffn",
    "act",
    "norm",
    "norm_affine",
    "norm_bias",
    "norms_per_block",
    "norms_after",
    "norm_offset",
    "qkv_bias",
    "out_bias",
    "ffn_bias",
    "qk_norm",
    "qk_norm_all_heads",
    "tied",
    "rope_layout",
    "shared_experts",
    "router_bias",
    "routed_scale",
    "norm_topk",
    "router_weights_in_model_dtype",
    "residual_scale",
    "logit_divisor",
)


@pytest.mark.parametrize("name", configs.available())
def test_load_builds_a_fresh_transformers_config(name):
    config = configs.load(name)
    assert isinstance(config, PretrainedConfig)
    assert configs.load(name) is not config, "callers may edit what load returns"


def test_declared_context_is_the_longest_context_a_config_declares():
    assert configs.declared_context(configs.load("gpt2")) == 1024  # n_positions
    assert configs.declared_context(configs.load("Llama-3.1-8B")) == 131072
    assert configs.declared_context(configs.T1_GPT2) == 1024  # its learned position table
    assert configs.declared_context(configs.T1_7B) is None  # rotary, nothing declared
    assert configs.declared_context(as_spec(configs.T1_GPT2)) == 1024


def test_seed_dicts_are_the_t1_lesson_configurations():
    gpt2 = dict(
        d=768,
        layers=12,
        vocab=50257,
        heads=12,
        ffn="gelu",
        bias=True,
        norm="layer",
        tied=True,
        positions=1024,
    )
    big = dict(
        d=4096,
        layers=32,
        vocab=32000,
        heads=32,
        ffn="swiglu",
        hidden=11008,
        bias=False,
        norm="rms",
        tied=False,
    )
    assert (gpt2, big) == (configs.T1_GPT2, configs.T1_7B)


@pytest.mark.parametrize("name", configs.available())
def test_toy_keeps_every_feature_of_the_family(name):
    real, toy = as_spec(configs.load(name)), as_spec(configs.toy(name))
    differ = {
        f: (getattr(real, f), getattr(toy, f))
        for f in FEATURES
        if getattr(real, f) != getattr(toy, f)
    }
    assert not differ, f"{name}: published vs toy {differ}"
    for kind in ("experts", "kv_lora_rank", "sliding_window", "positions", "dense_layers"):
        assert bool(getattr(real, kind)) == bool(getattr(toy, kind)), f"{name}: {kind}"
    assert dict(real.rope_scaling).get("rope_type") == dict(toy.rope_scaling).get("rope_type")
    assert toy.d <= 64 and toy.vocab <= 128 and toy.layers <= 3


def test_toy_accepts_overrides():
    assert configs.toy("Llama-2-7B", num_hidden_layers=4).num_hidden_layers == 4


@pytest.mark.parametrize("make", [configs.load, configs.toy])
def test_unknown_name_raises_value_error_listing_available(make):
    with pytest.raises(ValueError, match=r"unknown configuration 'llama-7b'; available: \["):
        make("llama-7b")


LLAMAS = ("SmolLM2-135M", "TinyLlama-1.1B", "Llama-2-7B", "Llama-3.1-8B", "Llama-3.2-1B")


def test_field_table_reads_each_field_from_the_configs():
    gpt2 = configs.load("gpt2")
    llamas = {name: configs.load(name) for name in LLAMAS}
    rows = {row["decides"]: row for row in configs.field_table(gpt2, llamas)}
    assert len(rows) == len(configs.FIELD_MAP)
    assert rows["query heads"]["GPT-2"] == "12" and rows["key-value heads"]["GPT-2"] == "12"
    assert rows["activation"]["GPT-2"] == "gelu_new"
    for name, config in llamas.items():
        spec = as_spec(config)
        assert rows["key-value heads"][name] == f"{spec.kv_heads:,}"
        assert rows["rotary base"][name] == f"{spec.rope_theta:,.0f}"
        assert rows["tied output table"][name] == str(spec.tied)
    assert rows["rotary scaling"]["Llama-3.1-8B"] == "llama3"
    assert rows["rotary base"]["GPT-2"].startswith("(none")


def test_field_table_refuses_configs_of_other_families():
    gpt2, llama = configs.load("gpt2"), configs.load("Llama-2-7B")
    with pytest.raises(ValueError, match="gpt2 must be a GPT-2 config"):
        configs.field_table(llama, {"x": llama})
    with pytest.raises(ValueError, match="model_type 'llama'.*'Qwen3-8B': 'qwen3'"):
        configs.field_table(gpt2, {"Qwen3-8B": configs.load("Qwen3-8B")})
    with pytest.raises(ValueError, match="non-empty dict"):
        configs.field_table(gpt2, {})
