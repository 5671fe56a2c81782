"""Matplotlib figures used by the lessons and the widgets: every figure of the course is drawn
here, and nothing else. Each plot_* function returns the figure it draws; what a figure shows is
computed where its concern lives (`count.parameter_shares`, `zoo.block_layout`,
`configs.declared_context`), and the rotary figures turn their vectors with the model's own
`blocks.rope.apply_rotary` (`rope_rotate_pairs`).

Units: memory sizes of the T5 figures are in GiB (2**30 bytes), as GPU memory is built and
reported (a card sold as "80 GB" holds about 80 GiB: an A100 80GB reports 80 GiB, an H100 80GB
79.65); figures that say GB mean 10**9 bytes."""

from __future__ import annotations

import matplotlib.pyplot as plt

from . import count
from .configs import declared_context
from .families import as_spec
from .spec import divisors
from .zoo import block_layout

GIB = 2**30  # bytes in a GiB: the unit GPU memory is built and reported in

# Colours of the series: Okabe and Ito's eight ("Color Universal Design", 2008), chosen to stay
# apart under protanopia, deuteranopia and tritanopia (tools/colour_vision.py checks every
# colour below). Series take them in this order; figures with many lines also vary the line
# style or marker (SERIES_STYLES), so no two series differ by colour alone.
BLUE, ORANGE, GREEN, VERMILLION = "#0072B2", "#E69F00", "#009E73", "#D55E00"
PURPLE, SKY_BLUE, BLACK, YELLOW = "#CC79A7", "#56B4E9", "#000000", "#F0E442"
SERIES = (BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY_BLUE, BLACK, YELLOW)
SERIES_STYLES = ("-", "--", "-.", ":")  # line styles, cycled beside the colours
SERIES_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
# Greys of reference lines and axes, dark or light enough to stay apart from every series colour.
GREY, LIGHT_GREY = "0.4", "0.8"
# Colours of the diagrams: what changed or runs, what stays as it was, what sits idle.
HIGHLIGHT, PLAIN, IDLE = "#f6c28b", "#dbe8f6", "#eeeeee"
COLOURS = {  # every colour this module draws with, by name (tools/colour_vision.py reads it)
    "blue": BLUE,
    "orange": ORANGE,
    "bluish green": GREEN,
    "vermillion": VERMILLION,
    "reddish purple": PURPLE,
    "sky blue": SKY_BLUE,
    "black": BLACK,
    "yellow": YELLOW,
    "grey": GREY,
    "light grey": LIGHT_GREY,
    "highlight": HIGHLIGHT,
    "plain": PLAIN,
    "idle": IDLE,
}


def series_colour(i: int) -> str:
    """The colour of the i-th series of a figure (SERIES, repeating after eight)."""
    return SERIES[i % len(SERIES)]


def _text_on(colour: str) -> str:
    """Black or white, whichever reads better on a patch of `colour` (WCAG relative luminance)."""
    from matplotlib.colors import to_rgb

    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(colour)]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return BLACK if luminance > 0.18 else "white"


# ---- LM10-T1: where the parameters sit ---------------------------------------------------


def plot_parameter_shares(models: dict):
    """Horizontal stacked bars: per model (name -> config), the share of each component."""
    if not isinstance(models, dict) or not models:
        raise ValueError("models must be a non-empty dict of name -> config")
    fig, ax = plt.subplots(figsize=(8, 0.7 * len(models) + 1.6), dpi=80)
    names = list(models)[::-1]  # first model on top
    shares = [count.parameter_shares(models[name]) for name in names]
    left = [0.0] * len(names)
    for i, label in enumerate(count.SHARE_GROUPS):
        widths = [s[label] for s in shares]
        colour = series_colour(i)
        bars = ax.barh(names, widths, left=left, label=label, color=colour, edgecolor="white")
        for bar, w in zip(bars, widths, strict=True):
            if w >= 0.05:
                ax.text(
                    bar.get_x() + w / 2,
                    bar.get_y() + bar.get_height() / 2,
                    f"{w:.0%}",
                    ha="center",
                    va="center",
                    fontsize=9,
                    color=_text_on(colour),
                )
        left = [a + w for a, w in zip(left, widths, strict=True)]
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of all parameters")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3, fontsize=8, frameon=False)
    ax.set_title("Where the parameters sit")
    fig.tight_layout()
    return fig


# ---- LM10-T2: rotary position embeddings ------------------------------------------------------


def _changes(old, new) -> dict[str, list[int]]:
    """part -> numbers (1..4, as in lesson T1's table) of the changes that touch it in `new`."""
    a, b = as_spec(old), as_spec(new)
    changed = {}

    def mark(number, *parts):
        for part in parts:
            changed.setdefault(part, []).append(number)

    if bool(a.positions) != bool(b.positions):
        mark(1, "attention")
    if a.heads // a.kv_heads != b.heads // b.kv_heads:
        mark(2, "attention")
    if a.norm != b.norm:
        mark(3, "norm1", "norm2", "final_norm")
    if a.ffn != b.ffn and not b.experts:
        mark(3, "ffn")
    if bool(a.experts) != bool(b.experts):
        mark(4, "ffn")
    return changed


