"""DecoderLM against transformers on the real SmolLM2-135M weights: speed, and the same tokens.

Measures, for both implementations on the same device and threads, interleaved round by round
(`lmcourse.timing.compare`, medians after a warm-up run):
  - one forward pass over CONTEXT tokens of the evaluation text;
  - greedy generation of 1 and of NEW tokens after those CONTEXT tokens with the key-value
    cache, and of NEW tokens without it (every step re-reads the whole sequence);
  - the memory-bandwidth floor: the time to read every weight matrix once with a plain
    matrix-vector product, which no decoding step can beat, timed round by round beside the
    cached generations so that a change in the machine's load moves both;
  - our fast decoding path (`lmcourse.fastdecode`: fused projections, fewer small operations)
    on the same cached generations;
  - the operator calls of one cached decoding step on each side (torch.profiler): the per-step
    overhead above the floor, counted, which a busy machine cannot blur as it blurs times;
  - our model in bfloat16 (half the bytes, half the floor): its decoding step, its loss on the
    evaluation text and its greedy tokens against float32's;
and prints the ratio ours/transformers, tokens per second, one cached decoding step as a
multiple of the floor (transformers', ours, our fast path), and whether the generated tokens
are identical.

    python benchmarks/forward.py                       # 2-core CPU: about 10 minutes
    python benchmarks/forward.py --device cuda
    python benchmarks/forward.py --tokens 64 --new-tokens 8 --repeats 1   # a quick look
    python benchmarks/forward.py --compile             # the fast path through torch.compile

Targets: forward ratio <= 1.1; cached generation at least 10x faster than uncached; the fast
path's cached decoding step within 1.25x of the floor, with the same tokens as transformers.
"""

from __future__ import annotations

import argparse
import copy

import torch
from lmcourse import evaluate, from_transformers, text, timing
from lmcourse.fastdecode import FastDecoder
from lmcourse.pretrained import load_smollm2_transformers, load_tokenizer
from transformers import GenerationConfig

# The floor is timed as this many reads in a row, beside each round of generations: one read
# (tens of milliseconds) is short enough for a single interruption to double it.
FLOOR_READS = 8


def floor_run(model) -> tuple:
    """(run, bytes): one timed run of the floor, FLOOR_READS reads of every weight matrix of
    `model` in a row (divide its time by FLOOR_READS), and the bytes one read reads."""
    read, nbytes = timing.floor_reader(model)
    return (lambda: [read() for _ in range(FLOOR_READS)]), nbytes


def bfloat16_report(ours, ids, n, repeats, threads, sync, floor32_s, tokens32) -> None:
    """Our model in bfloat16: half the bytes, so half the floor. Its decoding step against its
    own floor and float32's, its loss on the evaluation text against float32's, and how many
    of the n greedy tokens it shares with float32 (up to the first that differs and in all)."""
    low = copy.deepcopy(ours).to(torch.bfloat16)
    read_floor, floor_bytes = floor_run(low)
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
        f"cached decoding step {1e3 * step:.1f} ms ({step / floor_s:.2f}x its floor, "
        f"{step / floor32_s:.2f}x the float32 floor){'  (busy machine)' if steps.busy else ''}"
    )
    print(
        f"bfloat16: loss on 1,024 tokens of the evaluation text {loss16:.4f} against float32's "
        f"{loss32:.4f}; greedy tokens equal to float32's: the first {prefix} of {n}, "
        f"{sum(same)} of {n} in all"
    )


