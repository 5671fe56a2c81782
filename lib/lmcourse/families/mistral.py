"""Mistral (`mistral`), written as a diff of Llama."""

from __future__ import annotations

from . import llama
from .base import Family, rope_parameters, windows


def changes(c) -> dict:
    """Llama plus sliding-window attention."""
    return windows(c)


FAMILY = Family(
    name="mistral",
    parent=llama.FAMILY,
    changes=changes,
    toy=llama.TOY | dict(sliding_window=4),
    published={
        "Mistral-7B-v0.1": dict(
            vocab_size=32000,
            hidden_size=4096,
            intermediate_size=14336,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=128,
            max_position_embeddings=32768,
            rms_norm_eps=1e-5,
            tie_word_embeddings=False,
            sliding_window=4096,
            **rope_parameters(10000.0),
        ),
    },
    parity={"main": llama.SMALL | dict(sliding_window=5)},
)