def plot_block_diagrams(old, new, old_name: str = "GPT-2", new_name: str = "Llama-style"):
    """Two models side by side, input at the bottom; the parts of `new` that differ from `old`
    are coloured and numbered as in lesson T1's table of the four changes."""
    from matplotlib.patches import FancyBboxPatch

    changed = _changes(old, new)
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.6), dpi=80)
    for ax, config, name in ((axes[0], old, old_name), (axes[1], new, new_name)):
        parts = block_layout(config)
        layers = as_spec(config).layers
        y = 0.0
        ys = {}
        for part, label in parts:
            marks = changed.get(part) if config is new else None
            colour = HIGHLIGHT if marks else PLAIN
            ax.add_patch(
                FancyBboxPatch(
                    (0.05, y),
                    0.9,
                    0.7,
                    boxstyle="round,pad=0.02",
                    facecolor=colour,
                    edgecolor=GREY,
                )
            )
            ax.text(0.5, y + 0.35, label, ha="center", va="center", fontsize=8.5)
            if marks:
                ax.text(
                    1.04,
                    y + 0.35,
                    " ".join(f"({m})" for m in marks),
                    ha="left",
                    va="center",
                    fontsize=10,
                    color=VERMILLION,
                    weight="bold",
                )
            ys[part] = y
            y += 1.0
        top = ys["ffn"] + 0.85
        bottom = ys["norm1"] - 0.15
        ax.add_patch(
            FancyBboxPatch(
                (0.0, bottom),
                1.0,
                top - bottom,
                boxstyle="round,pad=0.02",
                fill=False,
                edgecolor=BLACK,
                linestyle="--",
            )
        )
        ax.text(-0.02, (top + bottom) / 2, f"x {layers}", ha="right", va="center", fontsize=9)
        ax.set_xlim(-0.25, 1.3)
        ax.set_ylim(-0.2, y)
        ax.set_title(name, fontsize=11)
        ax.axis("off")
    fig.suptitle(
        "input at the bottom; in the dashed block each sub-layer reads a normalised copy "
        "of the residual stream and adds its output back",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def plot_rope_pair(theta: float = 0.6, positions: int = 6, m: int = 4, n: int = 1, shift: int = 3):
    """Two panels on one pair of numbers: (a) a vector turned by position * theta for positions
    0..positions-1; (b) a query at m and a key at n, then both moved by `shift`: the angle
    between them, (m - n) * theta, stays."""
    import numpy as np

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 4.2), dpi=80)
    base = np.array([1.0, 0.35])

    def turned(v, angle):
        c, s = np.cos(angle), np.sin(angle)
        return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])

    colours = plt.cm.viridis(np.linspace(0, 0.9, positions))
    for p in range(positions):
        x, y = turned(base, p * theta)
        a.annotate("", (x, y), (0, 0), arrowprops=dict(arrowstyle="->", color=colours[p], lw=2))
        a.text(1.12 * x, 1.12 * y, f"m={p}", ha="center", va="center", fontsize=9)
    a.set_title(f"(a) one pair turned by m·θ, θ = {theta} rad")

    q, k = np.array([0.9, 0.5]), np.array([0.8, -0.3])
    for offset, style in ((0, "-"), (shift, "--")):
        for v, pos, colour, name in ((q, m, BLUE, "q"), (k, n, ORANGE, "k")):
            x, y = turned(v, (pos + offset) * theta)
            a_props = dict(arrowstyle="->", color=colour, lw=2, linestyle=style)
            b.annotate("", (x, y), (0, 0), arrowprops=a_props)
            b.text(
                1.15 * x,
                1.15 * y,
                f"{name}@{pos + offset}",
                ha="center",
                va="center",
                fontsize=9,
                color=colour,
            )
    b.set_title(f"(b) q@{m}, k@{n} (solid) and both +{shift} (dashed)")
    for ax in (a, b):
        ax.set_xlim(-1.4, 1.4)
        ax.set_ylim(-1.4, 1.4)
        ax.set_aspect("equal")
        ax.axhline(0, color=LIGHT_GREY, lw=0.8)
        ax.axvline(0, color=LIGHT_GREY, lw=0.8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig


def plot_rope_wavelengths(wavelengths: dict, marks: dict | None = None, title: str = ""):
    """Positions per full turn of each pair (log scale), one line per entry of `wavelengths`
    (label -> 1-D tensor or array); `marks` (label -> length) draws horizontal reference lines."""
    import numpy as np

    fig, ax = plt.subplots(figsize=(7.5, 4), dpi=80)
    for i, (label, values) in enumerate(wavelengths.items()):
        values = np.asarray(values, dtype=float)
        style = dict(marker=SERIES_MARKERS[i % 8], ls=SERIES_STYLES[i % 4], color=series_colour(i))
        ax.plot(np.arange(len(values)), values, ms=3, label=label, **style)
    for i, (label, length) in enumerate((marks or {}).items()):
        ax.axhline(length, color=series_colour(i + 3), lw=1, ls="-.", label=label)
    ax.set_yscale("log")
    ax.set_xlabel("pair index i")
    ax.set_ylabel("wavelength 2π/θᵢ (positions per turn)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def rope_rotate_pairs(x, inv_freq, positions):
    """A head vector x [head_dim] ('half' layout) turned at each of `positions` by the model's own
    `rotary_cos_sin` and `apply_rotary`, returned as its pairs: [len(positions), head_dim/2, 2],
    for the figures below, which show one pair at a time."""
    import torch

    from .blocks.rope import apply_rotary, rotary_cos_sin

    if x.dim() != 1 or x.shape[0] != 2 * inv_freq.shape[-1]:
        raise ValueError(
            f"x must be a vector of {2 * inv_freq.shape[-1]} numbers (two per pair), "
            f"got shape {tuple(x.shape)}"
        )
    position_ids = torch.as_tensor(positions)[None]  # [1, T]
    cos, sin = rotary_cos_sin(position_ids, inv_freq)  # [1, 1, T, head_dim]
    x = x.expand(1, 1, position_ids.shape[1], -1)  # [batch, heads, T, head_dim]
    out = apply_rotary(x, cos, sin)[0, 0]  # [T, head_dim]
    return torch.stack(out.chunk(2, dim=-1), dim=-1)  # pair i is (x[i], x[i + head_dim/2])


def plot_rope_scores(q, k, inv_freq, query_position: int, offsets, shifts=(0,), pairs=()):
    """For a fixed query and key, against the offset m - n: the score q̃·k̃ (left) and the cosine
    between a few chosen `pairs` (right), once per shift of both positions (dashed: shifted).

    Curves for different shifts lie on top of each other: the relative-position property.
    """
    import numpy as np
    import torch

    offsets = np.asarray(offsets)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8), sharex=True, dpi=80)
    for j, shift in enumerate(shifts):
        m = query_position + shift
        qr = rope_rotate_pairs(q, inv_freq, [m] * len(offsets))  # [T, pairs, 2]
        kr = rope_rotate_pairs(k, inv_freq, m - offsets)
        cos = torch.nn.functional.cosine_similarity(qr, kr, dim=-1)  # [T, pairs]
        style = dict(ls="-" if j == 0 else "--", lw=2.5 if j == 0 else 1.2)
        a.plot(
            offsets, (qr * kr).sum((-1, -2)), color=series_colour(j), label=f"query at {m}", **style
        )
        for number, i in enumerate(pairs):
            b.plot(
                offsets,
                cos[:, i],
                color=series_colour(number),
                marker=SERIES_MARKERS[number % 8],
                markevery=max(1, len(offsets) // 8),
                ms=4,
                label=f"pair {i}" if j == 0 else None,
                **style,
            )
    a.set_title("score q̃·k̃ (all pairs)")
    a.set_ylabel("score")
    b.set_title("one pair's share: cosine in [-1, 1]")
    b.set_ylabel("cosine")
    for ax in (a, b):
        ax.set_xlabel("offset m − n (query position − key position)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_rope_score_at(
    q,
    k,
    inv_freq,
    query_position: int,
    window: int,
    key_position: int,
    shift: int = 0,
    pair: int = 0,
):
    """One setting of `widgets.rope_score_widget`: the score q̃·k̃ for every key position in the
    `window` before the query at `query_position` (left, the key at `key_position` marked), both
    moved by `shift`; and one `pair` of the chosen query and key as arrows with their cosine
    (right)."""
    import numpy as np
    import torch

    m = query_position + shift
    keys = np.arange(query_position - window, query_position + 1) + shift  # candidate n
    qr = rope_rotate_pairs(q, inv_freq, [m] * len(keys))  # [T, pairs, 2]
    kr = rope_rotate_pairs(k, inv_freq, keys)
    scores = (qr * kr).sum((-1, -2))
    j = key_position - (query_position - window)  # index of the chosen key
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8), dpi=80)
    a.plot(keys, scores, color=GREY)
    a.plot(keys[j], scores[j], "o", color=VERMILLION, ms=9)
    a.set_xlabel("key position n")
    a.set_ylabel("score q̃·k̃")
    a.set_title(
        f"query at m = {m}, key at n = {keys[j]}: m − n = {m - keys[j]}, "
        f"score {scores[j].item():.4f}",
        fontsize=10,
    )
    a.grid(alpha=0.3)
    cos = torch.nn.functional.cosine_similarity(qr[j, pair], kr[j, pair], dim=0).item()
    arrows = ((qr[j, pair], BLUE, "q̃"), (kr[j, pair], ORANGE, "k̃"))
    for vec, colour, label in arrows:
        v = (vec / vec.norm()).numpy()
        b.annotate("", v, (0, 0), arrowprops=dict(arrowstyle="->", color=colour, lw=2))
        b.text(*(1.15 * v), label, color=colour, ha="center", va="center")
    wavelength = 2 * np.pi / inv_freq[pair].item()
    b.set_title(
        f"pair {pair} (one turn per {wavelength:,.1f} positions): cosine {cos:.3f}", fontsize=10
    )
    b.set_xlim(-1.3, 1.3)
    b.set_ylim(-1.3, 1.3)
    b.set_aspect("equal")
    b.set_xticks([])
    b.set_yticks([])
    fig.tight_layout()
    return fig


