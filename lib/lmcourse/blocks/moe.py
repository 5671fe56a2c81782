"""Mixture of experts: a router picks k of E gated feed-forwards for each token.

Two routing recipes, as the checkpoints were trained:
- softmax (Mixtral, Qwen3-MoE): softmax over all E scores, keep the top k, renormalise the k
  weights to sum to one when spec.norm_topk;
- sigmoid (DeepSeek-V3, spec.router_bias): independent sigmoid scores; a learned correction
  bias shifts which experts are *chosen* but not their weights; experts come in n_group groups
  and only the topk_group best groups (each scored by its two best experts) may be chosen; the
  chosen weights are renormalised and multiplied by routed_scale.
Shared experts (DeepSeek-V3) run on every token and are added to the routed output.

In half precision the dtypes follow transformers 5.24 family by family (in float32 they are all
the same). DeepSeek-V3 keeps its router weight and bias in float32 (its
`_keep_in_fp32_modules_strict`) and computes its logits in float32 (`DeepseekV3TopkRouter`);
Mixtral and Qwen3-MoE compute theirs in the model's dtype, then a float32 softmax
(`MixtralTopKRouter`, `Qwen3MoeTopKRouter`). Qwen3-MoE rounds the top-k weights back to the
model's dtype (spec.router_weights_in_model_dtype), the other two keep them in float32. Each
expert's output is multiplied by its weight, the k products of a token are summed, and only the
sum is cast to the model's dtype, as transformers' default experts implementation
(`grouped_mm_experts_forward` in `integrations/moe.py`) does.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .ffn import GatedMLP, activation
from .precision import KeepFloat32


class Router(KeepFloat32):
    def __init__(self, spec):
        super().__init__()
        self.k, self.experts = spec.experts_per_token, spec.experts
        self.weight = nn.Parameter(torch.empty(spec.experts, spec.d))
        self.sigmoid = spec.router_bias
        self.weights_in_model_dtype = spec.router_weights_in_model_dtype
        if self.sigmoid:  # DeepSeek-V3: weight and bias stay float32 under .to(bfloat16)
            self.register_buffer("correction_bias", torch.zeros(spec.experts))
            self.keep_float32 = ("weight", "correction_bias")
        self.n_group, self.topk_group = spec.n_group, spec.topk_group
        self.norm_topk, self.routed_scale = spec.norm_topk, spec.routed_scale

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [N, d] -> (weights [N, k], expert indices [N, k])."""
        if not self.sigmoid:  # logits [N, E] in the model's dtype, probabilities in float32
            logits = F.linear(x, self.weight)
            weights, chosen = torch.softmax(logits.float(), dim=-1).topk(self.k, dim=-1)
        else:
            scores = F.linear(x.float(), self.weight.float()).sigmoid()  # [N, E], in float32
            choice = scores + self.correction_bias  # the bias steers the choice only
            groups = choice.view(-1, self.n_group, self.experts // self.n_group)
            group_score = groups.topk(2, dim=-1).values.sum(-1)  # [N, n_group]
            best = group_score.topk(self.topk_group, dim=-1).indices
            allowed = torch.zeros_like(group_score, dtype=torch.bool).scatter_(1, best, True)
            allowed = allowed.repeat_interleave(self.experts // self.n_group, dim=1)  # [N, E]
            chosen = choice.masked_fill(~allowed, float("-inf")).topk(self.k, dim=-1).indices
            weights = scores.gather(1, chosen)
        if self.norm_topk:
            weights = weights / (weights.sum(-1, keepdim=True) + (1e-20 if self.sigmoid else 0.0))
        weights = weights * self.routed_scale  # float32
        return (weights.to(x.dtype) if self.weights_in_model_dtype else weights), chosen


class Experts(nn.Module):
    """E gated feed-forwards as stacked tensors: gate, up [E, hidden, d]; down [E, d, hidden]."""

    def __init__(self, spec):
        super().__init__()
        E, d, h = spec.experts, spec.d, spec.expert_hidden
        self.gate = nn.Parameter(torch.empty(E, h, d))
        self.up = nn.Parameter(torch.empty(E, h, d))
        self.down = nn.Parameter(torch.empty(E, d, h))
        self.act = activation(spec.activation)

    def forward(self, x, weights, chosen):
        """x [N, d], weights and chosen [N, k] -> sum over the k experts of weight * expert(x)."""
        N, k = chosen.shape
        dtype = torch.promote_types(x.dtype, weights.dtype)  # float32 weights: float32 products
        out = x.new_zeros(N, k, x.shape[-1], dtype=dtype)  # one row per (token, slot)
        for e in chosen.unique().tolist():  # only the experts some token picked
            token, slot = (chosen == e).nonzero(as_tuple=True)
            h = x[token]
            h = self.act(h @ self.gate[e].T) * (h @ self.up[e].T)
            out[token, slot] = (h @ self.down[e].T) * weights[token, slot, None]
        return out.sum(1).to(x.dtype)  # the k products of each token summed, then cast


class MoE(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.router = Router(spec)
        self.experts = Experts(spec)
        self.shared = None
        if spec.shared_experts:  # one gated MLP as wide as all shared experts together
            self.shared = GatedMLP(
                spec.d, spec.expert_hidden * spec.shared_experts, spec.activation, spec.ffn_bias
            )

    def forward(self, x):  # [batch, T, d] -> [batch, T, d]
        flat = x.reshape(-1, x.shape[-1])
        weights, chosen = self.router(flat)
        y = self.experts(flat, weights, chosen).view_as(x)
        return y + self.shared(x) if self.shared is not None else y
