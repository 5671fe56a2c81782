"""Weights from transformers into `DecoderLM`.

Every tensor of the DecoderLM is read from one transformers tensor, named by its family's
weight rules (`lmcourse.families`), sometimes transposed (GPT-2's Conv1D stores x @ W, not
W @ x) or cut out of a fused tensor (GPT-2's c_attn, Phi-3's qkv_proj and gate_up_proj, the
experts' gate_up_proj).
Loading checks every name and shape before copying anything, nanoGPT-style: a missing or
unexpected tensor, a shape the spec does not predict, or (for a tied spec) an output head that
differs from the token table, raises a ValueError saying which.
"""

from __future__ import annotations

import torch

from .blocks.model import DecoderLM
from .families import as_spec, family
from .spec import ModelSpec


def converted_state(
    spec: ModelSpec, source: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """DecoderLM tensors (names and shapes of `expected`) from a transformers state dict.

    Raises ValueError naming every missing and unexpected transformers tensor, the first
    tensor whose shape differs from what the spec predicts (with both shapes), or, when the spec
    ties the output head to the token table, the two tensors if they differ.
    """
    rules = family(spec.family).weight_rules(spec)
    unmapped = sorted(set(expected) - set(rules))
    if unmapped:  # a DecoderLM tensor that no rule fills: a bug in the rules, say so
        raise ValueError(f"no transformers tensor is mapped to {unmapped}")
    used = {theirs for theirs, _ in rules.values()}
    missing = sorted(used - set(source))
    unexpected = sorted(set(source) - used)
    if missing or unexpected:
        raise ValueError(
            f"transformers state dict does not match the {spec.family} spec: "
            f"missing {missing}, unexpected {unexpected}"
        )
    state = {}
    for ours, (theirs, transform) in rules.items():
        tensor = source[theirs]
        try:
            tensor = transform(tensor) if transform is not None else tensor
        except (ValueError, RuntimeError) as err:
            raise ValueError(
                f"{theirs} {tuple(source[theirs].shape)} cannot give {ours} "
                f"{tuple(expected[ours].shape)}: {err}"
            ) from None
        if tensor.shape != expected[ours].shape:
            cut = f" gives {tuple(tensor.shape)}" if transform is not None else ""
            raise ValueError(
                f"shape mismatch: {theirs} {tuple(source[theirs].shape)}{cut} for {ours}, "
                f"the spec expects {tuple(expected[ours].shape)}"
            )
        state[ours] = tensor
    if spec.tied and not state["head.weight"].is_meta:  # one tensor in DecoderLM: both must agree
        head, embed = rules["head.weight"][0], rules["embed.weight"][0]
        if not torch.equal(state["head.weight"], state["embed.weight"]):
            raise ValueError(
                f"the {spec.family} spec ties the output head to the token table (tied=True), "
                f"but {head} differs from {embed}; untie them in the config "
                f"(tie_word_embeddings=False) or pass a state dict whose two tensors agree"
            )
    return state


def load_transformers_state(model: DecoderLM, source: dict[str, torch.Tensor]) -> DecoderLM:
    """Copy a transformers state dict into `model` after checking every name and shape."""
    state = converted_state(model.spec, source, model.state_dict())
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            tensor.copy_(state[name])
    return model


def from_transformers(hf_model) -> DecoderLM:
    """A DecoderLM with the architecture and weights of a transformers causal LM."""
    kind = type(hf_model).__name__
    if not (hasattr(hf_model, "config") and hasattr(hf_model, "get_output_embeddings")):
        raise ValueError(
            f"hf_model must be a transformers causal LM (e.g. LlamaForCausalLM), got a {kind}"
        )
    if hf_model.get_output_embeddings() is None:
        raise ValueError(
            f"hf_model must be a causal LM with its output head (e.g. LlamaForCausalLM, "
            f"from AutoModelForCausalLM), got a {kind}, which has none"
        )
    spec = as_spec(hf_model.config)  # refuses a family it cannot read
    source = hf_model.state_dict()
    dtype = source["lm_head.weight"].dtype if "lm_head.weight" in source else torch.float32
    model = DecoderLM(spec).to(dtype)
    return load_transformers_state(model, source).eval()