def plot_attention_by_offset(curves: dict, title: str = ""):
    """Mean attention weight against how many characters back the key is, one line per entry of
    `curves` (label -> [heads, offsets] from `probes.attention_by_offset`): the mean over heads,
    with the band from the least to the most focused head."""
    import numpy as np

    fig, ax = plt.subplots(figsize=(7.5, 3.8), dpi=80)
    for i, (label, weights) in enumerate(curves.items()):
        weights = np.asarray(weights, dtype=float)  # [heads, offsets]
        offsets = np.arange(weights.shape[1])
        ax.plot(
            offsets,
            weights.mean(0),
            marker=SERIES_MARKERS[i % 8],
            ls=SERIES_STYLES[i % 4],
            color=series_colour(i),
            ms=4,
            label=f"{label} (mean of {weights.shape[0]} heads)",
        )
        ax.fill_between(offsets, weights.min(0), weights.max(0), color=series_colour(i), alpha=0.2)
    ax.set_xlabel("offset: how many characters back the key is (0 = the character itself)")
    ax.set_ylabel("mean attention weight")
    ax.set_title(title)
    ax.set_ylim(0, None)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# ---- LM10-T3: grouped-query attention ---------------------------------------------------------


def plot_kv_groups(heads: int = 8, kv_heads=(8, 2, 1)):
    """Which key-value head each query head reads (query head i reads kv head i // group), one
    row per setting of the dial: MHA (kv_heads == heads), GQA, MQA (kv_heads == 1)."""
    fig, axes = plt.subplots(
        1, len(kv_heads), figsize=(3.4 * len(kv_heads), 2.8), dpi=80, squeeze=False
    )  # one row of axes even for a single setting
    for ax, kv in zip(axes[0], kv_heads, strict=True):
        if heads % kv:
            raise ValueError(f"kv_heads={kv} must divide heads={heads}")
        group = heads // kv
        xs_q = [i + 0.5 for i in range(heads)]
        xs_kv = [(j + 0.5) * group for j in range(kv)]
        for i, x in enumerate(xs_q):
            ax.plot([x, xs_kv[i // group]], [1, 0], color=series_colour(i // group), lw=1.2)
        ax.scatter(xs_q, [1] * heads, s=60, color=BLUE, zorder=3)
        ax.scatter(xs_kv, [0] * kv, s=90, marker="s", color=VERMILLION, zorder=3)
        name = "MHA" if kv == heads else "MQA" if kv == 1 else "GQA"
        ax.set_title(f"{name}: {kv} kv head{'s' * (kv > 1)}, group {group}", fontsize=10)
        ax.set_yticks([0, 1], ["keys/values", "queries"])
        ax.set_xticks([])
        ax.set_ylim(-0.3, 1.3)
        for side in ("top", "right", "bottom"):
            ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def plot_kv_head_sweep(rows, name: str, tokens: int):
    """Parameters and key-value cache after `tokens` tokens against the number of key-value heads.

    rows: dicts with 'kv_heads', 'total' (parameters) and 'cache_bytes', one per setting, as a
    sweep over lmcourse.describe and lmcourse.cache_bytes gives them.
    """
    rows = sorted(rows, key=lambda r: r["kv_heads"])
    kv = [r["kv_heads"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6), dpi=80)
    a.plot(kv, [r["total"] / 1e9 for r in rows], "o-", color=BLUE)
    a.set_ylabel("parameters (billions)")
    a.set_title(f"{name}: parameters")
    b.plot(kv, [r["cache_bytes"] / 1e9 for r in rows], "s--", color=VERMILLION)
    b.set_ylabel("GB (10⁹ bytes)")
    b.set_title(f"{name}: cache after {tokens:,} tokens")
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xticks(kv, [str(k) for k in kv])
        ax.set_xlabel("key-value heads (1 = MQA, all = MHA)")
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    return fig


# ---- LM10-T4: RMSNorm, SwiGLU and mixture of experts -----------------------------------------


def plot_norm_mean_fractions(fractions: dict, title: str = ""):
    """Per norm layer, the median over tokens of |mean| / RMS (lines) and its 10th to 90th
    percentile (band), in percent; `fractions` as `probes.norm_input_mean_fractions` returns it."""
    import torch

    if not isinstance(fractions, dict) or not fractions:
        raise ValueError(
            "fractions must be a non-empty dict as probes.norm_input_mean_fractions returns"
        )
    fig, ax = plt.subplots(figsize=(9, 3.8), dpi=80)
    styles = (
        ("attention", BLUE, "o", "before attention"),
        ("feed-forward", ORANGE, "s", "before feed-forward"),
        ("final", BLACK, "D", "final norm"),
    )
    for kind, colour, marker, label in styles:
        keys = [key for key in fractions if key[1] == kind]
        if not keys:
            continue
        blocks = [block for block, _ in keys]
        levels = torch.tensor([0.1, 0.5, 0.9])
        q = 100 * torch.stack([torch.quantile(fractions[key], levels) for key in keys]).numpy()
        if len(keys) == 1:  # the final norm: one point, its band as an error bar
            ax.errorbar(
                blocks,
                q[:, 1],
                yerr=[q[:, 1] - q[:, 0], q[:, 2] - q[:, 1]],
                marker=marker,
                color=colour,
                ms=4,
                capsize=3,
                label=label,
            )
            continue
        ax.plot(blocks, q[:, 1], marker=marker, color=colour, ms=4, label=label)
        ax.fill_between(blocks, q[:, 0], q[:, 2], color=colour, alpha=0.15, lw=0)
    ax.set_xlabel("block (band: 10th to 90th percentile over tokens)")
    ax.set_ylabel("|mean| / RMS of a token (%)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or "What RMSNorm leaves uncentred: the mean of each input vector")
    fig.tight_layout()
    return fig


def plot_ablation_losses(
    losses: dict,
    reference: float | None = None,
    reference_label: str = "uniform guess",
    title: str = "",
):
    """Horizontal bars of a loss per model variant (label -> loss, first on top), with the value
    printed on each bar and an optional dashed reference line (e.g. ln V, a uniform guess)."""
    if not isinstance(losses, dict) or not losses:
        raise ValueError("losses must be a non-empty dict of label -> loss")
    labels = list(losses)[::-1]
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(labels) + 1.4), dpi=80)
    bars = ax.barh(labels, [losses[label] for label in labels], color=BLUE)
    for bar, label in zip(bars, labels, strict=True):
        ax.text(
            bar.get_width(),
            bar.get_y() + bar.get_height() / 2,
            f" {losses[label]:.3f}",
            va="center",
            fontsize=9,
        )
    if reference is not None:
        ax.axvline(
            reference, color=VERMILLION, ls="--", lw=1, label=f"{reference_label}: {reference:.2f}"
        )
        ax.legend(fontsize=8, loc="upper right")
    ax.set_xlabel("loss on the evaluation text (nats per token)")
    ax.set_xlim(0, 1.25 * max([*losses.values(), reference or 0.0]))
    ax.set_title(title or "Loss of each variant")
    fig.tight_layout()
    return fig


def plot_activations(first: str = "gelu", second: str = "silu", lo: float = -6.0, hi: float = 4.0):
    """Two activations of `lmcourse.blocks.ffn.ACTIVATIONS` on [lo, hi] (left) and their
    difference second - first (right)."""
    import torch

    from .blocks.ffn import activation

    f, g = activation(first), activation(second)  # validates both names
    if not lo < hi:
        raise ValueError(f"lo must be below hi, got lo={lo!r}, hi={hi!r}")
    x = torch.linspace(lo, hi, 1001)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4), dpi=80)
    left.plot(x, f(x), label=first, color=BLUE)
    left.plot(x, g(x), label=second, color=ORANGE, ls="--")
    left.axhline(0, color=GREY, lw=0.5)
    left.set_xlabel("input")
    left.set_title("the two activations")
    left.legend(fontsize=8)
    right.plot(x, g(x) - f(x), color=VERMILLION)
    right.axhline(0, color=GREY, lw=0.5)
    right.set_xlabel("input")
    right.set_title(f"{second}(x) - {first}(x)")
    fig.tight_layout()
    return fig


