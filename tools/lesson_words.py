"""Words of markdown prose per lesson: the core path, the optional parts, the references.

    python tools/lesson_words.py                 # every lesson in lessons/
    python tools/lesson_words.py lessons/LM10-T1-then-and-now.ipynb

Words are counted as tests/test_lessons.py counts them (code, math, HTML tags and URLs removed).
A lesson's optional part runs from its first heading containing "Going further" to its
"References" heading (or the end); the references are counted apart; everything else is the core
path every student reads. A companion notebook (LM10-T7b-...) counts as optional as a whole.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.M)
# What is not prose (tests/test_lessons.py counts a lesson's words with these too)
NOT_PROSE = [
    re.compile(r"```.*?```", re.S),  # fenced code
    re.compile(r"\$\$.*?\$\$", re.S),  # display math
    re.compile(r"\\\[.*?\\\]", re.S),  # display math, \[ ... \]
    re.compile(r"\$[^$\n]+\$"),  # inline math
    re.compile(r"`[^`\n]+`"),  # inline code
    re.compile(r"<[^>\n]+>"),  # HTML tags (their text content stays)
    re.compile(r"https?://\S+"),  # URLs
]
WORD = re.compile(r"[A-Za-z]+(?:['’-][A-Za-z]+)*")


def words(text: str) -> int:
    for pattern in NOT_PROSE:
        text = pattern.sub(" ", text)
    return len(WORD.findall(text))


def split(path: Path) -> dict[str, int]:
    """Words in the core, optional and reference parts of one notebook."""
    counts = {"core": 0, "optional": 0, "references": 0}
    part = "optional" if re.match(r"LM10-T\d+[a-z]-", path.name) else "core"
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "markdown":
            continue
        for title in HEADING.findall(cell.source):  # a cell's first switching heading decides
            if "going further" in title.lower():
                part = "optional"
                break
            if title.strip().lower().startswith("references"):
                part = "references"
                break
        counts[part] += words(cell.source)
    return counts


def main(paths: list[str]) -> None:
    files = [Path(p) for p in paths] or sorted((ROOT / "lessons").glob("LM10-T*.ipynb"))
    print(f"{'lesson':45s} {'core':>6s} {'optional':>9s} {'references':>11s} {'total':>6s}")
    for path in files:
        c = split(path)
        print(
            f"{path.name:45s} {c['core']:6,d} {c['optional']:9,d} {c['references']:11,d} "
            f"{sum(c.values()):6,d}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
