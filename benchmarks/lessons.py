"""Run every lesson top to bottom in a fresh kernel; print wall time and peak memory per lesson.

    python benchmarks/lessons.py                             # every lessons/LM10-T*.ipynb
    python benchmarks/lessons.py lessons/LM10-T4-*.ipynb     # some of them

Each lesson is copied to a temporary folder (the stored notebook is never touched) and executed
with nbclient in a child process of this script. The child starts the kernel and reaps it when
the notebook ends, then writes getrusage(RUSAGE_CHILDREN).ru_maxrss: the peak resident memory of
the kernel (or of a process the kernel started and reaped, if that was larger), where torch and
the weights live. It is read in the child, not from os.wait4 here, because Linux carries the
peak of the memory a process was started from across exec: a child of a large process (pytest,
say, after loading models) would report that process's peak as its own. Wall time counts from
starting the child to its exit, kernel start-up included. A lesson over LIMIT_S seconds or
LIMIT_BYTES bytes, or one that fails, is flagged and the script exits with status 1.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LESSONS = ROOT / "lessons"
LIMIT_S = 180.0
LIMIT_BYTES = 3 * 10**9
CELL_TIMEOUT_S = 600


@dataclass(frozen=True)
class Result:
    name: str
    wall_s: float
    peak_rss_bytes: int
    error: str | None  # None when every cell ran

    @property
    def flags(self) -> list[str]:
        flags = []
        if self.error is not None:
            flags.append(f"FAILED: {self.error}")
        if self.wall_s > LIMIT_S:
            flags.append(f"over {LIMIT_S / 60:.0f} min")
        if self.peak_rss_bytes > LIMIT_BYTES:
            flags.append(f"over {LIMIT_BYTES / 1e9:.0f} GB")
        return flags


def execute_one(path: Path, report: Path) -> None:
    """In the child process: execute the notebook at `path` in a fresh python3 kernel, then write
    the kernel's peak resident memory in bytes to `report`."""
    import resource

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(path.parent)}},
    )
    try:
        client.execute()  # starts the kernel, runs every cell, shuts the kernel down and reaps it
    finally:  # a failed cell still shuts the kernel down; its peak is reported beside the error
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
        report.write_text(str(peak_kib * 1024))


def measure(path: Path) -> Result:
    """Execute a temporary copy of the lesson at `path` and measure it."""
    path = Path(path)
    with tempfile.TemporaryDirectory(prefix="lm10-bench-") as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        log = Path(tmp) / "child.log"
        report = Path(tmp) / "peak_rss_bytes"
        start = time.perf_counter()
        with open(log, "wb") as out:
            returncode = subprocess.call(
                [sys.executable, __file__, "--execute-one", str(copy), str(report)],
                cwd=tmp,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wall = time.perf_counter() - start
        error = None
        if returncode != 0:
            lines = log.read_text(errors="replace").strip().splitlines()
            error = lines[-1] if lines else f"exit status {returncode}"
        peak = int(report.read_text()) if report.exists() else 0  # 0: the child died first
    return Result(path.stem, wall, peak, error)


def table(results: list[Result]) -> str:
    width = max([len("lesson")] + [len(r.name) for r in results])
    lines = [f"{'lesson':<{width}}  {'wall s':>7}  {'peak RSS GB':>11}  flags"]
    for r in results:
        flags = "; ".join(r.flags) or "ok"
        lines.append(f"{r.name:<{width}}  {r.wall_s:7.1f}  {r.peak_rss_bytes / 1e9:11.2f}  {flags}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--execute-one"]:
        execute_one(Path(argv[1]), Path(argv[2]))
        return 0
    paths = [Path(a) for a in argv] or sorted(LESSONS.glob("LM10-T*.ipynb"))
    if not paths:
        print(f"no lessons found in {LESSONS}", file=sys.stderr)
        return 1
    print(
        f"{len(paths)} lesson(s), fresh kernel each, {os.cpu_count()} CPUs; limits "
        f"{LIMIT_S:.0f} s and {LIMIT_BYTES / 1e9:.0f} GB"
    )
    results = []
    for path in paths:
        results.append(measure(path))
        print(f"  {path.name}: {results[-1].wall_s:.1f} s", flush=True)
    print(table(results))
    return 1 if any(r.flags for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