def _box(ax, x, y, text, colour=PLAIN, width=0.28):
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - 0.045),
            width,
            0.09,
            boxstyle="round,pad=0.01",
            facecolor=colour,
            edgecolor=GREY,
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=8.5)


def _arrow(ax, start, end):
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="->", color=GREY))


def plot_gated_ffn_and_router(gated, moe):
    """Data flow of a gated feed-forward layer (left, sizes from `gated`) and of a mixture of
    experts' routing (right, sizes from `moe`), input at the bottom."""
    g, m = as_spec(gated), as_spec(moe)
    if g.ffn not in ("swiglu", "geglu") or not m.experts:
        raise ValueError(
            "gated must have a gated feed-forward layer (ffn 'swiglu' or 'geglu') "
            "and moe must have experts"
        )
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.6), dpi=80)
    act = g.activation
    _box(left, 0.5, 0.06, f"x  (width d = {g.d:,})")
    _box(left, 0.25, 0.3, f"W_gate: d -> {g.hidden:,}")
    _box(left, 0.75, 0.3, f"W_up: d -> {g.hidden:,}")
    _box(left, 0.25, 0.5, act, colour=HIGHLIGHT)
    _box(left, 0.5, 0.7, "multiply, element by element", colour=HIGHLIGHT, width=0.5)
    _box(left, 0.5, 0.9, f"W_down: {g.hidden:,} -> d")
    for start, end in [
        ((0.45, 0.1), (0.27, 0.25)),
        ((0.55, 0.1), (0.73, 0.25)),
        ((0.25, 0.35), (0.25, 0.45)),
        ((0.25, 0.55), (0.42, 0.65)),
        ((0.75, 0.35), (0.58, 0.65)),
        ((0.5, 0.75), (0.5, 0.85)),
    ]:
        _arrow(left, start, end)
    left.set_title(
        f"gated feed-forward ({g.ffn}): the gate decides how much of each\n"
        "up-projected number passes",
        fontsize=9,
    )
    k, E = m.experts_per_token, m.experts
    _box(right, 0.5, 0.06, "x  (one token)")
    _box(right, 0.5, 0.25, f"router: {E} scores, softmax")
    _box(right, 0.5, 0.42, f"keep the top {k}, renormalise their weights", width=0.6)
    _arrow(right, (0.5, 0.1), (0.5, 0.2))
    _arrow(right, (0.5, 0.3), (0.5, 0.37))
    shown = min(E, 8)
    xs = [0.08 + i * 0.84 / (shown - 1) for i in range(shown)]
    picked = {min(shown - 2, int((j + 0.5) * shown / k)) for j in range(min(k, shown - 1))}
    for i, x in enumerate(xs):
        chosen = i in picked
        _box(
            right,
            x,
            0.62,
            f"e{i}" if i < shown - 1 or shown == E else f"e{E - 1}",
            colour=HIGHLIGHT if chosen else IDLE,
            width=0.08,
        )
        if chosen:
            _arrow(right, (0.5, 0.47), (x, 0.57))
            _arrow(right, (x, 0.67), (0.5, 0.77))
    if shown < E:
        right.text(xs[-2] + 0.06, 0.62, "...", ha="center", va="center")
    _box(right, 0.5, 0.82, "weighted sum of the chosen experts' outputs", width=0.6)
    right.set_title(
        f"mixture of experts: {k} of {E} experts run for each token\n"
        "(the shaded ones here; another token picks others)",
        fontsize=9,
    )
    for ax in (left, right):
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 0.97)
        ax.axis("off")
    fig.tight_layout()
    return fig


