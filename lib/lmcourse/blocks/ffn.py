"""Feed-forward layers: GPT-2's two-matrix MLP and the gated three-matrix variants.

MLP:       down(act(up(x)))                    GPT-2, OLMo-style (act = GELU)
Gated MLP: down(act(gate(x)) * up(x))          SwiGLU (act = SiLU: Llama, Qwen, Mistral)
                                               GeGLU  (act = tanh-GELU: Gemma)
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU's tanh approximation (GPT-2's `gelu_new`, Gemma's `gelu_pytorch_tanh`):

    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    """
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


ACTIVATIONS = {
    "gelu_new": gelu_tanh,
    "gelu_pytorch_tanh": gelu_tanh,
    "gelu": F.gelu,  # exact, through the error function
    "silu": F.silu,  # x * sigmoid(x), also called swish
    "relu": F.relu,
}


def activation(name: str):
    if name not in ACTIVATIONS:
        raise ValueError(f"act must be one of {sorted(ACTIVATIONS)}, got {name!r}")
    return ACTIVATIONS[name]


class MLP(nn.Module):
    def __init__(self, d: int, hidden: int, act: str, bias: bool = False):
        super().__init__()
        self.up_proj = nn.Linear(d, hidden, bias=bias)
        self.down_proj = nn.Linear(hidden, d, bias=bias)
        self.act = activation(act)

    def forward(self, x):  # [..., d] -> [..., hidden] -> [..., d]
        return self.down_proj(self.act(self.up_proj(x)))


class GatedMLP(nn.Module):
    """`gated=False` drops the gate branch entirely: down(up(x)), a linear map (an ablation)."""

    def __init__(self, d: int, hidden: int, act: str, bias: bool = False, gated: bool = True):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=bias)
        self.up_proj = nn.Linear(d, hidden, bias=bias)
        self.down_proj = nn.Linear(hidden, d, bias=bias)
        self.act = activation(act)
        self.gated = gated

    def forward(self, x):  # [..., d] -> [..., hidden] -> [..., d]
        if not self.gated:
            return self.down_proj(self.up_proj(x))
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))


def make_ffn(spec, hidden: int, gated: bool = True) -> nn.Module:
    if spec.ffn == "gelu":
        return MLP(spec.d, hidden, spec.act or "gelu_new", spec.ffn_bias)
    default = "silu" if spec.ffn == "swiglu" else "gelu_pytorch_tanh"  # 'swiglu' | 'geglu'
    return GatedMLP(spec.d, hidden, spec.act or default, spec.ffn_bias, gated)
