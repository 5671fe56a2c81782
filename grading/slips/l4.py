"""LM10-L4, rotary positions: the slips of its parts (grading/slips/__init__.py)."""

import math

import torch

from grading.slips.rotary import f64, halves, rotated, tables


def _angles():
    def exponent_i(w, head_dim, base):
        return base ** (-torch.arange(head_dim // 2, dtype=torch.float64) / head_dim)

    def reversed_order(w, head_dim, base):
        return f64(w).flip(-1)

    def interleaved(w, table, **where):
        first, _ = halves(f64(w))
        return first.repeat_interleave(2, dim=-1)

    def swapped(w, table, positions, head_dim, base):
        cos, sin = tables(positions, head_dim, base)
        other = sin if table == "cos" else cos
        return torch.cat([other, other], dim=-1)

    return {
        "pair i given the exponent i/d: it is 2i/d?": exponent_i,
        "the frequencies in reverse order: pair 0 turns fastest, at one radian per position?": (
            reversed_order
        ),
        "each angle repeated side by side (a, a, b, b, ...): the rotate-half layout repeats the "
        "d/2 angles as [angles, angles]?": interleaved,
        "cos and sin swapped: rope_cos_sin returns the cosines first?": swapped,
    }


def _rotate():
    return {
        "rotated the wrong way: rotate_half sends the halves (x1, x2) to (-x2, x1)?": (
            lambda w, x, cos, sin: rotated(x, cos, sin, sign=-1.0)
        ),
        "the sin term left out?": lambda w, x, cos, sin: f64(x) * f64(cos),
        "cos and sin swapped: x is multiplied by cos, rotate_half(x) by sin?": (
            lambda w, x, cos, sin: rotated(x, cos, sin, swapped=True)
        ),
    }


def _periods():
    return {
        "the periods without the factor 2 pi: a full turn is 2 pi radians?": (
            lambda w, **inputs: f64(w) / (2 * math.pi)
        ),
        "the inverse frequencies returned: a period is 2 pi / theta?": (
            lambda w, **inputs: 2 * math.pi / f64(w)
        ),
    }


PARTS = {
    "l4_test_angles": _angles(),
    "l4_test_rotate": _rotate(),
    "l4_test_periods": _periods(),
}
