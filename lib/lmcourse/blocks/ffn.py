"""Feed-forward layers: GPT-2's two-matrix MLP and the gated three-matrix variants.

MLP:       down(act(up(x)))                    GPT-2 (act = GELU), OPT (act = ReLU)
Gated MLP: down(act(gate(x)) * up(x))          SwiGLU (act = SiLU: Llama, Qwen, Mistral, OLMo)
                                               GeGLU  (act = tanh-GELU: Gemma)

The activations are computed the way transformers' `activations.py` computes the name a config
gives, so that they agree in half precision too.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU's tanh approximation, written out as GPT-2's `gelu_new` computes it:

    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    """
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def gelu_tanh_fused(x: torch.Tensor) -> torch.Tensor:
    """The same formula as torch's one kernel computes it (Gemma's `gelu_pytorch_tanh`,
    transformers' `GELUTanh`): equal to `gelu_tanh` up to rounding, and in bfloat16 rounded
    once instead of after every step."""
    return F.gelu(x, approximate="tanh")


ACTIVATIONS = {
    "gelu_new": gelu_tanh,  # transformers' NewGELUActivation
    "gelu_pytorch_tanh": gelu_tanh_fused,  # transformers' GELUTanh
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
    def __init__(self, d: int, hidden: int, act: str, bias: bool = False):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=bias)
        self.up_proj = nn.Linear(d, hidden, bias=bias)
        self.down_proj = nn.Linear(hidden, d, bias=bias)
        self.act = activation(act)

    def forward(self, x):  # [..., d] -> [..., hidden] -> [..., d]
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))


def make_ffn(spec, hidden: int) -> nn.Module:
    if spec.ffn == "gelu":
        return MLP(spec.d, hidden, spec.activation, spec.ffn_bias)
    return GatedMLP(spec.d, hidden, spec.activation, spec.ffn_bias)  # 'swiglu' | 'geglu'
