"""DecoderLM against transformers on the real SmolLM2-135M weights: speed, and the same tokens.

Measures, for both implementations on the same device and threads, interleaved round by round
(`lmcourse.timing.compare`, medians after a warm-up run):
  - one forward pass over CONTEXT tokens of the evaluation text;
  - greedy generation of 1 and of NEW tokens after those CONTEXT tokens with the key-value
    cache, and of NEW tokens without it (every step re-reads the whole sequence);
  - our fast decoding path (`lmcourse.fastdecode`: fused projections, the products cut across
    the threads, fewer small operations), eager and compiled, on the same cached generations;
  - the memory-bandwidth floor: the time to stream every weight a decoding step reads once
    (`timing.floor_reader`, a sum over each tensor), which no decoding step can beat, and the
    same matrices read by the matrix-vector kernel alone (`timing.matvec_reader`, x @ W per
    matrix), both timed round by round beside the cached generations so that a change in the
    machine's load moves them all;
  - the operator calls of one cached decoding step on each side (torch.profiler): the per-step
    overhead above the floor, counted, which a busy machine cannot blur as it blurs times;
  - how far each fast path's logits of one cached step are from the reference blocks'
    (rounding), how long the compiled fast path takes to compile, and how many of its own
    tensors its guards leave out (`FastDecoder._compiled_step`);
  - our model in bfloat16 (half the bytes, half the floor): its decoding step, its loss on the
    evaluation text and its greedy tokens against float32's;
and prints each time and its ratio to transformers, then one cached decoding step of each side
in milliseconds, as a multiple of the floor and in tokens per second against transformers, and
whether the generated tokens are identical.

    python benchmarks/forward.py                       # minutes on a CPU (it prints how many)
    python benchmarks/forward.py --device cuda
    python benchmarks/forward.py --tokens 64 --new-tokens 8 --repeats 1   # a quick look
    python benchmarks/forward.py --no-compile          # without the compiled fast path

The compiled fast path needs a C++ compiler on a CPU (torch.compile's inductor backend).
Targets: forward ratio <= 1.1; cached generation at least 10x faster than uncached; the fast
path's cached decoding step close to the floor, with the same tokens as transformers.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import shutil
import sys
import time

import torch
from lmcourse import cache_bytes, evaluate, from_transformers, text, timing
from lmcourse.fastdecode import FastDecoder
from lmcourse.pretrained import load_smollm2_transformers, load_tokenizer
from transformers import GenerationConfig

# The floors are timed as this many reads in a row, beside each round of generations: one read
# (tens of milliseconds) is short enough for a single interruption to double it.
FLOOR_READS = 8


def repeated(reader, model) -> tuple:
    """(run, bytes): one timed run of `reader`'s read of `model` (timing.floor_reader or
    matvec_reader), FLOOR_READS reads in a row (divide its time by FLOOR_READS), and the bytes
    one read reads."""
    read, nbytes = reader(model)
    return (lambda: [read() for _ in range(FLOOR_READS)]), nbytes


def noisy(result) -> str:
    """'  (busy machine: name spread, ...)' naming each contestant of `result` whose spread is
    above timing.BUSY_SPREAD, or '' when the machine was quiet for all of them."""
    names = [f"{t.name} {t.spread:.0%}" for t in result.timings if t.spread > timing.BUSY_SPREAD]
    return f"  (busy machine: spread {', '.join(names)})" if names else ""


def bfloat16_report(ours, ids, n, repeats, threads, sync, floor32_s, tokens32) -> None:
    """Our model in bfloat16: half the bytes, so half the floor. Its decoding step against its
    own floor and float32's, its loss on the evaluation text against float32's, and how many
    of the n greedy tokens it shares with float32 (up to the first that differs and in all)."""
    low = copy.deepcopy(ours).to(torch.bfloat16)
    read_floor, floor_bytes = repeated(timing.floor_reader, low)
    steps = timing.compare(
        {
            "1": lambda: low.generate(ids, 1),
            "n": lambda: low.generate(ids, n),
            "floor": read_floor,
        },
        repeats=repeats,
        threads=threads,
        sync=sync,
    )
    step = (steps.median_of("n") - steps.median_of("1")) / (n - 1)
    floor_s = steps.median_of("floor") / FLOOR_READS
    tokens = low.generate(ids, n)
    new32, new16 = tokens32[0, ids.shape[1] :], tokens[0, ids.shape[1] :]
    same = (new32 == new16).tolist()
    prefix = same.index(False) if False in same else len(same)
    evaluation = text.token_ids(load_tokenizer(), 1024).to(ids.device)
    loss32, loss16 = evaluate.loss(ours, evaluation), evaluate.loss(low, evaluation)
    print(
        f"\nbfloat16: weights {floor_bytes / 1e6:,.0f} MB, floor {1e3 * floor_s:.1f} ms; one "
        f"cached decoding step (reference blocks) {1e3 * step:.1f} ms ({step / floor_s:.2f}x "
        f"its floor, {step / floor32_s:.2f}x the float32 floor)"
        f"{noisy(steps)}"
    )
    print(
        f"bfloat16: loss on 1,024 tokens of the evaluation text {loss16:.4f} against float32's "
        f"{loss32:.4f}; greedy tokens equal to float32's: the first {prefix} of {n}, "
        f"{sum(same)} of {n} in all"
    )


@contextlib.contextmanager
def stderr_silenced():
    """File descriptor 2 pointed at /dev/null: torch.profiler's engine (kineto) writes a line of
    its own there at every start and stop, below Python's sys.stderr."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def operator_calls(fn) -> int:
    """The operator calls (outermost aten calls, as torch.profiler records them) that fn()
    makes: a measure of the per-step overhead that, unlike a time, a busy machine leaves alone."""
    from torch.profiler import ProfilerActivity, profile

    with stderr_silenced(), profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()

    def outermost(event):
        parent = event.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        return parent is None

    return sum(1 for e in prof.events() if e.name.startswith("aten::") and outermost(e))


