"""The course's figure colours as readers with a colour-vision deficiency see them.

    python tools/colour_vision.py

prints every pair of the palette the figures draw from (lib/lmcourse/plots.py: matplotlib's
default colour cycle C0-C9, the named colours and the diagrams' fills) that becomes hard to tell
apart under protanopia, deuteranopia or tritanopia, with the colour difference left.

Each colour is simulated with the matrices of Machado, Oliveira and Fernandes (2009, "A
physiologically-based model for simulation of color vision deficiency", severity 1.0, applied to
linear RGB), then compared in CIELAB (D65): a difference under CONFUSABLE (CIE76 delta E) is
read as two colours a reader with that deficiency cannot reliably tell apart in a small patch
or a thin line. tests/test_book.py holds the course to the pairs book/ACCESSIBILITY.md lists.
"""

from __future__ import annotations

import re
from itertools import combinations
from pathlib import Path

import numpy as np
from matplotlib import colors as mcolors
from matplotlib import rcParams

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
    """name -> colour, for every colour plots.py draws with: the cycle's C0-C9 (the figures'
    series) and every named or hex colour written in the module."""
    cycle = [entry["color"] for entry in rcParams["axes.prop_cycle"]]
    colours = {f"C{i}": colour for i, colour in enumerate(cycle)}
    source = PLOTS.read_text()
    seen = {mcolors.to_hex(c) for c in colours.values()}
    for name in re.findall(r"[\"'](tab:[a-z]+|#[0-9a-fA-F]{6})[\"']", source):
        if mcolors.to_hex(name) not in seen:  # tab:blue is C0: one colour, one name
            colours[name] = name
            seen.add(mcolors.to_hex(name))
    return colours


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


def main() -> None:
    colours = palette()
    print(f"{len(colours)} colours: {', '.join(sorted(colours))}")
    for deficiency, a, b in confusable(colours):
        left = difference(colours[a], colours[b], deficiency)
        print(f"{deficiency:13} {a:10} {b:10} delta E {left:5.1f}")


if __name__ == "__main__":
    main()
