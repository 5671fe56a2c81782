"""Qwen3 (`qwen3`), written as a diff of Llama."""

from __future__ import annotations

from . import llama
from .base import PARITY_VOCAB, Family, rope_parameters, windows


def changes(c) -> dict:
    """Llama plus QK-norm (one RMSNorm per query and key head) and optional windows."""
    return dict(qk_norm=True) | windows(c)


def _case(d, layers, heads, kv_heads, head_dim, hidden) -> dict:
    return dict(
        hidden_size=d,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=hidden,
        vocab_size=PARITY_VOCAB,
        tie_word_embeddings=False,
    )


FAMILY = Family(
    name="qwen3",
    parent=llama.FAMILY,
    changes=changes,
    toy=llama.TOY,
    published={
        "Qwen3-8B": dict(
            vocab_size=151936,
            hidden_size=4096,
            intermediate_size=12288,
            num_hidden_layers=36,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=128,
            max_position_embeddings=40960,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            use_sliding_window=False,
            **rope_parameters(1000000.0),
        ),
    },
    parity={"main": _case(32, 2, 4, 2, 16, 48), "held-out": _case(40, 3, 8, 4, 8, 72)},
)
