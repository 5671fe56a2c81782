"""Qwen2 and Qwen2.5 (`qwen2`), written as a diff of Llama."""

from __future__ import annotations

from . import llama
from .base import Family, rope_parameters, windows


def changes(c) -> dict:
    """Llama plus biases on q, k and v (not the output) and optional windows."""
    return dict(qkv_bias=True, out_bias=False) | windows(c)


FAMILY = Family(
    name="qwen2",
    parent=llama.FAMILY,
    changes=changes,
    toy=llama.TOY,
    published={
        "Qwen2.5-7B": dict(
            vocab_size=152064,
            hidden_size=3584,
            intermediate_size=18944,
            num_hidden_layers=28,
            num_attention_heads=28,
            num_key_value_heads=4,
            max_position_embeddings=131072,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            use_sliding_window=False,
            max_window_layers=28,
            **rope_parameters(1000000.0),
        ),
    },
    parity={"main": llama.SMALL},
)
