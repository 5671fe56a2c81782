"""Rotary position embedding (RoPE).

Each head vector is read as pairs of numbers; pair i is turned by the angle
position * inv_freq[i]. Two layouts of the pairs exist in the wild:

- 'half'  (Llama, transformers' `rotate_half`): pair i is (x[i], x[i + dim/2]);
- 'pairs' (DeepSeek-V3, whose config calls it `rope_interleave`; the original paper):
  pair i is (x[2i], x[2i+1]).

Weights trained with one layout give wrong answers, silently, under the other.
"""

from __future__ import annotations

import math

import torch

from ..spec import yarn_mscale
from .precision import KeepFloat32


def inverse_frequencies(base: float, dim: int) -> torch.Tensor:
    """inv_freq[i] = base^(-2i/dim) for i < dim/2: the angle per position of each pair."""
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))  # [dim/2]


def llama3_scaled(
    inv_freq: torch.Tensor,
    factor: float,
    low_freq_factor: float,
    high_freq_factor: float,
    original_max_position_embeddings: int,
) -> torch.Tensor:
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


def yarn_scaled(
    base: float,
    dim: int,
    factor: float,
    original_max_position_embeddings: int,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    truncate: bool = True,
) -> torch.Tensor:
    """YaRN's frequency scaling (Peng et al. 2023, arXiv:2309.00071, §3.2; DeepSeek-V3, Qwen3):
    fast pairs kept, slow pairs slowed by `factor`. Between them the blend is linear in the pair
    index, from the (fractional) pair that makes `beta_fast` full turns within the original
    context to the one that makes `beta_slow`, rounded outward unless `truncate` is False, as in
    transformers' `_compute_yarn_parameters`. (llama3's rule blends linearly in the number of
    turns instead, between thresholds given as wavelengths.)

    Returns inv_freq [dim/2], computed in transformers' order of operations, so that the angles
    (and logits) agree to the last bit.
    """

    def pair_making(turns: float) -> float:  # fractional pair index with `turns` turns
        return (
            dim
            * math.log(original_max_position_embeddings / (turns * 2 * math.pi))
            / (2 * math.log(base))
        )

    low, high = pair_making(beta_fast), pair_making(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # a one-pair ramp would divide by zero
    ramp = ((torch.arange(dim // 2, dtype=torch.float) - low) / (high - low)).clamp(0, 1)
    powers = base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)  # [dim/2]
    kept, slowed = 1.0 / powers, 1.0 / (factor * powers)
    keep = 1 - ramp  # 1 for the fast pairs, 0 for the slow ones
    return slowed * (1 - keep) + kept * keep


def rope_frequencies(spec) -> torch.Tensor:
    """inv_freq for a spec: the base, then the scaling its `rope_scaling` names (if any)."""
    dim = spec.rotary_dim
    params = dict(spec.rope_scaling)
    kind = params.get("rope_type", "default")
    if kind == "default":
        return inverse_frequencies(spec.rope_theta, dim)
    if kind == "llama3":
        return llama3_scaled(
            inverse_frequencies(spec.rope_theta, dim),
            params["factor"],
            params["low_freq_factor"],
            params["high_freq_factor"],
            params["original_max_position_embeddings"],
        )
    if kind == "yarn":
        if not params.get("factor"):
            raise ValueError(
                f"rope_scaling: yarn needs a 'factor' (the context extension), got {params}"
            )
        return yarn_scaled(
            spec.rope_theta,
            dim,
            params["factor"],
            params["original_max_position_embeddings"],
            params.get("beta_fast") or 32.0,
            params.get("beta_slow") or 1.0,
            params.get("truncate", True),
        )
    raise ValueError(f"rope_scaling: rope_type must be 'default', 'llama3' or 'yarn', got {kind!r}")


def rope_amplitude(spec) -> float:
    """The factor cos and sin are multiplied by: 1, except under yarn, where it is the
    configuration's `attention_factor` or, failing that, YaRN's mscale ratio."""
    params = dict(spec.rope_scaling)
    if params.get("rope_type", "default") != "yarn":
        return 1.0
    if params.get("attention_factor") is not None:
        return float(params["attention_factor"])
    factor, mscale, mscale_all_dim = (
        params["factor"],
        params.get("mscale"),
        params.get("mscale_all_dim"),
    )
    if mscale and mscale_all_dim:
        return float(yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all_dim))
    return yarn_mscale(factor)


class RotaryEmbedding(KeepFloat32):
    """position_ids [batch, T] -> (cos, sin) in `dtype`, each [batch, 1, T, dim], halves repeated.

    The singleton dimension broadcasts over heads; one call serves every block.

    `inv_freq` stays in float32 whatever dtype the model is cast to, as in a transformers model
    loaded with `dtype=torch.bfloat16` (`LlamaRotaryEmbedding` builds it in float32 and casts it
    to float32 again in `forward`). Rounded to bfloat16, inv_freq keeps 8 significant bits, and
    the angles at position 4,000 would be off by radians.
    """

    keep_float32 = ("inv_freq",)

    def __init__(self, spec):
        super().__init__()
        self.register_buffer("inv_freq", rope_frequencies(spec), persistent=False)
        self.amplitude = rope_amplitude(spec)  # 1 except under yarn

    def forward(
        self, position_ids: torch.Tensor, dtype: torch.dtype = torch.float32
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return rotary_cos_sin(position_ids, self.inv_freq, self.amplitude, dtype)


def rotary_cos_sin(
    position_ids: torch.Tensor,
    inv_freq: torch.Tensor,
    amplitude: float = 1.0,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """position_ids [batch, T] and inv_freq [dim/2] -> (cos, sin), each [batch, 1, T, dim]."""
    angles = position_ids[..., None].float() * inv_freq.float()  # [batch, T, dim/2], float32
    angles = torch.cat((angles, angles), dim=-1).unsqueeze(1)  # [batch, 1, T, dim]
    cos, sin = angles.cos() * amplitude, angles.sin() * amplitude  # in float32
    return cos.to(dtype), sin.to(dtype)  # then in the model's dtype, as transformers does


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str = "half"
) -> torch.Tensor:
    """Rotate x [batch, heads, T, head_dim] by (cos, sin) [batch, 1, T, dim], dim <= head_dim.

    Only the first `dim` numbers of each head turn (partial rotary); the rest pass through.
    """
    dim = cos.shape[-1]
    if dim < x.shape[-1]:  # partial rotary (GPT-NeoX, Qwen3-Next)
        return torch.cat((apply_rotary(x[..., :dim], cos, sin, layout), x[..., dim:]), dim=-1)
    if layout == "half":
        return x * cos + rotate_half(x) * sin
    if layout == "pairs":
        c, s = cos[..., : dim // 2], sin[..., : dim // 2]  # one angle per pair
        even, odd = x[..., 0::2], x[..., 1::2]
        return torch.stack((even * c - odd * s, odd * c + even * s), dim=-1).flatten(-2)
    raise ValueError(f"rope layout must be 'half' or 'pairs', got {layout!r}")
