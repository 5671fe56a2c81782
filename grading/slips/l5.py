"""LM10-L5, port a Llama block: the slips of its parts (grading/slips/__init__.py)."""

import torch

from grading.slips.rotary import rotated, side_by_side, tables


def _expand_kv():
    return {
        "the stack of key-value heads tiled (0, 1, 0, 1, ...): query head h reads head "
        "h // n_rep, each head repeated in place?": lambda w, kv, n_rep: kv.repeat(1, n_rep, 1, 1),
    }


def _rope():
    def turned(x, positions, base, **slip):
        cos, sin = tables(positions, x.shape[-1], base)
        return rotated(x, torch.cat([cos, cos], -1), torch.cat([sin, sin], -1), **slip)

    return {
        "pairs side by side (2i, 2i + 1): Llama's weights pair coordinate i with i + head_dim/2?": (
            lambda w, x, positions, base: side_by_side(x, positions, base)
        ),
        "rotated the wrong way: the second half enters with a minus sign, (-x2, x1)?": (
            lambda w, x, positions, base: turned(x, positions, base, sign=-1.0)
        ),
        "cos and sin swapped: x is multiplied by cos, rotate_half(x) by sin?": (
            lambda w, x, positions, base: turned(x, positions, base, swapped=True)
        ),
    }


PARTS = {
    "l5_test_expand_kv": _expand_kv(),
    "l5_test_rope": _rope(),
}