def step_operator_calls(theirs, ours, fast_paths, ids) -> dict[str, int]:
    """Operator calls of one cached decoding step after the context `ids`, for each side."""
    token = ids[:, -1:]
    with torch.inference_mode():
        past = theirs(ids, use_cache=True).cache
        counts = {"transformers": operator_calls(lambda: theirs(token, cache=past))}
        cache = ours.new_cache(ids.shape[0], ids.shape[1] + 1)
        ours(ids, cache=cache)
        counts["ours"] = operator_calls(lambda: ours(token, cache=cache))
    for side, fast in fast_paths.items():
        cache = ours.new_cache(ids.shape[0], ids.shape[1] + 2)  # outside inference mode, as
        fast.prefill(ids, cache)  # a compiled step needs
        fast.step(token, cache)  # a compiled step compiles on its first call: not counted
        cache.length -= 1
        counts[side] = operator_calls(lambda fast=fast, cache=cache: fast.step(token, cache))
    return counts


def step_logit_differences(ours, fast_paths, ids) -> dict[str, float]:
    """Max |logit difference| of one cached decoding step after the context `ids`, each fast
    path against the reference blocks: rounding only, from sums taken in another order."""
    token = ids[:, -1:]
    with torch.inference_mode():
        cache = ours.new_cache(ids.shape[0], ids.shape[1] + 1)
        ours(ids, cache=cache)
        want = ours(token, cache=cache)
    differences = {}
    for side, fast in fast_paths.items():
        cache = ours.new_cache(ids.shape[0], ids.shape[1] + 1)  # outside inference mode
        fast.prefill(ids, cache)
        differences[side] = (fast.step(token, cache) - want).abs().max().item()
    return differences


