"""Probes: what a DecoderLM's layers receive during one forward pass, read through forward hooks.

    fractions = norm_input_mean_fractions(model, ids)   # T4, T8: the mean RMSNorm leaves in
    weights = attention_weights(gpt, ids, layer=0)      # T2: [batch, heads, T, T]
    focus = attention_by_offset(gpt, ids, offsets=8)    # T2: [heads, offsets]

Every probe reads its layers' inputs through `inputs_of`, the one place that registers hooks: it
hooks the modules for one forward pass and removes the hooks afterwards, whatever happens.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from .blocks.attention import Attention
from .blocks.model import DecoderLM


@contextlib.contextmanager
def inputs_of(modules: dict) -> Iterator[dict]:
    """Within the `with` block, the first positional input of each module (key -> module) is
    recorded on every call: yields key -> the tensor that module received last. The hooks are
    removed on leaving the block."""
    captured, handles = {}, []

    def keep(key):
        def hook(module: nn.Module, args: tuple) -> None:
            captured[key] = args[0].detach()

        return hook

    try:
        for key, module in modules.items():
            handles.append(module.register_forward_pre_hook(keep(key)))
        yield captured
    finally:
        for handle in handles:
            handle.remove()


# ---- LM10-T4, T8: what RMSNorm leaves uncentred --------------------------------------------


def norm_input_mean_fractions(model, input_ids) -> dict:
    """|mean| / RMS of each token's vector entering every residual-stream norm of a DecoderLM.

    One forward pass over `input_ids` [batch, T] with a pre-hook on each block's two norms and
    on the final norm. Returns {(block, 'attention' | 'feed-forward' | 'final'): tensor
    [batch * T]}, in the order the model applies the norms (the final norm has block
    `spec.layers`). Both statistics are taken over the d features of one token: 0.02 means the
    vector's mean is 2% of its root mean square. LayerNorm removes that mean; RMSNorm keeps it.
    """
    norms = {}
    for i, block in enumerate(model.blocks):
        norms[(i, "attention")] = block.attn_norm
        norms[(i, "feed-forward")] = block.ffn_norm
    norms[(len(model.blocks), "final")] = model.norm
    fractions = {}
    with torch.inference_mode():
        with inputs_of(norms) as seen:
            model(input_ids)
        for key in norms:
            x = seen[key].float().reshape(-1, seen[key].shape[-1])  # [tokens, d]
            fractions[key] = x.mean(-1).abs() / x.pow(2).mean(-1).sqrt()  # [tokens]
    return fractions


# ---- LM10-T2: where a GPT-2 layer's heads look ---------------------------------------------


def _check_batch(model: DecoderLM, input_ids, position_ids, layer: int) -> torch.Tensor:
    """Validate attention_weights' arguments; return the position ids [batch, T]."""
    plain = (
        isinstance(model, DecoderLM)
        and model.pos_embed is not None
        and all(
            isinstance(b.attn, Attention)
            and b.attn.group == 1
            and not (
                b.attn.rotates
                or b.attn.qk_norm_kind
                or b.attn.clip
                or b.attn.softcap
                or b.attn.window
            )
            for b in model.blocks
        )
    )
    if not plain:
        raise ValueError(
            "model must be a GPT-2-style DecoderLM (learned position table, plain "
            "multi-head attention), such as tinygpt.load(); got "
            f"{type(model).__name__}"
        )
    if (
        not isinstance(input_ids, torch.Tensor)
        or input_ids.dim() != 2
        or input_ids.dtype != torch.long
        or input_ids.shape[1] < 1
    ):
        raise ValueError(
            "input_ids must be a LongTensor [batch, tokens], got "
            f"{getattr(input_ids, 'dtype', type(input_ids).__name__)} of shape "
            f"{tuple(getattr(input_ids, 'shape', ()))}"
        )
    layers = len(model.blocks)
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < layers:
        raise ValueError(f"layer must be an int in [0, {layers}), got {layer!r}")
    if position_ids is None:
        return torch.arange(input_ids.shape[1]).expand_as(input_ids)
    if position_ids.shape != input_ids.shape:
        raise ValueError(
            f"position_ids must have the shape of input_ids "
            f"{tuple(input_ids.shape)}, got {tuple(position_ids.shape)}"
        )
    return position_ids


def attention_weights(
    model: DecoderLM,
    input_ids: torch.Tensor,
    position_ids: torch.Tensor | None = None,
    layer: int = 0,
) -> torch.Tensor:
    """How much each query attends to each key in one layer: the softmax of the scaled scores,
    FloatTensor [batch, heads, T, T], each row summing to 1, zero above the diagonal.

    Computed from the layer's own projections on the hidden states the model's forward pass
    feeds that layer (a GPT-2 layer: no rotation, one key-value head per query head).
    """
    position_ids = _check_batch(model, input_ids, position_ids, layer)
    return _attention_weights(model, input_ids, position_ids, layer)


@torch.no_grad()
def _attention_weights(
    model: DecoderLM, input_ids: torch.Tensor, position_ids: torch.Tensor, layer: int
) -> torch.Tensor:
    """attention_weights on arguments _check_batch has accepted."""
    block = model.blocks[layer]
    with inputs_of({"block": block}) as seen:
        model.hidden_states(input_ids, position_ids)
    attn = block.attn
    h = block.attn_norm(seen["block"])  # [batch, T, d]
    B, T, _ = h.shape
    q = attn.q_proj(h).view(B, T, attn.heads, attn.head_dim).transpose(1, 2)
    k = attn.k_proj(h).view(B, T, attn.heads, attn.head_dim).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1)) * attn.attn_scale  # [batch, heads, T, T]
    later = torch.ones(T, T, dtype=torch.bool).triu(1)  # keys after the query
    return scores.masked_fill(later, float("-inf")).softmax(-1)


def attention_by_offset(
    model: DecoderLM,
    input_ids: torch.Tensor,
    position_ids: torch.Tensor | None = None,
    layer: int = 0,
    offsets: int = 8,
) -> torch.Tensor:
    """Where a layer's heads look: the mean attention weight on the key `d` characters back,
    for d = 0 (the character itself) .. offsets-1, FloatTensor [heads, offsets].

    Averaged over every batch row and every query with at least `offsets` keys behind it
    (window index >= offsets - 1), so each offset is averaged over the same queries.
    """
    position_ids = _check_batch(model, input_ids, position_ids, layer)
    T = input_ids.shape[1]
    if isinstance(offsets, bool) or not isinstance(offsets, int) or not 1 <= offsets <= T:
        raise ValueError(
            f"offsets must be an int in [1, {T}] (the tokens per row), got {offsets!r}"
        )
    probs = _attention_weights(model, input_ids, position_ids, layer)  # [batch, heads, T, T]
    first = offsets - 1  # the first query that has `offsets` keys to look at
    return torch.stack(
        [
            probs.diagonal(-d, dim1=-2, dim2=-1)[..., first - d :].mean((0, 2))
            for d in range(offsets)
        ],
        dim=-1,
    )
