"""DeepSeek-V3 (`deepseek_v3`), written as a diff of Llama."""

from __future__ import annotations

from ..spec import yarn_mscale
from . import llama
from .base import PARITY_VOCAB, Family, Rules, rope_parameters


def changes(c) -> dict:
    """Llama plus latent attention (MLA), rotary pairs side by side and sigmoid-routed experts."""
    qk = c.qk_nope_head_dim + c.qk_rope_head_dim
    scale = qk**-0.5
    rope = c.rope_parameters or {}
    if rope.get("rope_type", "default") != "default" and rope.get("mscale_all_dim"):
        # transformers' yarn_apply_mscale: the score scale grows with the context extension
        scale *= yarn_mscale(rope["factor"], rope["mscale_all_dim"]) ** 2
    return dict(
        kv_heads=c.num_attention_heads,
        head_dim=qk,
        score_scale=scale,
        rope_layout="pairs" if c.rope_interleave else "half",
        experts=c.n_routed_experts,
        experts_per_token=c.num_experts_per_tok,
        expert_hidden=c.moe_intermediate_size,
        shared_experts=c.n_shared_experts,
        dense_layers=c.first_k_dense_replace,
        norm_topk=bool(c.norm_topk_prob),
        router_bias=True,
        routed_scale=float(c.routed_scaling_factor),
        n_group=c.n_group,
        topk_group=c.topk_group,
        q_lora_rank=c.q_lora_rank or 0,
        kv_lora_rank=c.kv_lora_rank,
        qk_nope_head_dim=c.qk_nope_head_dim,
        qk_rope_head_dim=c.qk_rope_head_dim,
        v_head_dim=c.v_head_dim,
    )


def latent_attention(spec, b: str, a: str) -> Rules:
    """MLA's projections and latent norms."""
    names = {
        "kv_a_proj": "kv_a_proj_with_mqa",
        "kv_a_norm": "kv_a_layernorm",
        "kv_b_proj": "kv_b_proj",
        "o_proj": "o_proj",
    }
    if spec.q_lora_rank:
        names |= {"q_a_proj": "q_a_proj", "q_a_norm": "q_a_layernorm", "q_b_proj": "q_b_proj"}
    else:
        names["q_proj"] = "q_proj"
    rules = {
        f"{b}attn.{ours}.weight": (f"{a}{theirs}.weight", None) for ours, theirs in names.items()
    }
    if spec.qkv_bias:
        for ours, theirs in (("kv_a_proj", "kv_a_proj_with_mqa"), ("q_a_proj", "q_a_proj")):
            if ours in names:
                rules[f"{b}attn.{ours}.bias"] = (f"{a}{theirs}.bias", None)
    if spec.out_bias:
        rules[f"{b}attn.o_proj.bias"] = (f"{a}o_proj.bias", None)
    return rules


def weights(spec) -> Rules:
    """Llama's names with latent attention's projections in place of q, k, v and o."""
    return llama.weights(spec, attention=latent_attention)


def case(d, layers, heads, q_lora, n_experts, n_group, topk_group, interleave) -> dict:
    """A random DeepSeek-V3 with every feature: MLA, shared and routed experts in groups."""
    return dict(
        hidden_size=d,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        intermediate_size=2 * d,
        moe_intermediate_size=d // 2,
        vocab_size=PARITY_VOCAB,
        n_routed_experts=n_experts,
        num_experts_per_tok=2,
        n_group=n_group,
        topk_group=topk_group,
        first_k_dense_replace=1,
        n_shared_experts=1,
        q_lora_rank=q_lora,
        kv_lora_rank=12,
        qk_rope_head_dim=4,
        qk_nope_head_dim=8,
        v_head_dim=6,
        rope_interleave=interleave,
        routed_scaling_factor=2.5,
    )


FAMILY = Family(
    name="deepseek_v3",
    parent=llama.FAMILY,
    changes=changes,
    weights=weights,
    toy={k: v for k, v in llama.TOY.items() if k != "head_dim"}
    | dict(  # head widths from the MLA sizes
        num_hidden_layers=3,
        num_key_value_heads=4,
        n_routed_experts=8,
        num_experts_per_tok=2,
        n_group=2,
        topk_group=1,
        first_k_dense_replace=1,
        moe_intermediate_size=32,
        q_lora_rank=24,
        kv_lora_rank=32,
        qk_nope_head_dim=16,
        qk_rope_head_dim=8,
        v_head_dim=16,
    ),
    published={
        "DeepSeek-V3": dict(
            vocab_size=129280,
            hidden_size=7168,
            intermediate_size=18432,
            moe_intermediate_size=2048,
            num_hidden_layers=61,
            num_attention_heads=128,
            num_key_value_heads=128,
            n_shared_experts=1,
            n_routed_experts=256,
            num_experts_per_tok=8,
            routed_scaling_factor=2.5,
            n_group=8,
            topk_group=4,
            first_k_dense_replace=3,
            norm_topk_prob=True,
            q_lora_rank=1536,
            kv_lora_rank=512,
            qk_nope_head_dim=128,
            qk_rope_head_dim=64,
            v_head_dim=128,
            max_position_embeddings=163840,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            rope_interleave=True,
            **rope_parameters(
                10000.0,
                rope_type="yarn",
                factor=40.0,
                beta_fast=32.0,
                beta_slow=1.0,
                mscale=1.0,
                mscale_all_dim=1.0,
                original_max_position_embeddings=4096,
            ),
        ),
    },
    parity={
        "main": case(32, 2, 4, q_lora=16, n_experts=8, n_group=2, topk_group=1, interleave=True),
        "held-out": case(
            24, 3, 3, q_lora=None, n_experts=12, n_group=3, topk_group=2, interleave=False
        ),
    },
)
