"""What the off-limits guard (lmcourse.offlimits) costs honest code, in one run.

The grading sandbox arms a Guard around every call a test makes of the student's code: a
profile hook (every Python call and C call the code makes asks it) and, where a test declares
a family such as "torch normalisation layers", torch's function and dispatch modes (every
torch operator asks them). Honest answers pay that cost on every call; this prints it for three
kinds of honest answer, each timed bare, under a guard of names (the L1 tests' declaration) and
under a guard with the family (the L3 tests' declaration), rounds interleaved, medians:

  - call-heavy Python: a parameter count written as many small function calls (L1, L2, L6);
  - tensor-heavy: an RMS normalisation of a [64, 512] tensor, 200 times (L3, L5);
  - a decoder block port: a Llama-style block forward on [1, 32, 256] (L5).

    python benchmarks/guard.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from lmcourse import offlimits

NAMES = ["lmcourse.count", "torch.nn.Module.__init__"]
FAMILY = ["torch normalisation layers", "lmcourse.blocks"]
CELL = offlimits._cell_prefixes()[-1] + "benchmark.py"  # compiled as a notebook cell

ANSWERS = """
def block(d):
    def linear(n_in, n_out, bias):
        return n_in * n_out + (n_out if bias else 0)
    def norm(n):
        return 2 * n
    return linear(d, 3 * d, True) + linear(d, d, True) + linear(d, 4 * d, True) \\
        + linear(4 * d, d, True) + norm(d) + norm(d)

def count_many(widths):
    return sum(block(d) for d in widths for _ in range(20))

def rms(x, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)

def normalise_many(x):
    for _ in range(200):
        y = rms(x)
    return y

def port_block(x, w):
    h = rms(x) * w["norm"]
    q, k, v = h @ w["q"], h @ w["k"], h @ w["v"]
    t = x.shape[1]
    scores = (q @ k.transpose(-2, -1)) / q.shape[-1] ** 0.5
    scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    x = x + (scores.softmax(-1) @ v) @ w["o"]
    h = rms(x) * w["norm"]
    return x + (torch.nn.functional.silu(h @ w["gate"]) * (h @ w["up"])) @ w["down"]
"""


def workloads(namespace):
    d = 256
    weights = {name: torch.randn(d, d) * d**-0.5 for name in ("q", "k", "v", "o")}
    weights.update(gate=torch.randn(d, 4 * d), up=torch.randn(d, 4 * d), down=torch.randn(4 * d, d))
    weights["norm"] = torch.ones(d)
    x, block_input = torch.randn(64, 512), torch.randn(1, 32, d)
    return {
        "call-heavy Python (count_many)": lambda: namespace["count_many"](range(64, 4096, 64)),
        "tensor-heavy (200 RMS norms)": lambda: namespace["normalise_many"](x),
        "a block port's forward": lambda: namespace["port_block"](block_input, weights),
    }


def timed(work, guard_names, namespace):
    """Seconds of one run of `work`, bare or under an armed guard (made beforehand: the
    sandbox makes one per call, a cost of its own, printed apart)."""
    guard = offlimits.Guard(guard_names, namespace) if guard_names is not None else None
    start = time.perf_counter()
    if guard is None:
        work()
    else:
        with guard:
            work()
        assert guard.fired == [], f"the honest workload tripped the guard: {guard.fired}"
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    namespace = {"torch": torch}
    exec(compile(ANSWERS, CELL, "exec"), namespace)
    settings = {"bare": None, "guard (names)": NAMES, "guard (names + family)": FAMILY}
    for names in (NAMES, FAMILY):
        made = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            offlimits.Guard(names, namespace)
            made.append(time.perf_counter() - start)
        print(f"making a guard of {names}: {statistics.median(made) * 1e3:.2f} ms")
    print(f"median of {args.repeats} interleaved rounds, torch threads {torch.get_num_threads()}")
    print(f"{'workload':34} {'bare':>10} {'names':>16} {'names + family':>18}")
    for name, work in workloads(namespace).items():
        work()  # warm-up
        times = {setting: [] for setting in settings}
        for _ in range(args.repeats):
            for setting, names in settings.items():
                times[setting].append(timed(work, names, namespace))
        bare, plain, family = (statistics.median(times[s]) for s in settings)
        print(
            f"{name:34} {bare * 1e3:8.1f} ms {plain * 1e3:8.1f} ms {plain / bare:4.1f}x "
            f"{family * 1e3:8.1f} ms {family / bare:5.1f}x"
        )


if __name__ == "__main__":
    main()
