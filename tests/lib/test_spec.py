"""ModelSpec: config dicts and transformers configs read into one validated description."""

import dataclasses
import math

import pytest
import torch
from lmcourse import as_spec, configs
from lmcourse.spec import ModelSpec
from transformers import AutoConfig, AutoModelForCausalLM

LLAMA_7B = ModelSpec.from_dict(configs.T1_7B)


def test_dict_gelu_is_gpt2_feed_forward_4d_wide_with_biases():
    spec = ModelSpec.from_dict(configs.T1_GPT2)
    assert (spec.ffn, spec.hidden, spec.ffn_bias) == ("gelu", 4 * 768, True)
    assert spec.qkv_bias and spec.out_bias, "bias=True puts biases on q, k, v and the output"
    assert (spec.norm, spec.norm_affine, spec.norm_bias) == ("layer", True, True)
    assert (spec.positions, spec.rope_theta, spec.tied) == (1024, 0.0, True)
    assert spec.head_dim == 768 // 12 and spec.kv_heads == 12


def test_dict_swiglu_has_no_feed_forward_biases_even_with_bias_true():
    spec = ModelSpec.from_dict(dict(configs.T1_7B, bias=True))
    assert (spec.qkv_bias, spec.out_bias, spec.ffn_bias) == (True, True, False)
    assert (spec.hidden, spec.norm_bias, spec.positions) == (11008, False, 0)


def test_dict_kv_heads_defaults_to_heads_and_can_be_shared():
    assert LLAMA_7B.kv_heads == LLAMA_7B.heads == 32
    assert ModelSpec.from_dict(dict(configs.T1_7B, kv_heads=8)).kv_heads == 8


def test_as_spec_accepts_dict_transformers_config_and_spec():
    spec = as_spec(configs.T1_7B)
    assert as_spec(spec) is spec
    assert as_spec(spec) is spec
    assert as_spec(configs.load("Llama-2-7B")).family == "llama"


def test_derived_defaults_are_filled_in():
    assert LLAMA_7B.attn_scale == 128**-0.5
    assert LLAMA_7B.rotary_dim == 128
    assert LLAMA_7B.layer_types == ("full_attention",) * 32


@pytest.mark.parametrize("name", configs.available())
def test_as_spec_reads_sizes_of_every_published_config(name):
    config = configs.load(name)
    spec = as_spec(config)
    assert spec.family == config.model_type
    if config.model_type == "gpt2":
        got = (spec.d, spec.layers, spec.heads, spec.positions)
        want = (config.n_embd, config.n_layer, config.n_head, config.n_positions)
    elif config.model_type == "opt":  # two rows more than positions: position p reads row p + 2
        got = (spec.d, spec.layers, spec.heads, spec.positions, spec.position_offset)
        want = (
            config.hidden_size,
            config.num_hidden_layers,
            config.num_attention_heads,
            config.max_position_embeddings + 2,
            2,
        )
    else:
        got = (spec.d, spec.layers, spec.heads, spec.vocab, spec.tied, spec.rope_theta)
        want = (
            config.hidden_size,
            config.num_hidden_layers,
            config.num_attention_heads,
            config.vocab_size,
            config.tie_word_embeddings,
            config.rope_parameters["rope_theta"],
        )
    assert got == want, f"{name}: spec {got} != config {want}"


def _tiny_model(name):
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(configs.toy(name))


@pytest.mark.parametrize("name", [n for n in configs.available() if n != "gpt2"])
def test_attention_scale_and_head_width_match_transformers_attention(name):
    model = _tiny_model(name).model
    attention = (model.decoder if hasattr(model, "decoder") else model).layers[0].self_attn
    spec = as_spec(configs.toy(name))
    assert math.isclose(spec.attn_scale, attention.scaling, rel_tol=1e-12), (
        f"{name}: attn_scale {spec.attn_scale} != transformers' scaling {attention.scaling}"
    )
    head_dim = attention.qk_head_dim if spec.kv_lora_rank else attention.head_dim
    assert spec.head_dim == head_dim


