"""Tensors that stay in float32 when the rest of the model is cast to half precision.

`nn.Module.to(torch.bfloat16)` casts every floating parameter and buffer. Two kinds of tensor
should not follow: the rotary `inv_freq`, which transformers computes in float32 and, loading a
checkpoint with `dtype=torch.bfloat16`, leaves in float32 (a non-persistent buffer outside the
state dict); and DeepSeek-V3's router weight and correction bias, which transformers keeps in
float32 (`_keep_in_fp32_modules_strict` of `DeepseekV3PreTrainedModel`).
"""

from __future__ import annotations

import torch
from torch import nn


class KeepFloat32(nn.Module):
    """A module whose tensors named in `keep_float32` keep their float32 numbers through every
    cast (`.to(dtype)`, `.half()`, ...); moves to another device still apply to them."""

    keep_float32: tuple[str, ...] = ()

    def _apply(self, fn, recurse=True):  # every .to(), .half(), .cuda() ... passes through here
        kept = {}  # name -> the float32 tensor before the cast (.data: a parameter is updated
        for name in self.keep_float32:  # in place, its old numbers stay in this alias)
            tensor = getattr(self, name, None)
            if tensor is not None and tensor.dtype == torch.float32:
                kept[name] = tensor.data
        super()._apply(fn, recurse)
        for name, before in kept.items():
            after = getattr(self, name)
            if after.dtype == torch.float32:
                continue
            # the float32 numbers on the new device (from meta, by to_empty: nothing to keep)
            restored = after.float() if before.is_meta else before.to(after.device)
            if isinstance(after, nn.Parameter):
                after.data = restored
            else:
                setattr(self, name, restored)
        return self
