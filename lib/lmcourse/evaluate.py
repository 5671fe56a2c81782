"""The loss: how surprised a model is, on average, by each next token of a text.

    loss(model, input_ids)                  # a DecoderLM or a transformers causal LM
    loss(model, input_ids, position_ids)    # the same tokens, read at other positions
    loss_of_logits(logits, input_ids)       # from logits a forward pass already returned

The loss is the mean cross-entropy, in nats, of predicting token t+1 from tokens 0..t, over
every t of every sequence: exactly what transformers computes when given `labels=input_ids`.
A model that gives all V tokens equal odds scores ln V (10.80 for SmolLM2's 49,152).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


@torch.inference_mode()
def loss(model, input_ids: torch.Tensor, position_ids: torch.Tensor | None = None) -> float:
    """Mean next-token cross-entropy of `model` on input_ids [batch, T] (T >= 2).

    `position_ids` [batch, T] replaces the default positions 0..T-1; the tokens still attend
    causally in their order.
    """
    check_input_ids(input_ids)
    if position_ids is not None and position_ids.shape != input_ids.shape:
        raise ValueError(
            f"position_ids must have the shape of input_ids {tuple(input_ids.shape)}, "
            f"got {tuple(position_ids.shape)}"
        )
    out = model(input_ids, position_ids=position_ids)
    logits = out.logits if hasattr(out, "logits") else out  # transformers wraps its logits
    return loss_of_logits(logits, input_ids)


def check_input_ids(input_ids: torch.Tensor) -> None:
    """Raise ValueError unless input_ids is a LongTensor [batch, T] with T >= 2."""
    if (
        not isinstance(input_ids, torch.Tensor)
        or input_ids.dim() != 2
        or input_ids.shape[1] < 2
        or input_ids.dtype != torch.long
    ):
        what = (
            f"{input_ids.dtype} of shape {tuple(input_ids.shape)}"
            if isinstance(input_ids, torch.Tensor)
            else type(input_ids).__name__
        )
        raise ValueError(
            f"input_ids must be a LongTensor [batch, tokens] with at least 2 tokens, got {what}"
        )


def loss_of_logits(logits: torch.Tensor, input_ids: torch.Tensor) -> float:
    """The same loss from logits [batch, T, vocab] already computed on input_ids [batch, T]."""
    if logits.shape[:2] != input_ids.shape:
        raise ValueError(
            f"logits must be [batch, tokens, vocab] for input_ids of shape "
            f"{tuple(input_ids.shape)}, got {tuple(logits.shape)}"
        )
    predicted = logits[:, :-1].flatten(0, 1).float()  # [batch * (T-1), vocab]
    targets = input_ids[:, 1:].flatten()  # [batch * (T-1)]
    return F.cross_entropy(predicted, targets).item()