def plot_total_vs_active(models: dict):
    """Total and active (per token) parameters of each model (name -> config), log scale."""
    if not isinstance(models, dict) or not models:
        raise ValueError("models must be a non-empty dict of name -> config")
    names = list(models)[::-1]  # first model on top
    rows = [count.describe(models[name]) for name in names]
    fig, ax = plt.subplots(figsize=(8, 0.75 * len(names) + 1.4), dpi=80)
    y = list(range(len(names)))
    ax.barh(
        [i + 0.2 for i in y],
        [r["total"] / 1e9 for r in rows],
        0.4,
        color=LIGHT_GREY,
        label="stored (total)",
    )
    ax.barh(
        [i - 0.2 for i in y],
        [r["active"] / 1e9 for r in rows],
        0.4,
        color=BLUE,
        label="used per token (active)",
    )
    for i, r in zip(y, rows, strict=True):
        share = r["active"] / r["total"]
        ax.text(r["total"] / 1e9, i + 0.2, f" {r['total'] / 1e9:.3g} B", va="center", fontsize=8)
        ax.text(
            r["active"] / 1e9,
            i - 0.2,
            f" {r['active'] / 1e9:.3g} B ({share:.0%})",
            va="center",
            fontsize=8,
        )
    ax.set_yticks(y, names)
    ax.set_xscale("log")
    ax.set_xlim(right=max(r["total"] for r in rows) / 1e9 * 20)
    ax.set_xlabel("parameters (billions, log scale)")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("Mixture of experts: what is stored against what one token uses")
    fig.tight_layout()
    return fig


