"""OLMo 2 (`olmo2`), written as a diff of Llama."""

from __future__ import annotations

from . import llama
from .base import Family, rope_parameters


def changes(c) -> dict:
    """Llama with its norms after each stage, not before, and QK-norm across all heads."""
    return dict(norms_after=True, qk_norm=True, qk_norm_all_heads=True)


FAMILY = Family(
    name="olmo2",
    parent=llama.FAMILY,
    changes=changes,
    toy=llama.TOY,
    published={
        "OLMo-2-7B": dict(
            vocab_size=100352,
            hidden_size=4096,
            intermediate_size=11008,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=32,
            max_position_embeddings=4096,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            **rope_parameters(500000.0),
        ),
    },
    parity={"main": llama.SMALL},
)