def test_deepseek_v3_attention_scale_includes_yarn_mscale():
    config = configs.load("DeepSeek-V3")
    with torch.device("meta"):
        attention = (
            AutoModelForCausalLM.from_config(
                configs.toy(
                    "DeepSeek-V3",
                    qk_nope_head_dim=config.qk_nope_head_dim,
                    qk_rope_head_dim=config.qk_rope_head_dim,
                )
            )
            .model.layers[0]
            .self_attn
        )
    spec = as_spec(config)
    assert math.isclose(spec.attn_scale, attention.scaling, rel_tol=1e-12)
    assert spec.attn_scale > 192**-0.5, "yarn's mscale (factor 40) enlarges the score scale"


def test_gemma2_features():
    config = configs.load("Gemma-2-2B")
    spec = as_spec(config)
    assert (spec.ffn, spec.norms_per_block, spec.norm_offset) == ("geglu", 4, 1.0)
    assert spec.embed_scale == math.sqrt(config.hidden_size)
    assert spec.head_dim == 256 != spec.d // spec.heads
    assert (spec.attn_softcap, spec.final_softcap) == (
        config.attn_logit_softcapping,
        config.final_logit_softcapping,
    )
    assert spec.layer_types == tuple(config.layer_types)
    assert spec.sliding_window == config.sliding_window and spec.tied


def test_mistral_slides_on_every_layer():
    spec = as_spec(configs.load("Mistral-7B-v0.1"))
    assert spec.sliding_window == 4096
    assert set(spec.layer_types) == {"sliding_attention"}


def test_qwen2_biases_on_query_key_value_only():
    spec = as_spec(configs.load("Qwen2.5-7B"))
    assert (spec.qkv_bias, spec.out_bias, spec.ffn_bias) == (True, False, False)
    assert set(spec.layer_types) == {"full_attention"} and spec.sliding_window == 0


def test_qwen3_moe_head_dim_is_not_width_over_heads_and_has_qk_norm():
    config = configs.load("Qwen3-30B-A3B")
    spec = as_spec(config)
    assert spec.head_dim == config.head_dim != config.hidden_size // config.num_attention_heads
    assert spec.qk_norm and spec.norm_topk
    assert (spec.experts, spec.experts_per_token, spec.expert_hidden) == (
        config.num_experts,
        config.num_experts_per_tok,
        config.moe_intermediate_size,
    )


def test_llama3_rope_scaling_is_kept_and_llama32_is_tied():
    config = configs.load("Llama-3.1-8B")
    scaling = dict(as_spec(config).rope_scaling)
    assert scaling == {k: v for k, v in config.rope_parameters.items() if k != "rope_theta"}
    assert scaling["rope_type"] == "llama3"
    assert as_spec(configs.load("Llama-3.2-1B")).tied
    assert as_spec(configs.load("Llama-2-7B")).rope_scaling == ()


def test_olmo_layer_norm_has_no_parameters():
    spec = as_spec(configs.load("OLMo-7B"))
    assert (spec.norm, spec.norm_affine, spec.norm_bias) == ("layer", False, False)


def test_opt_is_gpt2_with_relu_and_a_position_table_offset_by_two():
    opt = as_spec(configs.load("OPT-125m"))
    got = (
        opt.ffn,
        opt.act,
        opt.norm,
        opt.norm_bias,
        opt.qkv_bias,
        opt.ffn_bias,
        opt.tied,
        opt.positions,
        opt.position_offset,
        opt.rope_theta,
    )
    assert got == ("gelu", "relu", "layer", True, True, True, True, 2050, 2, 0.0)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(do_layer_norm_before=False), r"do_layer_norm_before=False \(supported: True\)"),
        (dict(word_embed_proj_dim=512), r"word_embed_proj_dim=512 \(supported: 768\)"),
    ],
)
def test_opt_variants_the_library_does_not_build_are_refused_by_name(change, message):
    config = configs.load("OPT-125m")
    for key, value in change.items():
        setattr(config, key, value)
    with pytest.raises(ValueError, match=message):
        as_spec(config)