def plot_expert_load(chosen, experts: int, title: str = ""):
    """Tokens routed to each expert (`chosen` [tokens, k] expert indices, as the router returns
    them), against the even share tokens * k / experts (dashed)."""
    import torch

    load = torch.bincount(chosen.flatten(), minlength=experts)
    even = chosen.numel() / experts
    fig, ax = plt.subplots(figsize=(8, 3.2), dpi=80)
    ax.bar(range(experts), load.tolist(), color=BLUE)
    ax.axhline(even, color=VERMILLION, ls="--", lw=1, label=f"even share {even:,.0f}")
    ax.set_xlabel("expert")
    ax.set_ylabel("tokens routed to it")
    if experts <= 32:
        ax.set_xticks(range(experts))
    ax.legend(fontsize=8)
    ax.set_title(
        title
        or f"Load per expert: {chosen.shape[0]:,} tokens, top-{chosen.shape[1]} "
        f"of {experts}; busiest {load.max().item() / even:.2f}× the even share"
    )
    fig.tight_layout()
    return fig


# ---- LM10-T5: the key-value cache -------------------------------------------------------


def plot_prefill_decode(prompt: int = 6, steps: int = 3):
    """Generation with a key-value cache, one row per pass through the model, tokens along the
    x-axis: the prefill computes the prompt's keys and values at once; each decoding step
    computes one new token's and reads every cached one."""
    from matplotlib.patches import Rectangle

    if not (isinstance(prompt, int) and isinstance(steps, int) and prompt >= 1 and steps >= 1):
        raise ValueError(f"prompt and steps must be positive ints, got {prompt!r}, {steps!r}")
    rows = [("prefill", 0, prompt)] + [
        (f"decode step {i + 1}", prompt + i, 1) for i in range(steps)
    ]
    width = prompt + steps
    fig, ax = plt.subplots(figsize=(1.0 + 0.55 * width, 0.6 * len(rows) + 1.2), dpi=80)
    for r, (label, cached, new) in enumerate(rows):
        y = len(rows) - 1 - r
        for t in range(cached + new):
            colour = PLAIN if t < cached else HIGHLIGHT  # read from the cache / computed
            ax.add_patch(Rectangle((t + 0.05, y + 0.1), 0.9, 0.8, facecolor=colour, edgecolor=GREY))
        ax.text(-0.2, y + 0.5, label, ha="right", va="center", fontsize=9)
    ax.add_patch(
        Rectangle(
            (0, 0),
            0,
            0,
            facecolor=HIGHLIGHT,
            edgecolor=GREY,
            label="keys and values computed in this pass",
        )
    )
    ax.add_patch(
        Rectangle((0, 0), 0, 0, facecolor=PLAIN, edgecolor=GREY, label="read from the cache")
    )
    ax.set_xlim(-0.1, width + 0.1)
    ax.set_ylim(-0.1, len(rows) + 0.1)
    ax.set_xticks([t + 0.5 for t in range(width)], [str(t) for t in range(width)])
    ax.set_xlabel("token position")
    ax.set_yticks([])
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=2, frameon=False)
    ax.set_title("the cache grows by one token per decoding step", fontsize=10)
    fig.tight_layout()
    return fig


