"""OLMo (`olmo`), written as a diff of Llama."""

from __future__ import annotations

from . import llama
from .base import Family, rope_parameters


def changes(c) -> dict:
    """Llama with a parameter-free LayerNorm and optional clipping of q, k and v."""
    return dict(norm="layer", norm_affine=False, norm_eps=1e-5, qkv_clip=float(c.clip_qkv or 0.0))


FAMILY = Family(
    name="olmo",
    parent=llama.FAMILY,
    changes=changes,
    toy=llama.TOY | dict(num_key_value_heads=4),
    published={
        "OLMo-7B": dict(
            vocab_size=50304,
            hidden_size=4096,
            intermediate_size=11008,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=32,
            max_position_embeddings=2048,
            clip_qkv=None,
            tie_word_embeddings=False,
            **rope_parameters(10000.0),
        ),
    },
    parity={"main": llama.SMALL | dict(clip_qkv=0.5)},
)
