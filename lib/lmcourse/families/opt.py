"""OPT (`opt`), written as a diff of GPT-2."""

from __future__ import annotations

from . import gpt2
from .base import PARITY_VOCAB, Family, Rules, norm_rules


def changes(c) -> dict:
    """GPT-2 with ReLU, separate q/k/v projections and a position table offset by 2."""
    unsupported = [
        f"{name}={getattr(c, name)!r} (supported: {valid!r})"
        for name, valid in (
            ("do_layer_norm_before", True),
            ("word_embed_proj_dim", c.hidden_size),
            ("_remove_final_layer_norm", False),
        )
        if getattr(c, name) != valid
    ]
    if unsupported:  # OPT-350m's post-norm blocks and projected embeddings are not built here
        raise ValueError(
            f"opt: unsupported {', '.join(unsupported)}; lmcourse builds pre-norm OPT "
            "models whose embeddings are hidden_size wide (OPT-125m, OPT-1.3B and up)"
        )
    bias, affine = bool(c.enable_bias), bool(c.layer_norm_elementwise_affine)
    return dict(
        hidden=c.ffn_dim,
        qkv_bias=bias,
        out_bias=bias,
        ffn_bias=bias,
        norm_affine=affine,
        norm_bias=affine,
        norm_eps=1e-5,  # nn.LayerNorm's default: OPT's config has no field for it
        positions=c.max_position_embeddings + 2,
        position_offset=2,
    )


def weights(spec) -> Rules:
    """model.decoder.* with GPT-2's norm names (final_layer_norm is the block's second)."""
    top = "model.decoder."
    rules = {
        "embed.weight": (f"{top}embed_tokens.weight", None),
        "pos_embed.weight": (f"{top}embed_positions.weight", None),
        "head.weight": ("lm_head.weight", None),
    }
    rules |= norm_rules(spec, "norm", f"{top}final_layer_norm")
    for i in range(spec.layers):
        b, h = f"blocks.{i}.", f"{top}layers.{i}."
        rules |= norm_rules(spec, f"{b}attn_norm", f"{h}self_attn_layer_norm")
        rules |= norm_rules(spec, f"{b}ffn_norm", f"{h}final_layer_norm")
        for ours, theirs in (
            ("attn.q_proj", "self_attn.q_proj"),
            ("attn.k_proj", "self_attn.k_proj"),
            ("attn.v_proj", "self_attn.v_proj"),
            ("attn.o_proj", "self_attn.out_proj"),
            ("ffn.up_proj", "fc1"),
            ("ffn.down_proj", "fc2"),
        ):
            rules[f"{b}{ours}.weight"] = (f"{h}{theirs}.weight", None)
            if spec.ffn_bias:  # enable_bias puts a bias on every linear layer of the block
                rules[f"{b}{ours}.bias"] = (f"{h}{theirs}.bias", None)
    return rules


def _published(d: int, hidden: int, layers: int, heads: int) -> dict:
    return dict(
        vocab_size=50272,
        hidden_size=d,
        ffn_dim=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        max_position_embeddings=2048,
        word_embed_proj_dim=d,
        do_layer_norm_before=True,
        activation_function="relu",
        tie_word_embeddings=True,
    )


def _case(d: int, layers: int, heads: int, hidden: int) -> dict:
    return dict(
        hidden_size=d,
        word_embed_proj_dim=d,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        ffn_dim=hidden,
        vocab_size=PARITY_VOCAB,
        max_position_embeddings=64,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
    )


FAMILY = Family(
    name="opt",
    parent=gpt2.FAMILY,
    changes=changes,
    weights=weights,
    toy=dict(
        vocab_size=128,
        max_position_embeddings=64,
        hidden_size=64,
        ffn_dim=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        word_embed_proj_dim=64,
    ),
    published={
        "OPT-125m": _published(768, 3072, 12, 12),
        "OPT-6.7B": _published(4096, 16384, 32, 32),
    },
    parity={"main": _case(32, 2, 4, 48), "held-out": _case(24, 3, 2, 80)},
)