def plot_cache_vs_context(models: dict, max_tokens: int = 2**18, kv_bytes=2):
    """Cache bytes of one sequence against context length, log-log, one line per model.

    Each line stops at the longest context the model's configuration declares
    (`max_position_embeddings`, or GPT-2's `n_positions`, read by `configs.declared_context`): a
    declared maximum, not the length the model was trained at. Without one it stops at
    `max_tokens`; sliding-window layers flatten the line once full.
    """
    if not isinstance(models, dict) or not models:
        raise ValueError("models must be a non-empty dict of name -> config")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 2:
        raise ValueError(f"max_tokens must be an integer >= 2, got {max_tokens!r}")
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=80)
    for i, (name, config) in enumerate(models.items()):
        end = min(max_tokens, declared_context(config) or max_tokens)
        tokens = sorted(
            {round(2 ** (e / 8)) for e in range(0, 8 * end.bit_length() + 1) if 2 ** (e / 8) <= end}
            | {end}
        )
        sizes = [count.cache_bytes(config, n, kv_bytes=kv_bytes) for n in tokens]
        colour = series_colour(i)
        ax.plot(tokens, sizes, color=colour, ls=SERIES_STYLES[i % 4], label=name)
        ax.plot(tokens[-1], sizes[-1], "o", color=colour, markersize=4)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("tokens in the sequence (dot: declared maximum, max_position_embeddings)")
    ax.set_ylabel(f"cache bytes, one sequence, {kv_bytes} B per number")
    ax.grid(True, which="major", alpha=0.3)
    for size, label in ((2**20, " 1 MiB"), (GIB, " 1 GiB")):
        ax.axhline(size, color=GREY, lw=0.8, ls=":")
        ax.text(1, size, label, va="bottom", fontsize=8, color=GREY)
    ax.legend(fontsize=8)
    ax.set_title("Key-value cache against context length")
    fig.tight_layout()
    return fig


