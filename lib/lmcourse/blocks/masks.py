"""Which keys each query may see: the `mask` that `attend` takes, chosen where the keys come from.

One of three values, the cheapest that is exact:

    "causal"   the keys are the queries' own tokens, in order (a prompt with nothing cached before
               it): query t sees keys 0..t. The attention kernel builds that mask itself, as
               nanoGPT asks it to with `is_causal=True`.
    "all"      every key: one new token against a cache that holds only earlier tokens, all of
               them inside its window.
    a tensor   [T, S] booleans, True where query t may see key s, built from the positions (what
               transformers passes as `attention_mask`): new tokens after cached ones, or a
               sliding window shorter than the queries.

The attention layer chooses it for keys of its own (`own_tokens_mask`); `LayerCache.update`
chooses it for the keys it returns.
"""

from __future__ import annotations

import torch


def causal_mask(qpos: torch.Tensor, kpos: torch.Tensor, window: int = 0) -> torch.Tensor:
    """[T, S] booleans, True where query at qpos may see key at kpos (inside the window if any)."""
    mask = kpos[None, :] <= qpos[:, None]
    if window:
        mask &= kpos[None, :] > qpos[:, None] - window
    return mask


def own_tokens_mask(qpos: torch.Tensor, window: int = 0):
    """The mask of T new tokens at qpos [T] against their own keys, nothing cached before them."""
    T = qpos.shape[0]
    if T == 1:
        return "all"
    if window and window < T:  # the window cuts inside the new tokens
        return causal_mask(qpos, qpos, window)
    return "causal"
