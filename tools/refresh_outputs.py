"""Re-store the outputs of some cells of a lesson, and keep every other stored output as it is.

    python tools/refresh_outputs.py lessons/LM10-T4-rmsnorm-swiglu-moe.ipynb --containing "excerpt("
    python tools/refresh_outputs.py lessons/LM10-T6-porting-a-model.ipynb --cells 12 14

The notebook is executed top to bottom in a fresh kernel, as strict nbval executes it, and only the
chosen code cells (by index among all cells, or by a text their source contains) take the new
outputs, with every widget cell, whose views name models kept in the notebook's metadata. Use it
when a change is meant to alter those cells alone: the other cells keep what was stored, timings
from a quiet machine included (`make notebooks` re-stores every output of every lesson).
Afterwards run strict nbval on the notebook, normally and perturbed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def refresh(path: Path, indexes: set[int], containing: list[str], timeout: int = 600) -> list[int]:
    """Execute `path` and copy the new outputs into the chosen code cells; return their indexes."""
    stored = nbformat.read(path, as_version=4)
    chosen = [
        i
        for i, cell in enumerate(stored.cells)
        if cell.cell_type == "code"
        and (i in indexes or any(text in cell.source for text in containing))
    ]
    not_code = sorted(
        i for i in indexes if i >= len(stored.cells) or stored.cells[i].cell_type != "code"
    )
    if not_code:
        raise SystemExit(
            f"{path}: cells {not_code} are not code cells (it has {len(stored.cells)})"
        )
    if not chosen:
        raise SystemExit(f"{path}: no code cell matches {sorted(indexes)} or {containing}")
    executed = nbformat.read(path, as_version=4)
    NotebookClient(
        executed, timeout=timeout, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    # Widget views name their models, which live in the notebook's metadata: a fresh run makes
    # new ones, so every widget cell takes its new output with the new models (none is a timing).
    widgets = [i for i, cell in enumerate(executed.cells) if _shows_widget(cell)]
    chosen = sorted(set(chosen) | set(widgets))
    for i in chosen:  # a cell with outputs needs its count: nbval refuses an "unrun" one
        stored.cells[i].outputs = executed.cells[i].outputs
        stored.cells[i].execution_count = executed.cells[i].execution_count
    if widgets:
        stored.metadata["widgets"] = executed.metadata["widgets"]
    nbformat.write(stored, path)
    return chosen


def _shows_widget(cell) -> bool:
    return cell.cell_type == "code" and any(
        WIDGET_VIEW in output.get("data", {}) for output in cell.get("outputs", [])
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--cells", type=int, nargs="*", default=[], help="cell indexes (from 0)")
    parser.add_argument("--containing", action="append", default=[], help="text in a cell's source")
    args = parser.parse_args(argv)
    if not args.cells and not args.containing:
        parser.error("name the cells to refresh: --cells N ... and/or --containing TEXT")
    done = refresh(args.notebook, set(args.cells), args.containing)
    print(f"{args.notebook}: new outputs in cells {done}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
