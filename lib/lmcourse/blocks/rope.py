"""Rotary position embedding (RoPE).

Each head vector is read as pairs of numbers; pair i is turned by the angle
position * inv_freq[i]. Two layouts of the pairs exist in the wild:

- 'half'  (Llama, transformers' `rotate_half`): pair i is (x[i], x[i + dim/2]);
- 'pairs' (DeepSeek-V3's `rope_interleave`, the original paper): pair i is (x[2i], x[2i+1]).

Weights trained with one layout give wrong answers, silently, under the other.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def inverse_frequencies(base: float, dim: int) -> torch.Tensor:
    """inv_freq[i] = base^(-2i/dim) for i < dim/2: the angle per position of each pair."""
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))  # [dim/2]


def llama3_scaled(inv_freq: torch.Tensor, factor: float, low_freq_factor: float,
                  high_freq_factor: float, original_max_position_embeddings: int) -> torch.Tensor:
    """Llama 3.1's frequency scaling: slow pairs slowed by `factor`, fast pairs kept, blend between.

    A pair whose wavelength (positions per full turn) exceeds original/low_freq_factor is divided
    by `factor`; one shorter than original/high_freq_factor is kept; those between are a linear
    blend of the two, weighted by how many turns they make within the original context.
    """
    old_len = original_max_position_embeddings
    wavelen = 2 * math.pi / inv_freq
    slow = wavelen > old_len / low_freq_factor
    fast = wavelen < old_len / high_freq_factor
    scaled = torch.where(slow, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    return torch.where(~fast & ~slow, blended, scaled)


def rope_frequencies(spec) -> torch.Tensor:
    """inv_freq for a spec: the base, then the scaling its `rope_scaling` names (if any)."""
    dim = spec.rotary_dim or spec.head_dim
    inv_freq = inverse_frequencies(spec.rope_theta, dim)
    params = dict(spec.rope_scaling)
    kind = params.get("rope_type", "default")
    if kind == "default":
        return inv_freq
    if kind == "llama3":
        return llama3_scaled(inv_freq, params["factor"], params["low_freq_factor"],
                             params["high_freq_factor"], params["original_max_position_embeddings"])
    raise ValueError(f"rope_scaling: rope_type must be 'default' or 'llama3', got {kind!r}")


class RotaryEmbedding(nn.Module):
    """position_ids [batch, T] -> (cos, sin), each [batch, 1, T, dim], halves repeated.

    The singleton dimension broadcasts over heads; one call serves every block.
    """

    def __init__(self, spec):
        super().__init__()
        self.register_buffer("inv_freq", rope_frequencies(spec), persistent=False)

    def forward(self, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        angles = position_ids[..., None].float() * self.inv_freq  # [batch, T, dim/2]
        angles = torch.cat((angles, angles), dim=-1).unsqueeze(1)  # [batch, 1, T, dim]
        return angles.cos(), angles.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                 layout: str = "half") -> torch.Tensor:
    """Rotate x [batch, heads, T, head_dim] by (cos, sin) [batch, 1, T, dim], dim <= head_dim.

    Only the first `dim` numbers of each head turn (partial rotary); the rest pass through.
    """
    dim = cos.shape[-1]
    if dim < x.shape[-1]:  # partial rotary (Phi-3)
        return torch.cat((apply_rotary(x[..., :dim], cos, sin, layout), x[..., dim:]), dim=-1)
    if layout == "half":
        return x * cos + rotate_half(x) * sin
    if layout == "pairs":
        c, s = cos[..., : dim // 2], sin[..., : dim // 2]  # one angle per pair
        even, odd = x[..., 0::2], x[..., 1::2]
        return torch.stack((even * c - odd * s, odd * c + even * s), dim=-1).flatten(-2)
    raise ValueError(f"rope layout must be 'half' or 'pairs', got {layout!r}")
