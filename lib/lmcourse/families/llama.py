"""Llama (`llama`): the modern block, read in full; most families are diffs of it. Its weight
rules (model.layers.i.{self_attn,mlp}.*) follow the spec's norms, experts and projections, so the
families written as diffs of Llama use them as they are or pass hooks."""

from __future__ import annotations

from .base import (
    PARITY_VOCAB,
    Family,
    Rules,
    implied_head_dim,
    norm_rules,
    part,
    rope_fields,
    rope_parameters,
)


def changes(c) -> dict:
    """Llama: rotary positions, RMSNorm, SwiGLU, grouped key-value heads, no biases."""
    head_dim = getattr(c, "head_dim", None) or implied_head_dim(c)
    bias = bool(getattr(c, "attention_bias", False))
    return dict(
        d=c.hidden_size,
        layers=c.num_hidden_layers,
        vocab=c.vocab_size,
        heads=c.num_attention_heads,
        kv_heads=c.num_key_value_heads or c.num_attention_heads,
        head_dim=head_dim,
        ffn="swiglu",
        hidden=c.intermediate_size,
        act=getattr(c, "hidden_act", ""),
        qkv_bias=bias,
        out_bias=bias,
        ffn_bias=bool(getattr(c, "mlp_bias", False)),
        norm="rms",
        norm_eps=getattr(c, "rms_norm_eps", 1e-5),
        tied=bool(c.tie_word_embeddings),
        **rope_fields(c),
    )


# ---- weight rules ---------------------------------------------------------------------------


def separate_qkv(spec, b: str, a: str) -> Rules:
    """q_proj, k_proj, v_proj, each its own tensor, then o_proj and the QK-norm scales."""
    rules = {}
    for name in ("q_proj", "k_proj", "v_proj"):
        rules[f"{b}attn.{name}.weight"] = (f"{a}{name}.weight", None)
        if spec.qkv_bias:
            rules[f"{b}attn.{name}.bias"] = (f"{a}{name}.bias", None)
    return rules | output_and_qk_norm(spec, b, a)


def output_and_qk_norm(spec, b: str, a: str) -> Rules:
    """o_proj (and its bias) and the query and key norms' scales."""
    rules = {f"{b}attn.o_proj.weight": (f"{a}o_proj.weight", None)}
    if spec.out_bias:
        rules[f"{b}attn.o_proj.bias"] = (f"{a}o_proj.bias", None)
    if spec.qk_norm:
        rules[f"{b}attn.q_norm.weight"] = (f"{a}q_norm.weight", None)
        rules[f"{b}attn.k_norm.weight"] = (f"{a}k_norm.weight", None)
    return rules


def separate_gate_up(spec, b: str, m: str) -> Rules:
    """gate_proj and up_proj, each its own tensor."""
    rules = {}
    for name in ("gate_proj", "up_proj"):
        rules[f"{b}ffn.{name}.weight"] = (f"{m}{name}.weight", None)
        if spec.ffn_bias:
            rules[f"{b}ffn.{name}.bias"] = (f"{m}{name}.bias", None)
    return rules


def experts_rules(spec, b: str, m: str) -> Rules:
    """The router and the experts' fused 3-D tensors (transformers 5.x), shared experts."""
    e = spec.expert_hidden
    rules = {
        f"{b}ffn.router.weight": (f"{m}gate.weight", None),
        f"{b}ffn.experts.gate": (f"{m}experts.gate_up_proj", part([e, e], 0, dim=1)),
        f"{b}ffn.experts.up": (f"{m}experts.gate_up_proj", part([e, e], 1, dim=1)),
        f"{b}ffn.experts.down": (f"{m}experts.down_proj", None),
    }
    if spec.router_bias:
        rules[f"{b}ffn.router.correction_bias"] = (f"{m}gate.e_score_correction_bias", None)
    if spec.shared_experts:
        for name in ("gate_proj", "up_proj", "down_proj"):
            rules[f"{b}ffn.shared.{name}.weight"] = (f"{m}shared_experts.{name}.weight", None)
    return rules


