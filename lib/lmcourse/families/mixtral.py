"""Mixtral (`mixtral`), written as a diff of Mistral."""

from __future__ import annotations

from . import llama, mistral
from .base import PARITY_VOCAB, Family, experts, rope_parameters


def changes(c) -> dict:
    """Mistral whose feed-forward is a mixture of experts (softmax router, top-k renormalised)."""
    return experts(c, c.intermediate_size) | dict(norm_topk=True)


def _case(d, layers, heads, kv_heads, hidden, n_experts, k, window) -> dict:
    return dict(
        hidden_size=d,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        intermediate_size=hidden,
        vocab_size=PARITY_VOCAB,
        num_local_experts=n_experts,
        num_experts_per_tok=k,
        sliding_window=window,
    )


FAMILY = Family(
    name="mixtral",
    parent=mistral.FAMILY,
    changes=changes,
    toy=llama.TOY | dict(num_local_experts=4, num_experts_per_tok=2),
    published={
        "Mixtral-8x7B": dict(
            vocab_size=32000,
            hidden_size=4096,
            intermediate_size=14336,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=8,
            max_position_embeddings=32768,
            rms_norm_eps=1e-5,
            tie_word_embeddings=False,
            sliding_window=None,
            num_local_experts=8,
            num_experts_per_tok=2,
            **rope_parameters(1000000.0),
        ),
    },
    parity={
        "main": _case(32, 2, 4, 2, 24, n_experts=4, k=2, window=None),
        "held-out": _case(24, 3, 6, 3, 40, n_experts=6, k=3, window=5),
    },
)
