"""Qwen3-MoE (`qwen3_moe`), written as a diff of Qwen3."""

from __future__ import annotations

from . import llama, qwen3
from .base import Family, experts, rope_parameters


def changes(c) -> dict:
    """Qwen3 whose feed-forward is a mixture of experts, after optional dense first layers."""
    layers = c.num_hidden_layers
    sparse = [
        i
        for i in range(layers)
        if i not in c.mlp_only_layers and (i + 1) % c.decoder_sparse_step == 0
    ]
    dense = layers - len(sparse)
    if sparse != list(range(dense, layers)):
        raise ValueError(
            "qwen3_moe: only the first layers may be dense (mlp_only_layers=[0..k-1], "
            f"decoder_sparse_step=1); got sparse layers {sparse}"
        )
    return experts(c, c.moe_intermediate_size) | dict(
        dense_layers=dense,
        norm_topk=bool(c.norm_topk_prob),
        router_weights_in_model_dtype=True,  # Qwen3MoeTopKRouter casts them back
    )


FAMILY = Family(
    name="qwen3_moe",
    parent=qwen3.FAMILY,
    changes=changes,
    toy=llama.TOY | dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32),
    published={
        "Qwen3-30B-A3B": dict(
            vocab_size=151936,
            hidden_size=2048,
            intermediate_size=6144,
            moe_intermediate_size=768,
            num_hidden_layers=48,
            num_attention_heads=32,
            num_key_value_heads=4,
            head_dim=128,
            num_experts=128,
            num_experts_per_tok=8,
            norm_topk_prob=True,
            decoder_sparse_step=1,
            mlp_only_layers=[],
            max_position_embeddings=40960,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            use_sliding_window=False,
            **rope_parameters(1000000.0),
        ),
    },
    parity={
        "main": llama.SMALL
        | dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, mlp_only_layers=[0])
    },
)
