"""The key-value cache: keys and values of past tokens, kept so each new token costs one step.

Buffers are allocated once for the whole generation, so a decoding step only copies the new
token's key and value into place. A sliding-window layer keeps a ring of `window` slots: the
key of sequence position p lives in slot p % window, so memory stops growing once the window
is full. The ring holds the newest token too: `window` slots, one more than the `window - 1`
past tokens that transformers' `DynamicSlidingWindowLayer` keeps between steps (and that
`count.cache_bytes` counts). Both attend to the same `window` keys; `Cache.nbytes()` of a full
sliding layer is larger by one token's key and value.
"""

from __future__ import annotations

import torch

from .masks import causal_mask, own_tokens_mask


class LayerCache:
    """Two tensors per layer, [batch, heads, slots, width]: keys and values.

    Latent attention (MLA) stores its compressed latent as the "keys" and its rotary key as the
    "values", both with one head.
    """

    def __init__(
        self,
        batch: int,
        heads: int,
        k_width: int,
        v_width: int,
        max_tokens: int,
        window: int = 0,
        dtype=torch.float32,
        device=None,
    ):
        self.window = window
        slots = min(max_tokens, window) if window else max_tokens
        self.keys = torch.zeros(batch, heads, slots, k_width, dtype=dtype, device=device)
        self.values = torch.zeros(batch, heads, slots, v_width, dtype=dtype, device=device)
        # the sequence position each slot holds (-1: none yet); a ring's slots hold positions
        # out of order
        self.slot_positions = torch.full((slots,), -1, dtype=torch.long, device=device)

    def update(self, k: torch.Tensor, v: torch.Tensor, qpos: torch.Tensor, start: int):
        """Store k, v [batch, heads, T, width] for positions start..start+T-1.

        Returns (keys, values, mask): everything the new queries may attend to, and which of
        those keys each query may see, as `attend` takes it (`masks.py`).
        """
        T = k.shape[2]
        if not self.window:  # full attention: slot == position
            end = start + T
            if end > self.keys.shape[2]:
                raise ValueError(f"cache holds {self.keys.shape[2]} tokens, got position {end - 1}")
            self.keys[:, :, start:end] = k
            self.values[:, :, start:end] = v
            if start == 0:  # nothing cached before: the keys are the new tokens' own
                mask = own_tokens_mask(qpos)
            elif T == 1:  # one new token sees every key before it
                mask = "all"
            else:  # new tokens after cached ones
                mask = causal_mask(qpos, torch.arange(end, device=k.device))
            return self.keys[:, :, :end], self.values[:, :, :end], mask
        slots = self.keys.shape[2]
        if T == 1:  # decoding: every filled slot lies inside the window of the new token
            slot = start % slots
            self.keys[:, :, slot] = k[:, :, 0]
            self.values[:, :, slot] = v[:, :, 0]
            self.slot_positions[slot] = start
            filled = min(start + 1, slots)
            return self.keys[:, :, :filled], self.values[:, :, :filled], "all"
        # several tokens at once: attend to the previous window plus the new ones, then keep
        # the newest `slots` of them
        filled = min(start, slots)
        if filled:
            keys = torch.cat((self.keys[:, :, :filled], k), dim=2)
            values = torch.cat((self.values[:, :, :filled], v), dim=2)
            kpos = torch.cat((self.slot_positions[:filled], qpos))  # the position of each key
            mask = causal_mask(qpos, kpos, self.window)
        else:
            keys, values, mask = k, v, own_tokens_mask(qpos, self.window)
        keep = min(T, slots)
        index = qpos[-keep:] % slots
        self.keys.index_copy_(2, index, k[:, :, -keep:])
        self.values.index_copy_(2, index, v[:, :, -keep:])
        self.slot_positions.index_copy_(0, index, qpos[-keep:])
        return keys, values, mask


class KVCache:
    """One `LayerCache` per block, and the number of tokens seen so far."""

    def __init__(self, layers: list[LayerCache]):
        self.layers = layers
        self.length = 0

    def nbytes(self) -> int:
        """Bytes held by the filled part of every layer's buffers: a full sliding-window layer
        holds `window` tokens here, one more than `count.cache_bytes` counts (module docstring)."""
        total = 0
        for layer in self.layers:
            filled = min(self.length, layer.keys.shape[2])
            for t in (layer.keys, layer.values):
                total += t.shape[0] * t.shape[1] * filled * t.shape[3] * t.element_size()
        return total
