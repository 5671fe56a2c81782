"""lmcourse.bridge: transformers' weights into a DecoderLM, every name and shape checked first.

The logits of the converted models are compared with transformers' in tests/lib/test_parity.py;
these tests hold the bridge to its own contract: every family of the registry converts from
its toy model, each number of each transformers tensor used exactly once; bad input gets a
ValueError naming what is wrong (and what would be valid) before anything is copied; a tied
output head stays the token table.
"""

import functools

import pytest
import torch
import transformers
from lmcourse import as_spec, configs, from_transformers
from lmcourse.blocks import DecoderLM
from lmcourse.bridge import load_transformers_state
from lmcourse.families import FAMILIES

PUBLISHED = {}  # family -> its first published configuration (lmcourse.configs)
for _name in configs.available():
    PUBLISHED.setdefault(configs.load(_name).model_type, _name)


@functools.cache
def toy_model(family: str, **overrides):
    """transformers' model of `family` at its registry toy size, every entry random (norm
    scales and biases included, so that no two tensors hold the same numbers). Read only."""
    torch.manual_seed(0)
    config = configs.toy(PUBLISHED[family], **overrides)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        for tensor in model.state_dict().values():
            if tensor.is_floating_point():
                tensor.normal_()
    return model


def toy_state(family: str, **overrides) -> dict[str, torch.Tensor]:
    """A copy of the toy model's state dict, to edit."""
    return dict(toy_model(family, **overrides).state_dict())


def numbers(state: dict[str, torch.Tensor]) -> torch.Tensor:
    """Every number of a state dict, sorted, each tensor counted once (a tied head is the
    token table: the same storage)."""
    distinct = {tensor.data_ptr(): tensor for tensor in state.values()}
    return torch.cat([t.detach().flatten().double() for t in distinct.values()]).sort().values


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_converts_from_its_toy_model_using_every_number_once(family):
    hf = toy_model(family)
    ours = from_transformers(hf)
    assert ours.spec == as_spec(hf.config)
    expected = DecoderLM(ours.spec).state_dict()
    shapes = {name: tuple(t.shape) for name, t in ours.state_dict().items()}
    assert shapes == {name: tuple(t.shape) for name, t in expected.items()}
    # the same numbers, none left over, none used twice, none invented: exactly equal
    torch.testing.assert_close(numbers(ours.state_dict()), numbers(hf.state_dict()), rtol=0, atol=0)


def test_an_unsupported_model_type_is_refused_listing_the_supported_ones():
    config = transformers.BertConfig(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
    )
    with pytest.raises(ValueError, match=r"unsupported model_type 'bert'; supported families: "):
        from_transformers(transformers.BertForMaskedLM(config))
    with pytest.raises(ValueError, match=r"supported families: \[.*'llama'.*'olmo2'"):
        from_transformers(transformers.BertForMaskedLM(config))


def test_a_model_without_its_output_head_or_not_a_model_is_refused():
    config = configs.toy("Llama-3.2-1B")
    with pytest.raises(ValueError, match=r"causal LM with its output head .* got a LlamaModel"):
        from_transformers(transformers.AutoModel.from_config(config))
    with pytest.raises(ValueError, match=r"must be a transformers causal LM .* got a LlamaConfig"):
        from_transformers(config)


def test_missing_and_unexpected_tensors_are_named():
    source = toy_state("llama")
    source["model.layers.0.self_attn.extra.weight"] = source.pop(
        "model.layers.0.self_attn.k_proj.weight"
    )
    spec = as_spec(toy_model("llama").config)
    with pytest.raises(ValueError) as err:
        load_transformers_state(DecoderLM(spec), source)
    message = str(err.value)
    assert "does not match the llama spec" in message, message
    assert "missing ['model.layers.0.self_attn.k_proj.weight']" in message, message
    assert "unexpected ['model.layers.0.self_attn.extra.weight']" in message, message


@pytest.mark.parametrize(
    "family, target",
    [
        ("gpt2", "transformer.h.1.attn.c_attn.weight"),  # fused q|k|v, stored transposed
        ("phi3", "model.layers.1.self_attn.qkv_proj.weight"),  # fused q|k|v
        ("qwen3", "model.layers.1.self_attn.k_proj.weight"),
        ("deepseek_v3", "model.layers.1.mlp.experts.gate_up_proj"),  # fused experts, 3-D
    ],
)
def test_a_wrong_shape_is_refused_naming_the_tensor_and_both_shapes(family, target):
    source = toy_state(family)
    good = source[target]
    source[target] = torch.zeros(*good.shape[:-1], good.shape[-1] + 1)
    model = DecoderLM(as_spec(toy_model(family).config))
    before = {name: t.clone() for name, t in model.state_dict().items()}
    with pytest.raises(ValueError) as err:
        load_transformers_state(model, source)
    message = str(err.value)
    assert target in message, f"error does not name {target}: {message}"
    assert str(tuple(source[target].shape)) in message, message
    assert "expect" in message, f"error does not say what was expected: {message}"
    for name, tensor in model.state_dict().items():  # checked before anything was copied
        assert torch.equal(tensor, before[name]), f"{name} changed by a refused load"


@pytest.mark.parametrize("family", ["gpt2", "opt", "gemma2", "llama"])
def test_a_tied_head_stays_the_token_table(family):
    hf = toy_model(family, tie_word_embeddings=True)
    ours = from_transformers(hf)
    assert ours.spec.tied
    assert ours.head.weight is ours.embed.weight, "the head must be the token table itself"
    torch.testing.assert_close(ours.head.weight, hf.get_input_embeddings().weight, rtol=0, atol=0)


def test_an_untied_head_is_its_own_matrix():
    hf = toy_model("llama", tie_word_embeddings=False)
    ours = from_transformers(hf)
    assert ours.head.weight is not ours.embed.weight
    torch.testing.assert_close(ours.head.weight, hf.lm_head.weight, rtol=0, atol=0)
    torch.testing.assert_close(ours.embed.weight, hf.model.embed_tokens.weight, rtol=0, atol=0)


def test_a_tied_spec_refuses_a_head_that_differs_from_the_token_table():
    """A DecoderLM with a tied spec holds one tensor for both: loading two different ones would
    silently keep only the last copied."""
    source = toy_state("llama", tie_word_embeddings=True)
    source["lm_head.weight"] = source["lm_head.weight"] + 1.0  # no longer the token table
    spec = as_spec(toy_model("llama", tie_word_embeddings=True).config)
    with pytest.raises(ValueError, match=r"ties the output head .* lm_head.weight differs from "):
        load_transformers_state(DecoderLM(spec), source)
