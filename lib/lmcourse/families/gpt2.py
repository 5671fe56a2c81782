"""GPT-2 (`gpt2`): the course's starting point, read in full."""

from __future__ import annotations

from .base import PARITY_VOCAB, Family, Rules, implied_head_dim, part, transpose


def changes(c) -> dict:
    """GPT-2: learned positions, LayerNorm with bias, a GELU MLP, biases everywhere."""
    # hidden_size, num_hidden_layers, ... are transformers' common names, which GPT2Config maps
    # to n_embd, n_layer, ...; a family written as a diff of GPT-2 (OPT) has them too
    d = c.hidden_size
    return dict(
        d=d,
        layers=c.num_hidden_layers,
        vocab=c.vocab_size,
        heads=c.num_attention_heads,
        kv_heads=c.num_attention_heads,
        head_dim=implied_head_dim(c),
        ffn="gelu",
        hidden=getattr(c, "n_inner", None) or 4 * d,  # GPT-2's default width is 4d
        act=c.activation_function,
        qkv_bias=True,
        out_bias=True,
        ffn_bias=True,
        norm="layer",
        norm_bias=True,
        norm_eps=getattr(c, "layer_norm_epsilon", 1e-5),
        tied=bool(c.tie_word_embeddings),
        positions=c.max_position_embeddings,
        rope_theta=0.0,
    )


def weights(spec) -> Rules:
    """transformer.h.i.*, Conv1D weights stored transposed, q, k and v fused in c_attn."""
    d = spec.d
    rules = {
        "embed.weight": ("transformer.wte.weight", None),
        "pos_embed.weight": ("transformer.wpe.weight", None),
        "norm.weight": ("transformer.ln_f.weight", None),
        "norm.bias": ("transformer.ln_f.bias", None),
        "head.weight": ("lm_head.weight", None),
    }
    for i in range(spec.layers):
        b, h = f"blocks.{i}.", f"transformer.h.{i}."
        for ours, theirs in (("attn_norm", "ln_1"), ("ffn_norm", "ln_2")):
            rules[f"{b}{ours}.weight"] = (f"{h}{theirs}.weight", None)
            rules[f"{b}{ours}.bias"] = (f"{h}{theirs}.bias", None)
        for j, name in enumerate(("q_proj", "k_proj", "v_proj")):  # c_attn = [q | k | v]
            rules[f"{b}attn.{name}.weight"] = (
                f"{h}attn.c_attn.weight",
                part([d] * 3, j, 0, transposed=True),
            )
            rules[f"{b}attn.{name}.bias"] = (f"{h}attn.c_attn.bias", part([d] * 3, j))
        for ours, theirs in (
            ("attn.o_proj", "attn.c_proj"),
            ("ffn.up_proj", "mlp.c_fc"),
            ("ffn.down_proj", "mlp.c_proj"),
        ):
            rules[f"{b}{ours}.weight"] = (f"{h}{theirs}.weight", transpose)
            rules[f"{b}{ours}.bias"] = (f"{h}{theirs}.bias", None)
    return rules


def _case(d: int, layers: int, heads: int) -> dict:
    return dict(
        n_embd=d,
        n_layer=layers,
        n_head=heads,
        vocab_size=PARITY_VOCAB,
        n_positions=64,
        bos_token_id=None,
        eos_token_id=None,
    )


FAMILY = Family(
    name="gpt2",
    parent=None,
    changes=changes,
    weights=weights,
    toy=dict(vocab_size=128, n_positions=64, n_embd=64, n_layer=2, n_head=4),
    published={
        "gpt2": dict(
            vocab_size=50257,
            n_positions=1024,
            n_embd=768,
            n_layer=12,
            n_head=12,
            activation_function="gelu_new",
            layer_norm_epsilon=1e-5,
        ),
    },
    parity={"main": _case(32, 2, 4), "held-out": _case(24, 3, 2)},
)
