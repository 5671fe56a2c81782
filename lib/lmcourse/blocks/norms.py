"""Normalisation layers, written out rather than wrapped.

`LayerNorm` (GPT-2, OLMo) centres each row and divides by its standard deviation;
`RMSNorm` (Llama and nearly everything since) only divides by the root mean square.
Both work on the last dimension of a tensor of any shape.
"""

from __future__ import annotations

import torch
from torch import nn


class LayerNorm(nn.Module):
    """(x - mean) / sqrt(var + eps) * weight + bias, statistics in float32.

    `affine=False` is OLMo's parameter-free LayerNorm: no learned scale and no shift.
    """

    def __init__(self, dim: int, eps: float = 1e-5, affine: bool = True, bias: bool = True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim)) if affine else None
        self.bias = nn.Parameter(torch.zeros(dim)) if affine and bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., dim] -> [..., dim]
        x32 = x.float()
        mean = x32.mean(-1, keepdim=True)
        var = (x32 - mean).pow(2).mean(-1, keepdim=True)  # biased variance, as torch computes it
        y = ((x32 - mean) * torch.rsqrt(var + self.eps)).to(x.dtype)
        if self.weight is not None:
            y = y * self.weight
        if self.bias is not None:
            y = y + self.bias
        return y


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * (offset + weight), computed in float32.

    Gemma 2 stores its scale as a difference from one (`offset=1.0`, weight initialised at
    zero); every other family stores the scale itself (`offset=0.0`).
    """

    def __init__(self, dim: int, eps: float = 1e-6, offset: float = 0.0):
        super().__init__()
        self.eps = eps
        self.offset = offset
        self.weight = nn.Parameter(torch.full((dim,), 1.0 - offset))  # scale starts at 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., dim] -> [..., dim]
        x32 = x.float()
        y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        if self.offset:  # Gemma: scale in float32, then cast
            return (y * (self.offset + self.weight.float())).to(x.dtype)
        return self.weight * y.to(x.dtype)  # Llama: cast, then scale


def make_norm(spec, dim: int | None = None) -> nn.Module:
    """The norm a spec asks for, over `dim` (default: the model width)."""
    dim = spec.d if dim is None else dim
    if spec.norm == "rms":
        return RMSNorm(dim, spec.norm_eps, spec.norm_offset)
    return LayerNorm(dim, spec.norm_eps, spec.norm_affine, spec.norm_bias)  # norm == 'layer'
