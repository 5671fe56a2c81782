"""The course's figure colours as readers with a colour-vision deficiency see them.

    python tools/colour_vision.py

prints every pair of the palette the figures draw from (lib/lmcourse/plots.py's `COLOURS`:
Okabe and Ito's eight series colours, the greys of reference lines and the diagrams' fills) that
becomes hard to tell apart under protanopia, deuteranopia or tritanopia, with the colour
difference left, and every colour plots.py writes out instead of naming it from `COLOURS`.

Each colour is simulated with the matrices of Machado, Oliveira and Fernandes (2009, "A
physiologically-based model for simulation of color vision deficiency", severity 1.0, applied to
linear RGB), then compared in CIELAB (D65): a difference under CONFUSABLE (CIE76 delta E) is
read as two colours a reader with that deficiency cannot reliably tell apart in a small patch
or a thin line. tests/lib/test_plots.py holds the palette to no such pair and no stray colour;
tests/test_book.py holds book/ACCESSIBILITY.md to what this finds. Exit status 1 when it finds
either.
"""

from __future__ import annotations

import re
from itertools import combinations
from pathlib import Path

import numpy as np
from matplotlib import colors as mcolors

ROOT = Path(__file__).resolve().parents[1]
PLOTS = ROOT / "lib" / "lmcourse" / "plots.py"
CONFUSABLE = 10.0  # CIE76 delta E

# Machado et al. 2009, severity 1.0: linear RGB in, linear RGB as the deficient eye sees it out.
SIMULATION = {
    "protanopia": [
        [0.152286, 1.052583, -0.204868],
        [0.114503, 0.786281, 0.099216],
        [-0.003882, -0.048116, 1.051998],
    ],
    "deuteranopia": [
        [0.367322, 0.860646, -0.227968],
        [0.280085, 0.672501, 0.047413],
        [-0.011820, 0.042940, 0.968881],
    ],
    "tritanopia": [
        [1.255528, -0.076749, -0.178779],
        [-0.078411, 0.930809, 0.147602],
        [0.004733, 0.691367, 0.303900],
    ],
}
_XYZ = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
_WHITE = np.array([0.95047, 1.0, 1.08883])


def _linear(rgb) -> np.ndarray:
    rgb = np.asarray(rgb, dtype=float)
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def lab(colour: str, deficiency: str | None = None) -> np.ndarray:
    """CIELAB of a matplotlib colour, as seen with the deficiency (None: typical vision)."""
    rgb = _linear(mcolors.to_rgb(colour))
    if deficiency is not None:
        rgb = np.clip(np.array(SIMULATION[deficiency]) @ rgb, 0, 1)
    t = (_XYZ @ rgb) / _WHITE
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def difference(a: str, b: str, deficiency: str | None = None) -> float:
    return float(np.linalg.norm(lab(a, deficiency) - lab(b, deficiency)))


def palette() -> dict[str, str]:
    """name -> colour, for every colour plots.py draws with (its `COLOURS`)."""
    from lmcourse import plots

    return dict(plots.COLOURS)


# A colour written into a drawing call rather than named from COLOURS: a string after color=,
# facecolor= or edgecolor=, matplotlib's cycle ("C0", f"C{i}") or a tableau name ("tab:red").
_LITERAL = re.compile(
    r"""(?:\b(?:face|edge)?colou?r\s*=\s*f?["'][^"']*["'])|(?:["']tab:[a-z]+["'])"""
    r"""|(?:f?["']C(?:\d|\{)[^"']*["'])"""
)


def stray_colours(source: str | None = None) -> list[str]:
    """Colours plots.py writes out instead of taking from COLOURS, as `line: text`."""
    source = PLOTS.read_text() if source is None else source
    return [
        f"{number}: {match.group(0)}"
        for number, line in enumerate(source.splitlines(), 1)
        for match in _LITERAL.finditer(line)
        if "white" not in match.group(0)  # text and separators on the filled bars
    ]


def confusable(colours: dict[str, str], limit: float = CONFUSABLE) -> list[tuple[str, str, str]]:
    """(deficiency, a, b) for every pair that colour vision tells apart (at least limit) and the
    deficiency does not (under limit)."""
    found = []
    for deficiency in SIMULATION:
        for a, b in combinations(sorted(colours), 2):
            if (
                difference(colours[a], colours[b])
                >= limit
                > difference(colours[a], colours[b], deficiency)
            ):
                found.append((deficiency, a, b))
    return found


def main() -> int:
    colours = palette()
    print(f"{len(colours)} colours: {', '.join(sorted(colours))}")
    found = confusable(colours)
    for deficiency, a, b in found:
        left = difference(colours[a], colours[b], deficiency)
        print(f"{deficiency:13} {a:14} {b:14} delta E {left:5.1f}")
    stray = stray_colours()
    for line in stray:
        print(f"written out, not from COLOURS: plots.py line {line}")
    for deficiency in SIMULATION:
        left, a, b = min(
            (difference(colours[a], colours[b], deficiency), a, b)
            for a, b in combinations(sorted(colours), 2)
            if difference(colours[a], colours[b]) >= CONFUSABLE
        )
        print(f"{deficiency:13} closest pair {a} / {b}: delta E {left:.1f}")
    if not found and not stray:
        print(f"no pair under delta E {CONFUSABLE:g} for any of the three deficiencies")
    return 1 if found or stray else 0


if __name__ == "__main__":
    raise SystemExit(main())