def test_phi3_reads_like_llama():
    phi3 = as_spec(configs.load("Phi-3-mini-4k"))
    assert (phi3.ffn, phi3.rotary_dim, phi3.head_dim) == ("swiglu", 96, 96)


def test_deepseek_v3_latent_attention_and_experts():
    config = configs.load("DeepSeek-V3")
    spec = as_spec(config)
    names = [
        "q_lora_rank",
        "kv_lora_rank",
        "qk_nope_head_dim",
        "qk_rope_head_dim",
        "v_head_dim",
        "n_group",
        "topk_group",
    ]
    assert {n: getattr(spec, n) for n in names} == {n: getattr(config, n) for n in names}
    assert (spec.experts, spec.shared_experts, spec.dense_layers) == (
        config.n_routed_experts,
        config.n_shared_experts,
        config.first_k_dense_replace,
    )
    assert spec.router_bias and spec.routed_scale == config.routed_scaling_factor
    assert spec.head_dim == config.qk_nope_head_dim + config.qk_rope_head_dim
    assert spec.rotary_dim == config.qk_rope_head_dim and spec.rope_layout == "pairs"


def _bad_spec(**changes):
    return lambda: dataclasses.replace(LLAMA_7B, **changes)


def _bad_dict(**changes):
    return lambda: ModelSpec.from_dict(
        {k: v for k, v in dict(configs.T1_7B, **changes).items() if v is not None}
    )


