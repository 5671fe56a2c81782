"""Timings that survive a shared machine: interleaved, repeated, one thread by default.

A single stopwatch reading says as much about what else the machine was doing as about the code.
`compare` times several contestants the way a fair race is run:

    result = compare({"layer_norm": f, "rms_norm": g}, repeats=50)          # one thread
    result = compare({"layer_norm": f, "rms_norm": g}, threads=None)        # every core
    print(result.report(unit="µs", baseline="layer_norm"))

- the contestants are **interleaved**: round r calls each of them once, in an order that rotates
  from round to round, so a burst of background load hits all of them rather than one;
- each gets a warm-up call first (caches, lazy initialisation), then `repeats` timed runs of
  `number` calls each (like timeit's `number`: several short calls per run average away the
  jitter of a single one, such as a fresh page of memory for its output);
- each is summarised by its **median** and its **spread**, the interquartile range divided by the
  median; a spread above `BUSY_SPREAD` means the machine was busy and the report says so;
- torch runs on `threads` threads (default 1: the same work on every machine, no thread start-up
  in the measurement), restored afterwards.

`Comparison.median_of(name)` and `ratio(a, b)` give the numbers to compute with.
`floor_reader(model)` gives a callable that streams every weight a decoding step reads, once: the
memory-bandwidth floor under any decoding step, to be timed beside the steps. `matvec_reader(model)`
reads the same matrices with the kernel a step multiplies them with, one matrix-vector product
each: how far that kernel alone stands above the floor.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

BUSY_SPREAD = 0.25  # interquartile range / median above which a measurement is called noisy
UNITS = {"s": (1.0, 3), "ms": (1e3, 2), "µs": (1e6, 1)}  # unit: (scale, decimals)


@dataclass(frozen=True)
class Timing:
    """The repeated wall times of one contestant, in seconds."""

    name: str
    seconds: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def spread(self) -> float:
        """Interquartile range divided by the median (0 when there are fewer than 4 samples,
        too few for quartiles)."""
        if len(self.seconds) < 4:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.seconds, n=4)
        return (q3 - q1) / self.median


@dataclass(frozen=True)
class Comparison:
    """Timings of several contestants measured together by `compare`."""

    timings: tuple[Timing, ...]
    threads: int
    number: int = 1  # calls per timed run

    def _get(self, name: str) -> Timing:
        for timing in self.timings:
            if timing.name == name:
                return timing
        names = [t.name for t in self.timings]
        raise ValueError(f"no contestant named {name!r}; the contestants are {names}")

    def median_of(self, name: str) -> float:
        """Median seconds of one call of contestant `name`."""
        return self._get(name).median

    def ratio(self, name: str, baseline: str) -> float:
        """Median time of `name` divided by the median time of `baseline`."""
        return self.median_of(name) / self.median_of(baseline)

    @property
    def busy(self) -> bool:
        """Whether any contestant's spread exceeds BUSY_SPREAD: the machine was not quiet."""
        return any(t.spread > BUSY_SPREAD for t in self.timings)

    def report(
        self, unit: str = "ms", baseline: str | None = None, per: int = 1, per_label: str = ""
    ) -> str:
        """One line per contestant: median, spread and repeats, its ratio to `baseline`, and,
        with `per` items per call, items per second; then a warning line when `busy`."""
        if unit not in UNITS:
            raise ValueError(f"unit must be one of {sorted(UNITS)}, got {unit!r}")
        if baseline is not None:
            self._get(baseline)
        scale, decimals = UNITS[unit]
        width = max(len(t.name) for t in self.timings)
        lines = []
        for t in self.timings:
            calls = f" of {self.number} calls" if self.number > 1 else ""
            line = (
                f"{t.name:<{width}}  median {t.median * scale:9.{decimals}f} {unit}  "
                f"spread {t.spread:4.0%}  ({len(t.seconds)} runs{calls}, {self.threads} "
                f"thread{'s' if self.threads > 1 else ''})"
            )
            if per_label:
                line += f"  {per / t.median:6.1f} {per_label}/s"
            if baseline is not None:
                line += f"  {self.ratio(t.name, baseline):5.2f}x {baseline}"
            lines.append(line)
        if self.busy:
            lines.append(
                f"warning: a spread above {BUSY_SPREAD:.0%} means the machine was busy "
                "while timing; rerun on a quiet machine before trusting the ratios"
            )
        return "\n".join(lines)