def weights(spec, attention=separate_qkv, gate_up=separate_gate_up) -> Rules:
    """model.layers.i.{self_attn,mlp}.*: Llama and every family written as a diff of it. A family
    whose attention or gate and up projections are laid out otherwise passes its own hook."""
    rules = {
        "embed.weight": ("model.embed_tokens.weight", None),
        "head.weight": ("lm_head.weight", None),
    }
    rules |= norm_rules(spec, "norm", "model.norm")
    if spec.norms_per_block == 4:  # Gemma 2: a norm before and after each stage
        norms = {
            "attn_norm": "input_layernorm",
            "attn_post_norm": "post_attention_layernorm",
            "ffn_norm": "pre_feedforward_layernorm",
            "ffn_post_norm": "post_feedforward_layernorm",
        }
    elif spec.norms_after:  # OLMo 2: a norm after each stage only
        norms = {
            "attn_post_norm": "post_attention_layernorm",
            "ffn_post_norm": "post_feedforward_layernorm",
        }
    else:
        norms = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}
    for i in range(spec.layers):
        b, h = f"blocks.{i}.", f"model.layers.{i}."
        a, m = f"{h}self_attn.", f"{h}mlp."
        for ours, theirs in norms.items():
            rules |= norm_rules(spec, b + ours, h + theirs)
        rules |= attention(spec, b, a)
        if spec.experts and i >= spec.dense_layers:
            rules |= experts_rules(spec, b, m)
            continue
        if spec.ffn != "gelu":
            rules |= gate_up(spec, b, m)
        else:
            rules[f"{b}ffn.up_proj.weight"] = (f"{m}up_proj.weight", None)
            if spec.ffn_bias:
                rules[f"{b}ffn.up_proj.bias"] = (f"{m}up_proj.bias", None)
        rules[f"{b}ffn.down_proj.weight"] = (f"{m}down_proj.weight", None)
        if spec.ffn_bias:
            rules[f"{b}ffn.down_proj.bias"] = (f"{m}down_proj.bias", None)
    return rules


# ---- sizes ----------------------------------------------------------------------------------

TOY = dict(  # the toy every family written as a diff of Llama starts from
    vocab_size=128,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
)

SMALL = dict(  # the parity case of the families written as a diff of Llama, checked at one size
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=48,
    vocab_size=PARITY_VOCAB,
)

LLAMA3_ROPE = dict(  # Llama 3.1's long-context rule, with its factor given per model
    rope_type="llama3",
    low_freq_factor=1.0,
    high_freq_factor=4.0,
    original_max_position_embeddings=8192,
)


def _published(vocab, d, hidden, layers, heads, kv_heads, context, tied, rope, **extra) -> dict:
    return dict(
        vocab_size=vocab,
        hidden_size=d,
        intermediate_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        **extra,
        max_position_embeddings=context,
        rms_norm_eps=1e-5,
        tie_word_embeddings=tied,
        **rope,
    )


def _case(d, layers, heads, kv_heads, hidden, rope, tied) -> dict:
    return dict(
        hidden_size=d,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        intermediate_size=hidden,
        vocab_size=PARITY_VOCAB,
        rope_parameters=rope,
        tie_word_embeddings=tied,
    )


def _llama3_case(d, layers, heads, kv_heads, hidden, original: int) -> dict:
    """Llama 3.1's rotary scaling with a short original context, so that it bites."""
    rope = {"rope_theta": 500000.0, "factor": 8.0} | LLAMA3_ROPE
    rope["original_max_position_embeddings"] = original
    return _case(d, layers, heads, kv_heads, hidden, rope, tied=False)


def _smollm2_case(d, layers, heads, kv_heads, hidden) -> dict:
    """SmolLM2's shape: a tied table, 3:1 grouping, base 100,000."""
    rope = {"rope_type": "default", "rope_theta": 100000.0}
    return _case(d, layers, heads, kv_heads, hidden, rope, tied=True)


FAMILY = Family(
    name="llama",
    parent=None,
    changes=changes,
    weights=weights,
    toy=TOY,
    published={
        "SmolLM2-135M": _published(
            49152, 576, 1536, 30, 9, 3, 8192, True, rope_parameters(100000.0)
        ),
        "TinyLlama-1.1B": _published(
            32000, 2048, 5632, 22, 32, 4, 2048, False, rope_parameters(10000.0)
        ),
        "Llama-2-7B": _published(
            32000, 4096, 11008, 32, 32, 32, 4096, False, rope_parameters(10000.0)
        ),
        "Llama-3.1-8B": _published(
            128256,
            4096,
            14336,
            32,
            32,
            8,
            131072,
            False,
            rope_parameters(500000.0, factor=8.0, **LLAMA3_ROPE),
        ),
        "Llama-3.1-405B": _published(
            128256,
            16384,
            53248,
            126,
            128,
            8,
            131072,
            False,
            rope_parameters(500000.0, factor=8.0, **LLAMA3_ROPE),
        ),
        "Llama-3.2-1B": _published(
            128256,
            2048,
            8192,
            16,
            32,
            8,
            131072,
            True,
            rope_parameters(500000.0, factor=32.0, **LLAMA3_ROPE),
            head_dim=64,
        ),
    },
    parity={
        "main": _llama3_case(48, 2, 6, 2, 64, original=16),
        "held-out": _llama3_case(64, 3, 8, 1, 80, original=32),  # multi-query
        "smollm2": _smollm2_case(36, 2, 9, 3, 96),
        "smollm2-held-out": _smollm2_case(60, 3, 6, 2, 72),
    },
)