LABELS = {
    "transformers": "transformers",
    "ours": "ours, reference blocks",
    "fast": "ours, fast path",
    "compiled": "ours, fast path compiled",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    parser.add_argument("--tokens", type=int, default=512, help="context tokens (default 512)")
    parser.add_argument("--new-tokens", type=int, default=64, help="generated tokens (default 64)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs (default 5)")
    parser.add_argument(
        "--uncached-repeats",
        type=int,
        default=1,
        help="timed runs without the cache, each minutes long on CPU (default 1)",
    )
    parser.add_argument(
        "--no-compile",
        action="store_true",
        help="leave out the compiled fast path (FastDecoder(compiled=True)), which compiles "
        "before timing (the benchmark prints how long) and needs a C++ compiler on a CPU",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is available")
    if args.new_tokens < 2:
        parser.error(
            f"--new-tokens must be at least 2 (a step is a difference), got {args.new_tokens}"
        )
    compilers = ("g++", "c++", "clang++")
    if not args.no_compile and args.device == "cpu" and not any(map(shutil.which, compilers)):
        parser.error(
            "the compiled fast path needs a C++ compiler on a CPU (none of "
            f"{', '.join(compilers)} is on PATH): install g++, or pass --no-compile"
        )
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)

    theirs = load_smollm2_transformers().to(device)
    ours = from_transformers(theirs).eval().to(device)
    fast_paths = {"fast": FastDecoder(ours)}
    if not args.no_compile:
        fast_paths["compiled"] = FastDecoder(ours, compiled=True)
    read_floor, floor_bytes = repeated(timing.floor_reader, ours)
    read_matvec, _ = repeated(timing.matvec_reader, ours)
    ids = text.token_ids(load_tokenizer(), args.tokens).to(device)  # [1, tokens]
    n = args.new_tokens
    if "compiled" in fast_paths:  # its first step compiles: timed here, before the rounds
        start = time.perf_counter()
        fast_paths["compiled"].generate(ids, 2)
        compile_s = time.perf_counter() - start
    # Greedy, exactly n tokens: no end-of-sequence stop, so both sides produce the same count.
    greedy = GenerationConfig(
        do_sample=False,
        max_new_tokens=n,
        min_new_tokens=n,
        eos_token_id=None,
        pad_token_id=theirs.config.pad_token_id,
    )

    def hf_forward():
        with torch.inference_mode():
            return theirs(ids, use_cache=False).logits

    def our_forward():
        with torch.inference_mode():
            return ours(ids)

    def hf_generate(use_cache, new=n):
        config = GenerationConfig(
            **{
                **greedy.to_diff_dict(),
                "use_cache": use_cache,
                "max_new_tokens": new,
                "min_new_tokens": new,
            }
        )
        with torch.inference_mode():
            return theirs.generate(ids, generation_config=config)

    def our_generate(use_cache, new=n):
        return ours.generate(ids, max_new_tokens=new, use_cache=use_cache)

    def cached(new):
        return {
            "transformers": lambda: hf_generate(True, new),
            "ours": lambda: our_generate(True, new),
            **{side: (lambda f=f: f.generate(ids, new)) for side, f in fast_paths.items()},
        }

    threads = None  # torch's setting: --threads, or every core
    sync = torch.cuda.synchronize if device.type == "cuda" else None
    print(
        f"SmolLM2-135M-Instruct, float32, {device}, {torch.get_num_threads()} CPU threads, "
        f"torch {torch.__version__}; {args.tokens} tokens of context, {n} generated"
    )
    rows, outputs = [], {}
    cases = [  # name, {contestant: function}, runs
        (
            f"forward, {args.tokens} tokens",
            {"transformers": hf_forward, "ours": our_forward},
            args.repeats,
        ),
        ("generate 1, cache", cached(1), args.repeats),
        (f"generate {n}, cache", cached(n), args.repeats),
        (
            f"generate {n}, no cache",
            {"transformers": lambda: hf_generate(False), "ours": lambda: our_generate(False)},
            args.uncached_repeats,
        ),
    ]
    for name, contestants, repeats in cases:
        outputs[name] = {}

        def keep(fn, side, name=name):
            return lambda: outputs[name].__setitem__(side, fn())

        timed = {side: keep(fn, side) for side, fn in contestants.items()}
        if name == f"generate {n}, cache":  # the floors, round by round beside these runs
            timed |= {"floor": read_floor, "matvec": read_matvec}
        result = timing.compare(timed, repeats=repeats, threads=threads, sync=sync)
        if "floor" in timed:
            floor_s = result.median_of("floor") / FLOOR_READS
            matvec_s = result.median_of("matvec") / FLOOR_READS
        rows.append(
            (name, repeats, {side: result.median_of(side) for side in contestants}, noisy(result))
        )
        print(f"  measured {name}", flush=True)

    sides = ["transformers", "ours", *fast_paths]
    print(f"\n{'':<26}{'runs':>5}" + "".join(f"{side:>20}" for side in sides))
    for name, repeats, s, busy_note in rows:
        cells = [
            f"{s[side]:>9.3f} s"
            + (f" {s[side] / s['transformers']:5.2f}x" if side != "transformers" else " " * 7)
            if side in s
            else ""
            for side in sides
        ]
        print(f"{name:<26}{repeats:>5}" + "".join(f"{c:>20}" for c in cells) + busy_note)
    print("(seconds, and the ratio to transformers' seconds)")

    by_name = {row[0]: row[2] for row in rows}
    one, many, plain = (
        by_name[k] for k in ("generate 1, cache", f"generate {n}, cache", f"generate {n}, no cache")
    )
    step = {side: (many[side] - one[side]) / (n - 1) for side in many}
    context = args.tokens + n // 2  # the mean context of the steps
    kv = cache_bytes(ours.spec, context, kv_bytes=4)
    print(
        f"\nfloor: streaming the {floor_bytes / 1e6:,.0f} MB of weights a decoding step reads "
        f"once (a sum over each tensor) takes {1e3 * floor_s:.1f} ms, "
        f"{floor_bytes / floor_s / 1e9:.1f} GB/s"
    )
    print(
        f"the matrix-vector kernel alone (x @ W, each matrix stored [in, out]) reads them in "
        f"{1e3 * matvec_s:.1f} ms, {matvec_s / floor_s:.2f}x the floor"
    )
    print(
        f"a step also reads its cache: {kv / 1e6:.1f} MB at {context} tokens "
        f"({kv / floor_bytes:.1%} of the weights), not in the floor"
    )
    print(f"one cached decoding step ((generate {n} - generate 1) / {n - 1}):")
    for side in sides:
        print(
            f"  {LABELS[side]:<26}{1e3 * step[side]:>7.1f} ms  {step[side] / floor_s:>5.2f}x the "
            f"floor  {1 / step[side]:>5.1f} tokens/s  {step['transformers'] / step[side]:>5.2f}x "
            "transformers' tokens/s"
        )
    calls = step_operator_calls(theirs, ours, fast_paths, ids)
    print(
        "operator calls in one cached decoding step (torch.profiler, outermost aten calls): "
        + ", ".join(f"{side} {count}" for side, count in calls.items())
    )
    differences = step_logit_differences(ours, fast_paths, ids)
    print(
        "max |logit difference| of one cached step against the reference blocks: "
        + ", ".join(f"{side} {difference:.1e}" for side, difference in differences.items())
    )
    if "compiled" in fast_paths:
        compiled = fast_paths["compiled"]
        print(
            f"compiled fast path: its first step took {compile_s:.0f} s (compiling); its "
            f"guards leave out {len(compiled._own_tensors())} tensors of its own, each a check "
            "before every step"
        )
    print(
        f"cache speed-up (no cache / cache): transformers "
        f"{plain['transformers'] / many['transformers']:.1f}x, "
        f"ours {plain['ours'] / many['ours']:.1f}x"
    )

    bfloat16_report(
        ours, ids, n, args.repeats, threads, sync, floor_s, outputs[f"generate {n}, cache"]["ours"]
    )

    hf_logits, our_logits = (outputs[rows[0][0]][side] for side in ("transformers", "ours"))
    print(f"forward: max |logit difference| {(hf_logits - our_logits).abs().max().item():.2e}")
    generated = [out for name, *_ in rows[2:] for out in outputs[name].values()]
    same = all(torch.equal(generated[0], other) for other in generated[1:])
    print(
        f"generated tokens identical (transformers, ours and our fast paths, with and without "
        f"cache): {same}"
    )
    print(f"benchmark wall time: {time.perf_counter() - started:.0f} s")
    if not same:
        raise SystemExit("generated tokens differ")


if __name__ == "__main__":
    main()
