"""Causal self-attention: one class for multi-head, grouped-query and multi-query attention.

The number of key-value heads decides which: `kv_heads == heads` is MHA, `kv_heads == 1` is
MQA, anything between is GQA. With G = heads // kv_heads, query head i reads key-value head
i // G ("interleave", what every checkpoint is trained with). Tiling the key-value heads
instead (query head i reads i % kv_heads) is the silent porting bug studied in the lessons
(`lmcourse.ablations.TiledAttention`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .cache import LayerCache
from .masks import own_tokens_mask
from .norms import RMSNorm
from .rope import apply_rotary


def group_kv(x: torch.Tensor, group: int, grouping: str = "interleave") -> torch.Tensor:
    """[batch, kv_heads, T, width] -> [batch, kv_heads * group, T, width].

    'interleave': heads (0,0,0,1,1,1,...), so query head i uses kv head i // group;
    'tile':       heads (0,1,...,0,1,...), so query head i uses kv head i % kv_heads.
    """
    if group == 1:
        return x
    B, kv_heads, T, width = x.shape
    if grouping == "interleave":  # [B, kv_heads, group, T, width]: query head i -> i // group
        x = x[:, :, None].expand(B, kv_heads, group, T, width)
    elif grouping == "tile":  # [B, group, kv_heads, T, width]: query head i -> i % kv_heads
        x = x[:, None].expand(B, group, kv_heads, T, width)
    else:
        raise ValueError(f"grouping must be 'interleave' or 'tile', got {grouping!r}")
    return x.reshape(B, kv_heads * group, T, width)


def attend(q, k, v, mask, scale: float, softcap: float = 0.0):
    """softmax(q k^T * scale) v over the keys each query may see, as `mask` says (`masks.py`):
    "causal", "all", or a boolean tensor [T, S], True where query t may see key s.

    q [batch, heads, T, dq], k [batch, kv_heads, S, dq], v [batch, kv_heads, S, dv]
    -> [batch, heads, T, dv]. kv_heads divides heads; with G = heads // kv_heads, query head i
    reads key-value head i // G (the "interleave" grouping).
    """
    T, group = q.shape[2], q.shape[1] // k.shape[1]
    causal = isinstance(mask, str) and mask == "causal"
    if isinstance(mask, str):  # "causal" or "all": no mask tensor
        mask = None
    if not softcap:  # the fused kernel computes exactly this, reading shared heads in place
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal, scale=scale, enable_gqa=group > 1
        )
    k, v = group_kv(k, group), group_kv(v, group)  # [batch, heads, S, width]: copies
    scores = (q @ k.transpose(-2, -1)) * scale  # [batch, heads, T, S]
    scores = softcap * torch.tanh(scores / softcap)  # Gemma 2: bounded to (-softcap, softcap)
    if causal:
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return probs @ v


class Attention(nn.Module):
    def __init__(self, spec, layer: int):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = spec.heads, spec.kv_heads, spec.head_dim
        self.group = spec.heads // spec.kv_heads
        self.q_proj = nn.Linear(spec.d, spec.heads * spec.head_dim, bias=spec.qkv_bias)
        self.k_proj = nn.Linear(spec.d, spec.kv_heads * spec.head_dim, bias=spec.qkv_bias)
        self.v_proj = nn.Linear(spec.d, spec.kv_heads * spec.head_dim, bias=spec.qkv_bias)
        self.o_proj = nn.Linear(spec.heads * spec.head_dim, spec.d, bias=spec.out_bias)
        if spec.qk_norm:  # RMSNorm over each query and key head (Qwen3), or over all the
            # heads at once, straight after the projection (OLMo 2); before rotation either way
            q_width, k_width = spec.head_dim, spec.head_dim
            if spec.qk_norm_all_heads:
                q_width, k_width = spec.heads * spec.head_dim, spec.kv_heads * spec.head_dim
            self.q_norm = RMSNorm(q_width, spec.norm_eps, spec.norm_offset)
            self.k_norm = RMSNorm(k_width, spec.norm_eps, spec.norm_offset)
        self.qk_norm_kind = (
            "all_heads" if spec.qk_norm_all_heads else "per_head" if spec.qk_norm else ""
        )
        self.clip = spec.qkv_clip  # OLMo: clamp queries, keys and values to [-clip, clip]
        self.rotates = spec.positions == 0  # rotary positions (no learned table)
        self.rope_layout = spec.rope_layout
        self.attn_scale = spec.attn_scale
        self.softcap = spec.attn_softcap
        sliding = spec.layer_types[layer] == "sliding_attention"
        self.window = spec.sliding_window if sliding else 0

    def new_cache(self, batch: int, max_tokens: int, dtype, device) -> LayerCache:
        return LayerCache(
            batch,
            self.kv_heads,
            self.head_dim,
            self.head_dim,
            max_tokens,
            self.window,
            dtype,
            device,
        )

    def forward(self, x, cos, sin, qpos, cache: LayerCache | None = None, start: int = 0):
        B, T, _ = x.shape  # x [batch, T, d]
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)  # [batch, T, heads * head_dim]
        if self.qk_norm_kind == "all_heads":
            q, k = self.q_norm(q), self.k_norm(k)
        q = q.view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.clip:
            q, k, v = (t.clamp(-self.clip, self.clip) for t in (q, k, v))
        if self.qk_norm_kind == "per_head":
            q, k = self.q_norm(q), self.k_norm(k)
        if self.rotates:
            q = apply_rotary(q, cos, sin, self.rope_layout)
            k = apply_rotary(k, cos, sin, self.rope_layout)
        if cache is None:  # the keys are the new tokens' own
            mask = own_tokens_mask(qpos, self.window)
        else:
            k, v, mask = cache.update(k, v, qpos, start)  # [batch, kv_heads, S, head_dim]
        y = self.attend_heads(q, k, v, mask)  # [batch, heads, T, head_dim]
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1))  # [batch, T, d]

    def attend_heads(self, q, k, v, mask):
        """Each query head against its key-value head: head i reads head i // group. A module
        that pairs them otherwise overrides this (`lmcourse.ablations.TiledAttention`)."""
        return attend(q, k, v, mask, self.attn_scale, self.softcap)
