"""Gemma 2 (`gemma2`), written as a diff of Llama."""

from __future__ import annotations

from . import llama
from .base import PARITY_VOCAB, Family, rope_parameters, windows


def changes(c) -> dict:
    """Llama plus GeGLU, sandwich norms, scaled embeddings, soft-caps and alternating windows."""
    return windows(c) | dict(
        ffn="geglu",
        act=c.hidden_activation,
        norms_per_block=4,
        norm_offset=1.0,
        embed_scale=c.hidden_size**0.5,
        score_scale=c.query_pre_attn_scalar**-0.5,
        attn_softcap=c.attn_logit_softcapping or 0.0,
        final_softcap=c.final_logit_softcapping or 0.0,
    )


def _case(d, layers, heads, kv_heads, head_dim, hidden, window) -> dict:
    return dict(
        hidden_size=d,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=hidden,
        vocab_size=PARITY_VOCAB,
        sliding_window=window,
        query_pre_attn_scalar=head_dim * 2,
        attn_logit_softcapping=5.0,  # small caps, so that they bite
        final_logit_softcapping=3.0,
    )


FAMILY = Family(
    name="gemma2",
    parent=llama.FAMILY,
    changes=changes,
    toy=llama.TOY
    | dict(
        sliding_window=4,
        query_pre_attn_scalar=16,
        layer_types=["sliding_attention", "full_attention"],
    ),
    published={
        "Gemma-2-2B": dict(
            vocab_size=256000,
            hidden_size=2304,
            intermediate_size=9216,
            num_hidden_layers=26,
            num_attention_heads=8,
            num_key_value_heads=4,
            head_dim=256,
            hidden_activation="gelu_pytorch_tanh",
            max_position_embeddings=8192,
            rms_norm_eps=1e-6,
            query_pre_attn_scalar=256,
            sliding_window=4096,
            attn_logit_softcapping=50.0,
            final_logit_softcapping=30.0,
            tie_word_embeddings=True,
            **rope_parameters(10000.0),
        ),
    },
    parity={
        "main": _case(32, 2, 4, 2, 8, 48, window=4),
        "held-out": _case(24, 4, 2, 1, 16, 40, window=3),
    },
)
