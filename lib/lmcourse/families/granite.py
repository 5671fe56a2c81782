"""Granite 3 (`granite`), written as a diff of Llama.

Its published configuration is the `config.json` of ibm-granite/granite-3.3-8b-instruct
(transformers_version 4.49.0); the base model's architecture is the same.
"""

from __future__ import annotations

from . import llama
from .base import PARITY_VOCAB, Family, rope_parameters


def changes(c) -> dict:
    """Llama with four multipliers: on the embeddings, scores, each stage's output and logits."""
    return dict(
        embed_scale=float(c.embedding_multiplier),
        score_scale=float(c.attention_multiplier),
        residual_scale=float(c.residual_multiplier),
        logit_divisor=float(c.logits_scaling),
    )


def _case(shape: dict, embedding, attention, residual, logits) -> dict:
    """A random Granite whose multipliers are far from 1, so that a misplaced one shows."""
    return shape | dict(
        embedding_multiplier=embedding,
        attention_multiplier=attention,
        residual_multiplier=residual,
        logits_scaling=logits,
    )


FAMILY = Family(
    name="granite",
    parent=llama.FAMILY,
    changes=changes,
    toy=llama.TOY,
    published={
        "Granite-3.3-8B": dict(
            vocab_size=49159,
            hidden_size=4096,
            intermediate_size=12800,
            num_hidden_layers=40,
            num_attention_heads=32,
            num_key_value_heads=8,
            max_position_embeddings=131072,
            rms_norm_eps=1e-5,
            tie_word_embeddings=True,
            embedding_multiplier=12.0,
            attention_multiplier=0.0078125,
            residual_multiplier=0.22,
            logits_scaling=16.0,
            **rope_parameters(10000000.0),
        ),
    },
    parity={
        "main": _case(llama.SMALL, embedding=3.0, attention=0.3, residual=0.5, logits=2.5),
        "held-out": _case(
            dict(
                hidden_size=48,
                num_hidden_layers=3,
                num_attention_heads=6,
                num_key_value_heads=2,
                intermediate_size=64,
                vocab_size=PARITY_VOCAB,
                tie_word_embeddings=True,
            ),
            embedding=12.0,
            attention=0.0625,
            residual=0.22,
            logits=8.0,
        ),
    },
)
