"""Weights from transformers into `DecoderLM`.

Every tensor of the DecoderLM is read from one transformers tensor, named by a per-family
rule, sometimes transposed (GPT-2's Conv1D stores x @ W, not W @ x) or cut out of a fused
tensor (GPT-2's c_attn, Phi-3's qkv_proj and gate_up_proj, the experts' gate_up_proj).
Loading checks every name and shape before copying anything, nanoGPT-style: a missing or
unexpected tensor, or a shape the spec does not predict, raises a ValueError saying which.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .blocks.model import DecoderLM
from .spec import ModelSpec

Source = tuple[str, Callable[[torch.Tensor], torch.Tensor] | None]  # transformers name, transform


def _transpose(w: torch.Tensor) -> torch.Tensor:
    return w.T


def _part(sizes: list[int], j: int, dim: int = 0, transpose: bool = False):
    """The j-th of consecutive slices of `sizes` along `dim` (after an optional transpose)."""
    def cut(w: torch.Tensor) -> torch.Tensor:
        w = w.T if transpose else w
        if w.shape[dim] != sum(sizes):
            raise ValueError(f"dimension {dim} is {w.shape[dim]}, expected {sum(sizes)} = "
                             f"{' + '.join(map(str, sizes))}")
        return w.split(sizes, dim=dim)[j]
    return cut


def _gpt2_rules(spec: ModelSpec) -> dict[str, Source]:
    d = spec.d
    rules = {"embed.weight": ("transformer.wte.weight", None),
             "pos_embed.weight": ("transformer.wpe.weight", None),
             "norm.weight": ("transformer.ln_f.weight", None),
             "norm.bias": ("transformer.ln_f.bias", None),
             "head.weight": ("lm_head.weight", None)}
    for i in range(spec.layers):
        b, h = f"blocks.{i}.", f"transformer.h.{i}."
        for ours, theirs in (("attn_norm", "ln_1"), ("ffn_norm", "ln_2")):
            rules[f"{b}{ours}.weight"] = (f"{h}{theirs}.weight", None)
            rules[f"{b}{ours}.bias"] = (f"{h}{theirs}.bias", None)
        for j, name in enumerate(("q_proj", "k_proj", "v_proj")):  # c_attn = [q | k | v]
            rules[f"{b}attn.{name}.weight"] = (f"{h}attn.c_attn.weight",
                                               _part([d] * 3, j, 0, transpose=True))
            rules[f"{b}attn.{name}.bias"] = (f"{h}attn.c_attn.bias", _part([d] * 3, j))
        for ours, theirs in (("attn.o_proj", "attn.c_proj"), ("ffn.up_proj", "mlp.c_fc"),
                             ("ffn.down_proj", "mlp.c_proj")):
            rules[f"{b}{ours}.weight"] = (f"{h}{theirs}.weight", _transpose)
            rules[f"{b}{ours}.bias"] = (f"{h}{theirs}.bias", None)
    return rules


def _opt_rules(spec: ModelSpec) -> dict[str, Source]:
    """OPT: model.decoder.* with GPT-2's norm names (final_layer_norm is the block's second)."""
    top = "model.decoder."
    rules = {"embed.weight": (f"{top}embed_tokens.weight", None),
             "pos_embed.weight": (f"{top}embed_positions.weight", None),
             "head.weight": ("lm_head.weight", None)}
    rules |= _norm_rules(spec, "norm", f"{top}final_layer_norm")
    for i in range(spec.layers):
        b, h = f"blocks.{i}.", f"{top}layers.{i}."
        rules |= _norm_rules(spec, f"{b}attn_norm", f"{h}self_attn_layer_norm")
        rules |= _norm_rules(spec, f"{b}ffn_norm", f"{h}final_layer_norm")
        for ours, theirs in (("attn.q_proj", "self_attn.q_proj"),
                             ("attn.k_proj", "self_attn.k_proj"),
                             ("attn.v_proj", "self_attn.v_proj"),
                             ("attn.o_proj", "self_attn.out_proj"),
                             ("ffn.up_proj", "fc1"), ("ffn.down_proj", "fc2")):
            rules[f"{b}{ours}.weight"] = (f"{h}{theirs}.weight", None)
            if spec.mlp_bias:  # enable_bias puts a bias on every linear layer of the block
                rules[f"{b}{ours}.bias"] = (f"{h}{theirs}.bias", None)
    return rules


def _attention_rules(spec: ModelSpec, b: str, h: str) -> dict[str, Source]:
    """blocks.i.attn.* <- model.layers.i.self_attn.*"""
    a = f"{h}self_attn."
    if spec.kv_lora_rank:  # latent attention (DeepSeek-V3)
        names = {"kv_a_proj": "kv_a_proj_with_mqa", "kv_a_norm": "kv_a_layernorm",
                 "kv_b_proj": "kv_b_proj", "o_proj": "o_proj"}
        if spec.q_lora_rank:
            names |= {"q_a_proj": "q_a_proj", "q_a_norm": "q_a_layernorm", "q_b_proj": "q_b_proj"}
        else:
            names["q_proj"] = "q_proj"
        rules = {f"{b}attn.{ours}.weight": (f"{a}{theirs}.weight", None)
                 for ours, theirs in names.items()}
        if spec.qkv_bias:
            for ours, theirs in (("kv_a_proj", "kv_a_proj_with_mqa"), ("q_a_proj", "q_a_proj")):
                if ours in names:
                    rules[f"{b}attn.{ours}.bias"] = (f"{a}{theirs}.bias", None)
        if spec.out_bias:
            rules[f"{b}attn.o_proj.bias"] = (f"{a}o_proj.bias", None)
        return rules
    rules = {}
    if spec.family == "phi3":  # one fused projection: [q | k | v]
        sizes = [spec.heads * spec.head_dim] + [spec.kv_heads * spec.head_dim] * 2
        for j, name in enumerate(("q_proj", "k_proj", "v_proj")):
            rules[f"{b}attn.{name}.weight"] = (f"{a}qkv_proj.weight", _part(sizes, j))
    else:
        for name in ("q_proj", "k_proj", "v_proj"):
            rules[f"{b}attn.{name}.weight"] = (f"{a}{name}.weight", None)
            if spec.qkv_bias:
                rules[f"{b}attn.{name}.bias"] = (f"{a}{name}.bias", None)
    rules[f"{b}attn.o_proj.weight"] = (f"{a}o_proj.weight", None)
    if spec.out_bias:
        rules[f"{b}attn.o_proj.bias"] = (f"{a}o_proj.bias", None)
    if spec.qk_norm:
        rules[f"{b}attn.q_norm.weight"] = (f"{a}q_norm.weight", None)
        rules[f"{b}attn.k_norm.weight"] = (f"{a}k_norm.weight", None)
    return rules


def _ffn_rules(spec: ModelSpec, layer: int, b: str, h: str) -> dict[str, Source]:
    """blocks.i.ffn.* <- model.layers.i.mlp.*"""
    m = f"{h}mlp."
    if spec.experts and layer >= spec.dense_layers:
        e = spec.expert_hidden
        rules = {f"{b}ffn.router.weight": (f"{m}gate.weight", None),
                 f"{b}ffn.experts.gate": (f"{m}experts.gate_up_proj", _part([e, e], 0, dim=1)),
                 f"{b}ffn.experts.up": (f"{m}experts.gate_up_proj", _part([e, e], 1, dim=1)),
                 f"{b}ffn.experts.down": (f"{m}experts.down_proj", None)}
        if spec.router_bias:
            rules[f"{b}ffn.router.correction_bias"] = (f"{m}gate.e_score_correction_bias", None)
        if spec.shared_experts:
            for name in ("gate_proj", "up_proj", "down_proj"):
                rules[f"{b}ffn.shared.{name}.weight"] = (f"{m}shared_experts.{name}.weight", None)
        return rules
    names = ("gate_proj", "up_proj", "down_proj")
    if spec.ffn == "gelu":
        names = names[1:]
    rules = {}
    for name in names:
        if spec.family == "phi3" and name != "down_proj":  # fused [gate | up]
            j = 0 if name == "gate_proj" else 1
            rules[f"{b}ffn.{name}.weight"] = (f"{m}gate_up_proj.weight",
                                              _part([spec.hidden] * 2, j))
            continue
        rules[f"{b}ffn.{name}.weight"] = (f"{m}{name}.weight", None)
        if spec.mlp_bias:
            rules[f"{b}ffn.{name}.bias"] = (f"{m}{name}.bias", None)
    return rules


def _norm_rules(spec: ModelSpec, ours: str, theirs: str) -> dict[str, Source]:
    rules = {}
    if spec.norm_affine:
        rules[f"{ours}.weight"] = (f"{theirs}.weight", None)
    if spec.norm_bias:
        rules[f"{ours}.bias"] = (f"{theirs}.bias", None)
    return rules


def _llama_rules(spec: ModelSpec) -> dict[str, Source]:
    """Llama and every family written as a diff of it (Mistral, Qwen, Gemma 2, DeepSeek-V3, ...)."""
    rules = {"embed.weight": ("model.embed_tokens.weight", None),
             "head.weight": ("lm_head.weight", None)}
    rules |= _norm_rules(spec, "norm", "model.norm")
    if spec.norms_per_block == 4:  # Gemma 2: a norm before and after each stage
        norms = {"attn_norm": "input_layernorm", "attn_post_norm": "post_attention_layernorm",
                 "ffn_norm": "pre_feedforward_layernorm",
                 "ffn_post_norm": "post_feedforward_layernorm"}
    else:
        norms = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}
    for i in range(spec.layers):
        b, h = f"blocks.{i}.", f"model.layers.{i}."
        for ours, theirs in norms.items():
            rules |= _norm_rules(spec, b + ours, h + theirs)
        rules |= _attention_rules(spec, b, h)
        rules |= _ffn_rules(spec, i, b, h)
    return rules


RULES = {"gpt2": _gpt2_rules, "llama": _llama_rules, "mistral": _llama_rules,
         "mixtral": _llama_rules, "qwen2": _llama_rules, "qwen3": _llama_rules,
         "qwen3_moe": _llama_rules, "gemma2": _llama_rules, "phi3": _llama_rules,
         "olmo": _llama_rules, "deepseek_v3": _llama_rules, "opt": _opt_rules}
SUPPORTED = tuple(RULES)


def converted_state(spec: ModelSpec, source: dict[str, torch.Tensor],
                    expected: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """DecoderLM tensors (names and shapes of `expected`) from a transformers state dict.

    Raises ValueError naming every missing and unexpected transformers tensor, or the first
    tensor whose shape differs from what the spec predicts (with both shapes).
    """
    if spec.family not in RULES:
        raise ValueError(f"unsupported family {spec.family!r}; supported: {list(SUPPORTED)}")
    rules = RULES[spec.family](spec)
    unmapped = sorted(set(expected) - set(rules))
    if unmapped:  # a DecoderLM tensor that no rule fills: a bug in the rules, say so
        raise ValueError(f"no transformers tensor is mapped to {unmapped}")
    used = {theirs for theirs, _ in rules.values()}
    missing = sorted(used - set(source))
    unexpected = sorted(set(source) - used)
    if missing or unexpected:
        raise ValueError(f"transformers state dict does not match the {spec.family} spec: "
                         f"missing {missing}, unexpected {unexpected}")
    state = {}
    for ours, (theirs, transform) in rules.items():
        tensor = source[theirs]
        try:
            tensor = transform(tensor) if transform is not None else tensor
        except (ValueError, RuntimeError) as err:
            raise ValueError(f"{theirs} {tuple(source[theirs].shape)} cannot give {ours} "
                             f"{tuple(expected[ours].shape)}: {err}") from None
        if tensor.shape != expected[ours].shape:
            raise ValueError(f"shape mismatch: {theirs} gives {tuple(tensor.shape)} for {ours}, "
                             f"the spec expects {tuple(expected[ours].shape)}")
        state[ours] = tensor
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
    family = getattr(hf_model.config, "model_type", None)
    if family not in RULES:
        raise ValueError(f"unsupported model_type {family!r}; supported: {list(SUPPORTED)}")
    spec = ModelSpec.from_transformers(hf_model.config)
    source = hf_model.state_dict()
    dtype = source["lm_head.weight"].dtype if "lm_head.weight" in source else torch.float32
    model = DecoderLM(spec).to(dtype)
    return load_transformers_state(model, source).eval()
