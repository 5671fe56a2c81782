"""The decoder block: two stages, attention and the feed-forward layer, each adding its result
back to the residual stream, with norms before the stages, after them or both.

    pre-norm (2 norms):   x = x + attn(norm1(x));          x = x + ffn(norm2(x))
    reordered (2 norms):  x = x + post1(attn(x));          x = x + post2(ffn(x))          OLMo 2
    sandwich (4 norms):   x = x + post1(attn(norm1(x)));  x = x + post2(ffn(norm2(x)))   Gemma 2
    scaled stages:        x = x + s * attn(norm1(x));      x = x + s * ffn(norm2(x))      Granite

(OLMo 2's reordered norm normalises the stage's output before it joins the residual stream,
which is itself never normalised. The post-norm of the original Transformer and OPT-350m,
x = norm(x + attn(x)), normalises the sum; this block does not build it.)
"""

from __future__ import annotations

from torch import nn

from .attention import Attention
from .ffn import make_ffn
from .mla import LatentAttention
from .moe import MoE
from .norms import make_norm


class Block(nn.Module):
    def __init__(self, spec, layer: int):
        super().__init__()
        before = not spec.norms_after  # norms before each stage (all but OLMo 2)
        after = spec.norms_per_block == 4 or spec.norms_after  # norms after each stage
        self.attn_norm = make_norm(spec) if before else nn.Identity()
        if spec.kv_lora_rank:
            self.attn = LatentAttention(spec, layer)
        else:
            self.attn = Attention(spec, layer)
        self.ffn_norm = make_norm(spec) if before else nn.Identity()
        if spec.experts and layer >= spec.dense_layers:
            self.ffn = MoE(spec)
        else:
            self.ffn = make_ffn(spec, spec.hidden)
        self.attn_post_norm = make_norm(spec) if after else nn.Identity()
        self.ffn_post_norm = make_norm(spec) if after else nn.Identity()
        self.residual_scale = spec.residual_scale  # Granite: 0.22; 1.0 for the other families

    def stages(self):
        """(norm before, stage, norm after) of attention, then of the feed-forward layer; an
        absent norm is nn.Identity. `forward` is this list applied in order, each stage's
        output joining the residual stream through `join`; FastDecoder walks the same list."""
        return (
            (self.attn_norm, self.attn, self.attn_post_norm),
            (self.ffn_norm, self.ffn, self.ffn_post_norm),
        )

    def join(self, x, y):
        """The residual stream x after a stage's output y joins it: x + y, with y multiplied
        by residual_scale first where a family scales it (Granite). FastDecoder calls it too."""
        return x + (y * self.residual_scale if self.residual_scale != 1.0 else y)

    def forward(self, x, cos, sin, qpos, cache=None, start: int = 0):  # [batch, T, d] -> same
        (attn_norm, attn, attn_post), (ffn_norm, ffn, ffn_post) = self.stages()
        x = self.join(x, attn_post(attn(attn_norm(x), cos, sin, qpos, cache, start)))
        return self.join(x, ffn_post(ffn(ffn_norm(x))))