def plot_cache_vs_kv_heads(
    config, contexts=(8192, 32768, 131072), gpu_bytes: float = 80 * GIB, kv_bytes=2, weight_bytes=2
):
    """The static twin of `widgets.kv_cache_budget_widget`: one sequence's cache (GiB) for every
    valid number of key-value heads, one line per context length, beside the weights and the
    GPU's `gpu_bytes` (default 80 GiB, about what a card sold as "80 GB" holds)."""
    import dataclasses

    spec = as_spec(config)
    options = divisors(spec.heads)
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=80)
    for i, n in enumerate(contexts):
        sizes = [
            count.cache_bytes(dataclasses.replace(spec, kv_heads=k), n, kv_bytes) / GIB
            for k in options
        ]
        style = dict(marker=SERIES_MARKERS[i % 8], color=series_colour(i))
        ax.plot(options, sizes, label=f"cache, {n:,} tokens", **style)
    weights = count.describe(spec)["total"] * weight_bytes / GIB
    ax.axhline(weights, color=BLACK, ls="--", lw=1, label=f"weights ({weight_bytes} B each)")
    gpu_label = f"GPU memory, {gpu_bytes / GIB:g} GiB"
    ax.axhline(gpu_bytes / GIB, color=VERMILLION, ls=":", lw=1, label=gpu_label)
    ax.axvline(spec.kv_heads, color=GREY, lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(options, [str(k) for k in options])
    ax.set_xlabel(f"key-value heads (of {spec.heads} query heads; grey: the published choice)")
    ax.set_ylabel("GiB (2³⁰ bytes)")
    ax.legend(fontsize=8)
    ax.set_title("Cache of one sequence against the number of key-value heads")
    fig.tight_layout()
    return fig


def plot_kv_cache_budget(
    config, kv_heads: int, tokens: int, gpu_gib: float, kv_bytes=2, weight_bytes=2
):
    """One setting of `widgets.kv_cache_budget_widget`: one bar splits a GPU of `gpu_gib` GiB
    into the weights and one sequence's cache of `tokens` tokens with `kv_heads` key-value heads;
    the title says how many such sequences fit (`count.requests_that_fit`)."""
    import dataclasses

    chosen = dataclasses.replace(as_spec(config), kv_heads=kv_heads)
    weights = count.describe(chosen)["total"] * weight_bytes / GIB
    cache = count.cache_bytes(chosen, tokens, kv_bytes=kv_bytes) / GIB
    fits = count.requests_that_fit(chosen, tokens, gpu_gib * GIB, kv_bytes, weight_bytes)
    fig, ax = plt.subplots(figsize=(8, 1.6), dpi=80)
    ax.barh([0], [weights], color=BLACK, label=f"weights {weights:.1f} GiB")
    ax.barh(
        [0],
        [cache],
        left=[weights],
        color=VERMILLION,
        label=f"one sequence's cache {cache:.2f} GiB",
    )
    ax.axvline(gpu_gib, color=GREY, ls=":")
    ax.set_xlim(0, max(gpu_gib, weights + cache) * 1.05)
    ax.set_yticks([])
    ax.set_xlabel("GiB (2³⁰ bytes)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.5), ncol=2, frameon=False)
    ax.set_title(f"{fits} sequence(s) of {tokens:,} tokens fit on a GPU of {gpu_gib} GiB")
    fig.tight_layout()
    return fig


# ---- LM10-T7: the architecture zoo -----------------------------------------------------------


def plot_rope_base_by_year(points: dict):
    """Rotary base against release year, log scale: `points` maps a model name to
    (year, base). Models released in the same year are spread a little apart."""
    if not isinstance(points, dict) or not points:
        raise ValueError("points must be a non-empty dict of name -> (year, base)")
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=80)
    seen: dict[tuple, int] = {}
    for name, (year, base) in sorted(points.items(), key=lambda item: item[1]):
        k = seen.get((year, base), 0)
        seen[(year, base)] = k + 1
        ax.plot(year, base, "o", color=BLUE)
        ax.annotate(
            name, (year, base), textcoords="offset points", xytext=(6, 4 - 11 * k), fontsize=8
        )
    ax.set_yscale("log")
    years = sorted({year for year, _ in points.values()})
    ax.set_xticks(years, [str(y) for y in years])
    ax.set_xlim(years[0] - 0.5, years[-1] + 1.2)
    ax.set_xlabel("release year")
    ax.set_ylabel("rotary base (rope_theta)")
    ax.set_title("The rotary base of published configurations, by year")
    fig.tight_layout()
    return fig