BAD_INPUTS = {
    "unknown_dict_key": (_bad_dict(width=7), r"unknown key\(s\) \['width'\]; valid keys: \['d'"),
    "missing_dict_key": (_bad_dict(vocab=None), r"missing key 'vocab'"),
    "missing_hidden_for_swiglu": (_bad_dict(hidden=None), r"missing key 'hidden'"),
    "heads_not_dividing_d": (_bad_dict(heads=5), r"heads=5 must divide d=4096.*valid heads"),
    "kv_heads_not_dividing_heads": (
        _bad_dict(kv_heads=5),
        r"kv_heads=5 must divide heads=32 \(valid: \[1, 2, 4, 8",
    ),
    "zero_width": (_bad_dict(d=0), r"d must be an integer >= 1, got 0"),
    "negative_layers": (_bad_dict(layers=-2), r"layers must be an integer >= 1, got -2"),
    "fractional_vocab": (_bad_spec(vocab=3.5), r"vocab must be an integer >= 1, got 3.5"),
    "unknown_ffn": (_bad_dict(ffn="relu"), r"ffn must be one of \('gelu', 'swiglu', 'geglu'\)"),
    "unknown_norm": (_bad_dict(norm="batch"), r"norm must be one of \('layer', 'rms'\)"),
    "not_a_dict": (lambda: ModelSpec.from_dict([1]), r"config must be a dict, got list"),
    "norms_per_block": (_bad_spec(norms_per_block=3), r"norms_per_block must be 2 or 4, got 3"),
    "too_many_experts_per_token": (
        _bad_spec(experts=8, experts_per_token=9, expert_hidden=64),
        r"experts_per_token must be in 1..experts=8, got 9",
    ),
    "expert_fields_without_experts": (
        _bad_spec(shared_experts=1),
        r"shared_experts=1 needs experts > 0",
    ),
    "all_layers_dense": (
        _bad_spec(experts=8, experts_per_token=2, expert_hidden=64, dense_layers=32),
        r"dense_layers must be < layers=32",
    ),
    "layer_pattern_length": (
        _bad_spec(layer_pattern=("full_attention",) * 33),
        r"layer_pattern must have at most one entry per layer \(32\), got 33",
    ),
    "sliding_without_window": (
        _bad_spec(layer_pattern=("sliding_attention",)),
        r"'sliding_attention' layers but sliding_window=0",
    ),
    "learned_and_rotary_positions": (_bad_spec(positions=1024), r"not both; set rope_theta=0.0"),
    "latent_head_dim": (
        _bad_spec(kv_lora_rank=512, qk_nope_head_dim=64, qk_rope_head_dim=32, v_head_dim=64),
        r"head_dim must be qk_nope_head_dim \+ qk_rope_head_dim = 96",
    ),
    "offset_outside_table": (
        _bad_spec(positions=4, rope_theta=0.0, position_offset=4),
        r"position_offset=4 needs a learned table with more rows",
    ),
    "negative_eps": (_bad_spec(norm_eps=-1e-5), r"norm_eps must be > 0"),
    "unsupported_family": (
        lambda: as_spec(AutoConfig.for_model("bert")),
        r"unsupported model_type 'bert'; supported families: \['deepseek_v3'",
    ),
    "not_a_config": (
        lambda: as_spec(42),
        r"config must be a dict, a transformers config or a ModelSpec, got int",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_raises_value_error_naming_field_and_valid_values(case):
    make, message = BAD_INPUTS[case]
    with pytest.raises(ValueError, match=message):
        make()


# ---- dataclasses.replace gives the spec that building from scratch gives ---------------------

BASE = dict(
    d=64,
    layers=4,
    vocab=100,
    heads=4,
    kv_heads=2,
    head_dim=16,
    ffn="swiglu",
    hidden=96,
    norm="rms",
    sliding_window=4,
    layer_pattern=("sliding_attention", "full_attention"),
)
_EXPERTS = dict(experts=4, experts_per_token=2, expert_hidden=32)
_LATENT = dict(
    kv_heads=4, head_dim=24, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16
)
_LEARNED = dict(positions=32, rope_theta=0.0)
# field -> a change of it (with whatever else a valid spec then needs)
CHANGES = {
    "d": dict(d=96),
    "layers": dict(layers=3),
    "vocab": dict(vocab=50),
    "heads": dict(heads=8),
    "kv_heads": dict(kv_heads=4),
    "head_dim": dict(head_dim=32),
    "ffn": dict(ffn="gelu"),
    "hidden": dict(hidden=128),
    "norm": dict(norm="layer"),
    "family": dict(family="llama"),
    "act": dict(act="gelu"),
    "qkv_bias": dict(qkv_bias=True),
    "out_bias": dict(out_bias=True),
    "ffn_bias": dict(ffn_bias=True),
    "norm_affine": dict(norm="layer", norm_affine=False),
    "norm_bias": dict(norm="layer", norm_bias=True),
    "norms_per_block": dict(norms_per_block=4),
    "norms_after": dict(norms_after=True),
    "qk_norm": dict(qk_norm=True),
    "qk_norm_all_heads": dict(qk_norm=True, qk_norm_all_heads=True),
    "norm_eps": dict(norm_eps=1e-6),
    "norm_offset": dict(norm_offset=1.0),
    "tied": dict(tied=True),
    "positions": _LEARNED,
    "position_offset": dict(_LEARNED, position_offset=2),
    "rope_theta": dict(rope_theta=5e5),
    "rope_scaling": dict(
        rope_scaling=(
            ("factor", 8.0),
            ("high_freq_factor", 4.0),
            ("low_freq_factor", 1.0),
            ("original_max_position_embeddings", 16),
            ("rope_type", "llama3"),
        )
    ),
    "rotary_fraction": dict(rotary_fraction=0.5),
    "rope_layout": dict(rope_layout="pairs"),
    "embed_scale": dict(embed_scale=8.0),
    "score_scale": dict(score_scale=0.1),
    "attn_softcap": dict(attn_softcap=50.0),
    "final_softcap": dict(final_softcap=30.0),
    "sliding_window": dict(sliding_window=8),
    "layer_pattern": dict(layer_pattern=()),
    "experts": _EXPERTS,
    "experts_per_token": dict(_EXPERTS, experts_per_token=3),
    "expert_hidden": dict(_EXPERTS, expert_hidden=16),
    "shared_experts": dict(_EXPERTS, shared_experts=1),
    "dense_layers": dict(_EXPERTS, dense_layers=1),
    "norm_topk": dict(norm_topk=True),
    "router_bias": dict(router_bias=True),
    "router_weights_in_model_dtype": dict(router_weights_in_model_dtype=True),
    "routed_scale": dict(routed_scale=2.5),
    "n_group": dict(_EXPERTS, n_group=2),
    "topk_group": dict(_EXPERTS, n_group=2, topk_group=2),
    "q_lora_rank": dict(_LATENT, q_lora_rank=24),
    "kv_lora_rank": _LATENT,
    "qk_nope_head_dim": dict(_LATENT, qk_nope_head_dim=8, head_dim=16),
    "qk_rope_head_dim": dict(_LATENT, qk_rope_head_dim=4, head_dim=20),
    "v_head_dim": dict(_LATENT, v_head_dim=8),
    "qkv_clip": dict(qkv_clip=0.5),
    "residual_scale": dict(residual_scale=0.22),
    "logit_divisor": dict(logit_divisor=16.0),
}
DERIVED = ("attn_scale", "rotary_dim", "layer_types", "moe_layers")


def _everything(spec: ModelSpec) -> dict:
    names = [f.name for f in dataclasses.fields(ModelSpec)] + list(DERIVED)
    return {name: getattr(spec, name) for name in names}


def test_changes_cover_every_field():
    fields = {f.name for f in dataclasses.fields(ModelSpec)}
    assert set(CHANGES) == fields, f"no change tested for {sorted(fields - set(CHANGES))}"


@pytest.mark.parametrize("name", CHANGES)
def test_replace_gives_the_spec_built_from_scratch(name):
    base, change = ModelSpec(**BASE), CHANGES[name]
    replaced, fresh = dataclasses.replace(base, **change), ModelSpec(**(BASE | change))
    assert _everything(replaced) == _everything(fresh)
    assert getattr(replaced, name) != getattr(base, name), f"{name}: the change changed nothing"


def test_replace_recomputes_what_follows_from_the_fields():
    assert dataclasses.replace(LLAMA_7B, head_dim=32).attn_scale == 32**-0.5
    assert dataclasses.replace(LLAMA_7B, head_dim=32).rotary_dim == 32
    assert dataclasses.replace(LLAMA_7B, layers=3).layer_types == ("full_attention",) * 3
    gemma = as_spec(configs.toy("Gemma-2-2B"))
    three = as_spec(configs.toy("Gemma-2-2B", num_hidden_layers=3, layer_types=None))
    assert dataclasses.replace(gemma, layers=3) == three
    assert three.layer_types == ("sliding_attention", "full_attention", "sliding_attention")


@pytest.mark.parametrize(
    "ffn, act, expected",
    [
        ("gelu", "", "gelu_new"),
        ("swiglu", "", "silu"),
        ("geglu", "", "gelu_pytorch_tanh"),
        ("gelu", "relu", "relu"),
        ("geglu", "gelu_new", "gelu_new"),
    ],
)
def test_activation_is_the_named_one_or_the_kind_s_default(ffn, act, expected):
    assert dataclasses.replace(LLAMA_7B, ffn=ffn, act=act).activation == expected


def test_spec_is_a_leaf_of_the_library():
    """spec.py imports no other module of the course: the registry (lmcourse.families) builds on
    it, never the other way round. A fresh interpreter, so that no other test's imports count."""
    import subprocess
    import sys

    code = "import sys, lmcourse.spec; print(*(m for m in sys.modules if m[:8] == 'lmcourse'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert sorted(out.stdout.split()) == ["lmcourse", "lmcourse.spec"], out.stdout
