"""LM10-L5, port a Llama block: the slips of its parts (grading/slips/__init__.py)."""

import torch

from grading.slips.rotary import rotated, side_by_side, tables


def _expand_kv():
    return {
        "the stack of key-value heads tiled (0, 1, 0, 1, ...): query head h reads head "
        "h // n_rep, each head repeated in place?": lambda w, kv, n_rep: kv.repeat(1, n_rep, 1, 1),
    }


def _rope():
    def turned(x, positions, base, **slip):
        cos, sin = tables(positions, x.shape[-1], base)
        return rotated(x, torch.cat([cos, cos], -1), torch.cat([sin, sin], -1), **slip)

    return {
        "pairs side by side (2i, 2i + 1): Llama's weights pair coordinate i with i + head_dim/2?": (
            lambda w, x, positions, base: side_by_side(x, positions, base)
        ),
        "rotated the wrong way: the second half enters with a minus sign, (-x2, x1)?": (
            lambda w, x, positions, base: turned(x, positions, base, sign=-1.0)
        ),
        "cos and sin swapped: x is multiplied by cos, rotate_half(x) by sin?": (
            lambda w, x, positions, base: turned(x, positions, base, swapped=True)
        ),
    }


def llama_layer(x, weights, config, causal=True, scale=None):
    """A Llama decoder layer's output for x [batch, tokens, hidden] in float64, from the layer's
    `weights` (its state_dict) and `config`, positions 0, 1, ...; with a slip or two: no
    causal mask, scores scaled by `scale` instead of 1/sqrt(head_dim)."""
    w = {name: value.detach().double() for name, value in weights.items()}
    eps = config.rms_norm_eps
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    batch, tokens, d = x.shape
    head_dim = getattr(config, "head_dim", None) or d // heads

    def rms(h, scale_weight):
        return h / (h.pow(2).mean(-1, keepdim=True) + eps).sqrt() * scale_weight

    def project(h, name, count):
        out = h @ w[f"self_attn.{name}_proj.weight"].T
        return out.view(batch, tokens, count, head_dim).transpose(1, 2)

    x = x.detach().double()
    h = rms(x, w["input_layernorm.weight"])
    cos, sin = tables(torch.arange(tokens), head_dim, config.rope_parameters["rope_theta"])
    cos, sin = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    q = rotated(project(h, "q", heads), cos, sin)
    k = rotated(project(h, "k", kv_heads), cos, sin).repeat_interleave(heads // kv_heads, 1)
    v = project(h, "v", kv_heads).repeat_interleave(heads // kv_heads, 1)
    scores = q @ k.transpose(-1, -2) * (head_dim**-0.5 if scale is None else scale)
    if causal:
        later = torch.ones(tokens, tokens, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(later, float("-inf"))
    mixed = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, tokens, heads * head_dim)
    x = x + mixed @ w["self_attn.o_proj.weight"].T
    h = rms(x, w["post_attention_layernorm.weight"])
    gate, up = h @ w["mlp.gate_proj.weight"].T, h @ w["mlp.up_proj.weight"].T
    return x + (torch.nn.functional.silu(gate) * up) @ w["mlp.down_proj.weight"].T


def _block():
    def width_scale(w, x, weights, config):
        head_dim = getattr(config, "head_dim", None) or x.shape[-1] // config.num_attention_heads
        assert head_dim != x.shape[-1]
        return llama_layer(x, weights, config, scale=x.shape[-1] ** -0.5)

    return {
        "no causal mask: a position attends only to itself and the positions before it?": (
            lambda w, x, weights, config: llama_layer(x, weights, config, causal=False)
        ),
        "scores scaled by 1/sqrt(hidden_size): the scale is 1/sqrt(head_dim)?": width_scale,
        "scores left unscaled: they are divided by sqrt(head_dim)?": (
            lambda w, x, weights, config: llama_layer(x, weights, config, scale=1.0)
        ),
    }


# The block test asks, on a failure (data only: the table cannot hold a module),
#     hint("l5_test_block", got, expected, x=x, weights=dict(layer.state_dict()), config=c)
BLOCK = _block()
PARTS = {
    "l5_test_expand_kv": _expand_kv(),
    "l5_test_rope": _rope(),
    "l5_test_block": BLOCK,
}