def operator_calls(fn) -> int:
    """The operator calls (outermost aten calls, as torch.profiler records them) that fn()
    makes: a measure of the per-step overhead that, unlike a time, a busy machine leaves alone."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()

    def outermost(event):
        parent = event.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        return parent is None

    return sum(1 for e in prof.events() if e.name.startswith("aten::") and outermost(e))


def step_operator_calls(theirs, ours, fast, ids) -> dict[str, int]:
    """Operator calls of one cached decoding step after the context `ids`, for each side."""
    token = ids[:, -1:]
    with torch.inference_mode():
        past = theirs(ids, use_cache=True).cache
        counts = {"transformers": operator_calls(lambda: theirs(token, cache=past))}
        cache = ours.new_cache(ids.shape[0], ids.shape[1] + 1)
        ours(ids, cache=cache)
        counts["ours"] = operator_calls(lambda: ours(token, cache=cache))
    cache = ours.new_cache(ids.shape[0], ids.shape[1] + 2)  # outside inference mode, as a
    fast.prefill(ids, cache)  # compiled step needs
    fast.step(token, cache)  # a compiled step compiles on its first call: not counted
    cache.length -= 1
    counts["fast"] = operator_calls(lambda: fast.step(token, cache))
    return counts


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
        "--compile",
        action="store_true",
        help="the fast path compiled (FastDecoder(compiled=True)): about a "
        "minute more, before timing",
    )
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is available")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)

    theirs = load_smollm2_transformers().to(device)
    ours = from_transformers(theirs).eval().to(device)
    fast = FastDecoder(ours, compiled=args.compile)
    read_floor, floor_bytes = floor_run(ours)
    ids = text.token_ids(load_tokenizer(), args.tokens).to(device)  # [1, tokens]
    n = args.new_tokens
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

    def fast_generate(new=n):
        return fast.generate(ids, new)

    threads = None  # torch's setting: --threads, or every core
    sync = torch.cuda.synchronize if device.type == "cuda" else None
    print(
        f"SmolLM2-135M-Instruct, float32, {device}, {torch.get_num_threads()} CPU threads, "
        f"torch {torch.__version__}; {args.tokens} tokens of context, {n} generated"
        f"{'; the fast path compiled' if args.compile else ''}"
    )
    rows, outputs = [], {}
    cases = [  # name, {contestant: function}, runs, tokens produced
        (
            f"forward, {args.tokens} tokens",
            {"transformers": hf_forward, "ours": our_forward},
            args.repeats,
            args.tokens,
        ),
        (
            "generate 1, cache",
            {
                "transformers": lambda: hf_generate(True, 1),
                "ours": lambda: our_generate(True, 1),
                "fast": lambda: fast_generate(1),
            },
            args.repeats,
            1,
        ),
        (
            f"generate {n}, cache",
            {
                "transformers": lambda: hf_generate(True),
                "ours": lambda: our_generate(True),
                "fast": fast_generate,
            },
            args.repeats,
            n,
        ),
        (
            f"generate {n}, no cache",
            {"transformers": lambda: hf_generate(False), "ours": lambda: our_generate(False)},
            args.uncached_repeats,
            n,
        ),
    ]
    floor_s = None
    for name, contestants, repeats, count in cases:
        outputs[name] = {}

        def keep(fn, side, name=name):
            return lambda: outputs[name].__setitem__(side, fn())

        timed = {side: keep(fn, side) for side, fn in contestants.items()}
        if name == f"generate {n}, cache":  # the floor, round by round beside these runs
            timed["floor"] = read_floor
        result = timing.compare(timed, repeats=repeats, threads=threads, sync=sync)
        if "floor" in timed:
            floor_s = result.median_of("floor") / FLOOR_READS
        rows.append(
            (
                name,
                repeats,
                {side: result.median_of(side) for side in contestants},
                count,
                result.busy,
            )
        )
        print(f"  measured {name}", flush=True)

    print()
    print(
        f"{'':<26}{'runs':>5}{'transformers s':>16}{'ours s':>10}{'fast s':>10}{'ours/tf':>9}"
        f"{'fast/tf':>9}{'tf tok/s':>10}{'our tok/s':>11}{'fast tok/s':>12}"
    )
    for name, repeats, s, count, busy in rows:
        hf_s, our_s, fast_s = s["transformers"], s["ours"], s.get("fast")
        fast_cells = (
            (f"{fast_s:>10.3f}", f"{fast_s / hf_s:>9.2f}", f"{count / fast_s:>12.1f}")
            if fast_s
            else (f"{'':>10}", f"{'':>9}", f"{'':>12}")
        )
        print(
            f"{name:<26}{repeats:>5}{hf_s:>16.3f}{our_s:>10.3f}{fast_cells[0]}"
            f"{our_s / hf_s:>9.2f}{fast_cells[1]}{count / hf_s:>10.1f}{count / our_s:>11.1f}"
            f"{fast_cells[2]}{'  (busy machine)' if busy else ''}"
        )
    by_name = {row[0]: row[2] for row in rows}
    one, many, plain = (
        by_name[k] for k in ("generate 1, cache", f"generate {n}, cache", f"generate {n}, no cache")
    )
    step = {side: (many[side] - one[side]) / (n - 1) for side in many}
    print(
        f"\nfloor: reading the {floor_bytes / 1e6:,.0f} MB of weight matrices once "
        f"(x @ W, W stored [in, out]) takes {1e3 * floor_s:.1f} ms, "
        f"{floor_bytes / floor_s / 1e9:.1f} GB/s"
    )
    print(f"one cached decoding step ((generate {n} - generate 1) / {n - 1}):")
    for side, label in (
        ("transformers", "transformers"),
        ("ours", "ours, reference blocks"),
        ("fast", "ours, fast path"),
    ):
        print(
            f"  {label:<24}{1e3 * step[side]:>7.1f} ms  {step[side] / floor_s:>5.2f}x the floor"
            f"  {step['transformers'] / step[side]:>5.2f}x transformers' tokens/s"
        )
    calls = step_operator_calls(theirs, ours, fast, ids)
    print(
        "operator calls in one cached decoding step (torch.profiler, outermost aten calls): "
        + ", ".join(f"{side} {count}" for side, count in calls.items())
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
        f"generated tokens identical (transformers, ours and our fast path, with and without "
        f"cache): {same}"
    )
    if not same:
        raise SystemExit("generated tokens differ")


if __name__ == "__main__":
    main()
