"""Multi-head latent attention (MLA), DeepSeek-V3.

Keys and values are not projected per head from x. x is first squeezed into one small latent
vector (kv_lora_rank numbers per token), and each head's key and value are expanded from it.
The cache holds only the latent plus one shared rotary key (qk_rope_head_dim numbers). The
rotation is carried outside the latent ("decoupled RoPE", DeepSeek-V2, arXiv:2405.04434, §2.1.3)
so that the key's up-projection W_UK can be folded into the query projection at inference: a
rotation that depends on the position, placed between the two, would stop that fold. This module,
like transformers' modeling_deepseek_v3.py, expands the keys and values explicitly instead.

Query and key per head = [nope part (qk_nope_head_dim) | rotary part (qk_rope_head_dim)].
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import attend
from .cache import LayerCache
from .masks import own_tokens_mask
from .norms import RMSNorm
from .rope import apply_rotary

# transformers builds both latent norms with their default eps, not the config's rms_norm_eps
LATENT_NORM_EPS = 1e-6


class LatentAttention(nn.Module):
    def __init__(self, spec, layer: int):
        super().__init__()
        self.heads = spec.heads
        self.nope, self.rope = spec.qk_nope_head_dim, spec.qk_rope_head_dim
        self.v_dim = spec.v_head_dim
        self.rank = spec.kv_lora_rank
        qk_dim = self.nope + self.rope
        if spec.q_lora_rank:  # queries also pass through a low-rank bottleneck
            self.q_a_proj = nn.Linear(spec.d, spec.q_lora_rank, bias=spec.qkv_bias)
            self.q_a_norm = RMSNorm(spec.q_lora_rank, LATENT_NORM_EPS)
            self.q_b_proj = nn.Linear(spec.q_lora_rank, spec.heads * qk_dim, bias=False)
        else:
            self.q_proj = nn.Linear(spec.d, spec.heads * qk_dim, bias=False)
        # one projection gives [latent | shared rotary key]
        self.kv_a_proj = nn.Linear(spec.d, self.rank + self.rope, bias=spec.qkv_bias)
        self.kv_a_norm = RMSNorm(self.rank, LATENT_NORM_EPS)
        self.kv_b_proj = nn.Linear(self.rank, spec.heads * (self.nope + self.v_dim), bias=False)
        self.o_proj = nn.Linear(spec.heads * self.v_dim, spec.d, bias=spec.out_bias)
        self.rope_layout = spec.rope_layout
        self.attn_scale = spec.attn_scale
        self.q_lora = bool(spec.q_lora_rank)

    def new_cache(self, batch: int, max_tokens: int, dtype, device) -> LayerCache:
        return LayerCache(batch, 1, self.rank, self.rope, max_tokens, 0, dtype, device)

    def forward(self, x, cos, sin, qpos, cache: LayerCache | None = None, start: int = 0):
        B, T, _ = x.shape  # x [batch, T, d]
        q = self.q_b_proj(self.q_a_norm(self.q_a_proj(x))) if self.q_lora else self.q_proj(x)
        q = q.view(B, T, self.heads, self.nope + self.rope).transpose(1, 2)
        q_nope, q_rot = q.split([self.nope, self.rope], dim=-1)
        latent, k_rot = self.kv_a_proj(x).split([self.rank, self.rope], dim=-1)
        latent = self.kv_a_norm(latent).unsqueeze(1)  # [batch, 1, T, rank]
        k_rot = k_rot.unsqueeze(1)  # [batch, 1, T, rope]: one rotary key shared by all heads
        q_rot = apply_rotary(q_rot, cos, sin, self.rope_layout)
        k_rot = apply_rotary(k_rot, cos, sin, self.rope_layout)
        if cache is None:  # the keys are the new tokens' own
            mask = own_tokens_mask(qpos)
        else:  # cache the latent and the rotary key, nothing per head
            latent, k_rot, mask = cache.update(latent, k_rot, qpos, start)
        S = latent.shape[2]
        kv = self.kv_b_proj(latent.squeeze(1)).view(B, S, self.heads, self.nope + self.v_dim)
        k_nope, v = kv.transpose(1, 2).split([self.nope, self.v_dim], dim=-1)
        k = torch.cat((k_nope, k_rot.expand(B, self.heads, S, self.rope)), dim=-1)
        q = torch.cat((q_nope, q_rot), dim=-1)
        y = attend(q, k, v, mask, self.attn_scale)  # [batch, heads, T, v_dim]
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1))  # [batch, T, d]