@contextlib.contextmanager
def torch_threads(threads: int | None):
    """torch's CPU threads set to `threads` inside the block (None: left alone), restored after,
    even when the block raises. On one thread a matrix product adds its terms in the same order
    whatever else the machine runs: a product split across threads can add them in another
    order, and differ in the last bit, when the matrix is wider or the machine busier."""
    if threads is not None and (
        isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
    ):
        raise ValueError(
            f"threads must be a positive int or None (torch's setting), got {threads!r}"
        )
    saved = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def compare(
    contestants: dict[str, Callable[[], object]],
    repeats: int = 30,
    threads: int | None = 1,
    sync: Callable[[], None] | None = None,
    number: int = 1,
) -> Comparison:
    """Time each zero-argument callable `repeats` times, interleaved, after one warm-up call each;
    each timed run makes `number` calls and records their mean.

    threads: torch CPU threads during the measurement (None: leave torch's setting alone, which is
    every core by default). sync: called after each call and before reading the clock, for
    example torch.cuda.synchronize, so that asynchronous GPU work is counted.
    """
    if (
        not isinstance(contestants, dict)
        or not contestants
        or not all(isinstance(k, str) and callable(v) for k, v in contestants.items())
    ):
        raise ValueError(
            "contestants must be a non-empty dict of name -> zero-argument callable, "
            f"got {contestants!r:.80}"
        )
    for name, value in (("repeats", repeats), ("number", number)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    sync = sync or (lambda: None)
    names = list(contestants)
    with torch_threads(threads):
        used = torch.get_num_threads()
        for fn in contestants.values():  # warm-up
            fn()
        sync()
        samples = {name: [] for name in names}
        for r in range(repeats):
            for name in names[r % len(names) :] + names[: r % len(names)]:  # rotate the order
                start = time.perf_counter()
                for _ in range(number):
                    contestants[name]()
                sync()
                samples[name].append((time.perf_counter() - start) / number)
    return Comparison(tuple(Timing(n, tuple(samples[n])) for n in names), used, number)


def step_weights(model: torch.nn.Module) -> list[torch.Tensor]:
    """The tensors a decoding step reads in full, each once: every parameter of `model` (a tied
    table once) except the tables of `nn.Embedding` modules that no other module uses, token or
    position tables without a tied output head, of which a step reads only the rows it looks up.
    Their bytes are `count.decode_step`'s weight bytes less those looked-up rows."""
    tables, others = set(), set()
    for module in model.modules():
        for p in module.parameters(recurse=False):
            (tables if isinstance(module, torch.nn.Embedding) else others).add(id(p))
    looked_up = tables - others
    return [p.detach() for p in model.parameters() if id(p) not in looked_up]


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def floor_reader(model: torch.nn.Module) -> tuple[Callable[[], None], int]:
    """(read, bytes): a zero-argument callable that streams every tensor a decoding step of
    `model` reads in full (`step_weights`) once, with the fastest plain read torch has, a sum
    over each tensor (it reads every byte once and writes nothing); and the bytes it reads.

    A decoding step must read those bytes, however it is implemented, so no step runs faster
    than `read`: the memory-bandwidth floor. Time it in the same `compare` as the steps it
    bounds, so that both are measured round by round on the same machine state. A step also
    reads its cache, which this floor leaves out: at long contexts, add its bytes
    (`count.cache_bytes`) at the same rate."""
    tensors = step_weights(model)
    if not tensors:
        raise ValueError(f"model has no parameters to read: {type(model).__name__}")

    def read() -> None:
        for t in tensors:
            t.sum()

    return read, _nbytes(tensors)


def matvec_reader(model: torch.nn.Module) -> tuple[Callable[[], None], int]:
    """(read, bytes): a zero-argument callable that multiplies one vector by each weight matrix
    a decoding step reads (the 2-D tensors of `step_weights`), one matrix-vector product each,
    x @ W with W copied once into the layout [in, out], contiguous; and the bytes of those
    matrices. Timed beside `floor_reader`'s read, it shows how close the kernel that a step
    multiplies its weights with comes, by itself, to the memory-bandwidth floor on these
    shapes."""
    mats = [p.t().contiguous() for p in step_weights(model) if p.dim() == 2]
    if not mats:
        raise ValueError(f"model has no weight matrices to read: {type(model).__name__}")
    xs = [torch.randn(1, m.shape[0], dtype=m.dtype, device=m.device) for m in mats]

    def read() -> None:
        for x, m in zip(xs, mats, strict=True):
            x @ m

    return read, _nbytes(mats)
