"""The zoo's summaries against transformers: norm layers per block, the hybrid state, diffs."""

import warnings

import pytest
import torch
import transformers
from conftest import decoder_blocks, meta_model
from lmcourse import as_spec, configs, zoo


@pytest.mark.parametrize("name", configs.available())
def test_norm_modules_equal_the_norm_layers_transformers_builds_in_a_block(name):
    block = decoder_blocks(meta_model(name))[0]
    want = sum("norm" in type(m).__name__.lower() for m in block.modules())
    assert zoo.norm_modules(configs.load(name)) == want, f"{name}: transformers has {want}"


def test_diff_lists_what_a_family_changes_and_nothing_else():
    base = configs.toy("Llama-2-7B")
    assert zoo.diff(base, base) == {}
    assert zoo.diff(base, configs.toy("Qwen3-8B")) == {
        "qk_norm": (False, True),
        "norm_eps": (1e-5, 1e-6),
        "rope_theta": (10000.0, 1e6),
    }
    gemma = zoo.diff(base, configs.toy("Gemma-2-2B"))
    assert gemma["norms_per_block"] == (2, 4) and gemma["layer_types"] == (
        "2 full",
        "1 sliding + 1 full",
    )
    assert "attn_scale" not in zoo.diff(base, as_spec(configs.toy("Llama-3.1-8B")))


def test_summary_kinds_read_the_spec():
    row = zoo.table_row(configs.load("DeepSeek-V3"))
    assert row["attention"] == "MLA (latent 512 + rotary key 64)"
    assert row["feed-forward"] == "MoE SwiGLU: 8 of 256 + 1 shared, first 3 dense"
    assert zoo.table_row(configs.load("OPT-125m"))["positions"] == "learned (2,050 rows, offset 2)"
    placement = {name: zoo.norm_placement(configs.load(name)) for name in configs.available()}
    assert placement["OLMo-2-7B"] == "RMSNorm: reordered + QK-norm across heads"  # x + norm(f(x))
    assert placement["Gemma-2-2B"] == "RMSNorm: sandwich"
    assert placement["Qwen3-8B"] == "RMSNorm: pre + QK-norm"
    assert placement["DeepSeek-V3"] == "RMSNorm: pre + latent"
    assert placement["OLMo-7B"] == "LayerNorm (no parameters): pre"


def test_linear_attention_state_equals_the_states_transformers_keeps():
    config = transformers.Qwen3NextConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        moe_intermediate_size=16,
        shared_expert_intermediate_size=16,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        num_experts=4,
        num_experts_per_tok=2,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=8,
        linear_value_head_dim=12,
        linear_conv_kernel_dim=4,
    )
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_config(config).eval()
    want = zoo.linear_attention_state(config)
    cache = transformers.DynamicCache(config=config)
    seen = 0
    with torch.no_grad():
        for tokens in (5, 1, 3):
            model(torch.zeros(1, tokens, dtype=torch.long), cache=cache, use_cache=True)
            seen += tokens
            fixed = growing = 0
            for layer in cache.layers:
                if hasattr(layer, "recurrent_states"):
                    fixed += layer.conv_states[0].numel() + layer.recurrent_states[0].numel()
                else:
                    growing += layer.keys.numel() + layer.values.numel()
            assert fixed == want["fixed"], f"after {seen} tokens: fixed state {fixed}"
            assert growing == seen * want["per_token"], f"after {seen} tokens: cache {growing}"


def test_linear_attention_state_refuses_a_model_without_linear_layers():
    with pytest.raises(ValueError, match="layer_types with 'linear_attention' layers"):
        zoo.linear_attention_state(configs.load("Llama-3.1-8B"))


def test_block_layout_reads_each_part_from_the_configuration():
    gpt2 = dict(zoo.block_layout(configs.T1_GPT2))
    assert gpt2["positions"] == "+ learned position table, 1,024 rows"
    assert gpt2["attention"] == "attention: 12 heads, a key-value head each"
    assert gpt2["norm1"] == "LayerNorm" and gpt2["head"] == "output: the token table (tied)"
    qwen = dict(zoo.block_layout(configs.load("Qwen3-30B-A3B")))
    assert "positions" not in qwen and qwen["norm2"] == "RMSNorm"
    assert qwen["attention"].startswith("attention: 32 query heads share 4 key-value heads\n")
    assert qwen["ffn"] == "128 experts, 8 per token" and qwen["head"] == "output: its own matrix"


def test_design_diff_leaves_out_sizes_and_shows_the_key_value_sharing_they_decide():
    step = zoo.design_diff(configs.load("Llama-2-7B"), configs.load("Llama-3.1-8B"))
    assert set(step) == {"kv_sharing", "rope_theta", "rope_scaling"}, step
    assert step["kv_sharing"] == ("MHA", "GQA 4:1")
    assert zoo.design_diff(configs.load("gpt2"), configs.load("OPT-6.7B")) == {
        "act": ("gelu_new", "relu"),
        "position_offset": (0, 2),
    }
    latent = zoo.design_diff(configs.load("Llama-2-7B"), configs.load("DeepSeek-V3"))
    assert latent["kv_sharing"] == ("MHA", "MLA") and not set(latent) & zoo.SIZE_FIELDS
    assert zoo.design_diff(configs.load("Llama-3.1-8B"), configs.load("gpt2"))[
        "learned_positions"
    ] == (False, True)
    moe = ("Qwen3-8B", "Qwen3-30B-A3B")  # a rounding rule is in the diff, not in the design
    assert zoo.diff(*map(configs.load, moe))["router_weights_in_model_dtype"] == (False, True)
    assert "router_weights_in_model_dtype" not in zoo.design_diff(*map(configs.load, moe))


def test_presets_by_family_covers_the_registry_with_presets_of_that_family():
    found = zoo.presets_by_family()
    assert list(found) == list(zoo.FAMILIES)
    assert sorted(p for names in found.values() for p in names) == sorted(configs.available())
    for family, names in found.items():
        assert names, f"{family}: no published preset"
        assert {configs.load(n).model_type for n in names} == {family}


@pytest.mark.parametrize(
    ("kinds", "shown"),
    [
        (["full_attention"] * 32, "32 full"),
        (["sliding_attention", "full_attention"], "1 sliding + 1 full"),
        (["sliding_attention", "full_attention"] * 13, "(1 sliding + 1 full) x13"),
        (
            (["sliding_attention"] * 5 + ["full_attention"]) * 4 + ["sliding_attention"] * 2,
            "(5 sliding + 1 full) x4 + 2 sliding",
        ),
    ],
)
def test_pattern_writes_layer_kinds_as_their_repeating_unit(kinds, shown):
    assert zoo.pattern(kinds) == shown
