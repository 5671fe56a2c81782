"""Rotary position embedding in float64, right and with its slips, for L4's and L5's rules."""

import torch


def f64(t):
    return t.detach().double()


def halves(x):
    half = x.shape[-1] // 2
    return x[..., :half], x[..., half:]


def tables(positions, head_dim, base):
    """cos, sin of the angles [T, head_dim / 2]."""
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = positions.double()[:, None] * theta[None, :]  # [T, d/2]
    return angles.cos(), angles.sin()


def rotated(x, cos, sin, sign=1.0, swapped=False):
    """x rotated pair by pair in the rotate-half layout (cos, sin [..., d]); `swapped`: the
    slip that multiplies x by sin and rotate_half(x) by cos."""
    x1, x2 = halves(f64(x))
    cos, sin = (f64(sin), f64(cos)) if swapped else (f64(cos), f64(sin))
    return f64(x) * cos + sign * torch.cat([-x2, x1], dim=-1) * sin


def side_by_side(x, positions, base):
    """x rotated with pairs (2i, 2i + 1), the layout of Meta's own checkpoints."""
    cos, sin = tables(positions, x.shape[-1], base)
    even, odd = f64(x)[..., 0::2], f64(x)[..., 1::2]
    return torch.stack([even * cos - odd * sin, odd * cos + even * sin], dim=-1).flatten(-2)
