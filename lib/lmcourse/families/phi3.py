"""Phi-3 (`phi3`), written as a diff of Mistral."""

from __future__ import annotations

from . import llama, mistral
from .base import Family, Rules, part, rope_parameters


def changes(c) -> dict:
    """Mistral with fused q/k/v and gate/up tensors, and optionally partial rotary positions."""
    return dict(rotary_fraction=(c.rope_parameters or {}).get("partial_rotary_factor", 1.0))


def fused_qkv(spec, b: str, a: str) -> Rules:
    """One projection qkv_proj = [q | k | v], then o_proj as Llama's."""
    sizes = [spec.heads * spec.head_dim] + [spec.kv_heads * spec.head_dim] * 2
    rules = {
        f"{b}attn.{name}.weight": (f"{a}qkv_proj.weight", part(sizes, j))
        for j, name in enumerate(("q_proj", "k_proj", "v_proj"))
    }
    return rules | llama.output_and_qk_norm(spec, b, a)


def fused_gate_up(spec, b: str, m: str) -> Rules:
    """One projection gate_up_proj = [gate | up]."""
    return {
        f"{b}ffn.{name}.weight": (f"{m}gate_up_proj.weight", part([spec.hidden] * 2, j))
        for j, name in enumerate(("gate_proj", "up_proj"))
    }


def weights(spec) -> Rules:
    """Llama's names with q/k/v fused in qkv_proj and gate/up fused in gate_up_proj."""
    return llama.weights(spec, attention=fused_qkv, gate_up=fused_gate_up)


FAMILY = Family(
    name="phi3",
    parent=mistral.FAMILY,
    changes=changes,
    weights=weights,
    toy=llama.TOY | dict(sliding_window=4, num_key_value_heads=4),
    published={
        "Phi-3-mini-4k": dict(
            vocab_size=32064,
            hidden_size=3072,
            intermediate_size=8192,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=32,
            max_position_embeddings=4096,
            original_max_position_embeddings=4096,
            rms_norm_eps=1e-5,
            sliding_window=2047,
            tie_word_embeddings=False,
            **rope_parameters(10000.0),
        ),
    },
    parity={"main": llama.SMALL | dict(partial_rotary_factor=0.5, pad_token_id=0)},
)
