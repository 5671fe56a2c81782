"""DecoderLM against transformers on the real SmolLM2-135M weights: speed, and the same tokens.

Measures, for both implementations on the same device and threads:
  - one forward pass over CONTEXT tokens of the evaluation text;
  - greedy generation of NEW tokens after those CONTEXT tokens, with the key-value cache
    and without it (every step re-reads the whole sequence);
and prints the median of several runs (after a warm-up run), the ratio ours/transformers,
tokens per second, and whether the generated tokens are identical.

    python benchmarks/forward.py                       # 2-core CPU: about 10 minutes
    python benchmarks/forward.py --device cuda
    python benchmarks/forward.py --tokens 64 --new-tokens 8 --repeats 1   # a quick look

Targets (issue "Block implementations..."): forward ratio <= 1.1; cached generation at least
10x faster than uncached; our cached decoding at least 2x transformers' tokens/s, same tokens.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from lmcourse import DecoderLM, text
from lmcourse.pretrained import load_smollm2_transformers, load_tokenizer
from transformers import GenerationConfig


def timed(fn, repeats: int, device: torch.device):
    """(median seconds over `repeats` runs after one warm-up run, result of the last run)."""
    result = fn()  # warm-up
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        result = fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    parser.add_argument("--tokens", type=int, default=512, help="context tokens (default 512)")
    parser.add_argument("--new-tokens", type=int, default=64, help="generated tokens (default 64)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs (default 5)")
    parser.add_argument("--uncached-repeats", type=int, default=1,
                        help="timed runs without the cache, each minutes long on CPU (default 1)")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is available")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)

    theirs = load_smollm2_transformers().to(device)
    ours = DecoderLM.from_transformers(theirs).eval().to(device)
    ids = text.token_ids(load_tokenizer(), args.tokens).to(device)  # [1, tokens]
    n = args.new_tokens
    # Greedy, exactly n tokens: no end-of-sequence stop, so both sides produce the same count.
    greedy = GenerationConfig(do_sample=False, max_new_tokens=n, min_new_tokens=n,
                              eos_token_id=None, pad_token_id=theirs.config.pad_token_id)

    def hf_forward():
        with torch.inference_mode():
            return theirs(ids, use_cache=False).logits

    def our_forward():
        with torch.inference_mode():
            return ours(ids)

    def hf_generate(use_cache):
        config = GenerationConfig(**{**greedy.to_diff_dict(), "use_cache": use_cache})
        with torch.inference_mode():
            return theirs.generate(ids, generation_config=config)

    def our_generate(use_cache):
        return ours.generate(ids, max_new_tokens=n, use_cache=use_cache)

    print(f"SmolLM2-135M-Instruct, float32, {device}, {torch.get_num_threads()} CPU threads, "
          f"torch {torch.__version__}; {args.tokens} tokens of context, {n} generated")
    rows, outputs = [], {}
    cases = [
        (f"forward, {args.tokens} tokens", hf_forward, our_forward, args.repeats, args.tokens),
        (f"generate {n}, cache", lambda: hf_generate(True), lambda: our_generate(True),
         args.repeats, n),
        (f"generate {n}, no cache", lambda: hf_generate(False), lambda: our_generate(False),
         args.uncached_repeats, n),
    ]
    for name, hf_fn, our_fn, repeats, count in cases:
        hf_s, hf_out = timed(hf_fn, repeats, device)
        our_s, our_out = timed(our_fn, repeats, device)
        outputs[name] = (hf_out, our_out)
        rows.append((name, repeats, hf_s, our_s, count))
        print(f"  measured {name}", flush=True)

    print()
    print(f"{'':<26}{'runs':>5}{'transformers s':>16}{'ours s':>10}{'ours/tf':>9}"
          f"{'tf tok/s':>10}{'our tok/s':>11}")
    for name, repeats, hf_s, our_s, count in rows:
        print(f"{name:<26}{repeats:>5}{hf_s:>16.3f}{our_s:>10.3f}{our_s / hf_s:>9.2f}"
              f"{count / hf_s:>10.1f}{count / our_s:>11.1f}")
    (_, _, hf_cached, our_cached, _), (_, _, hf_plain, our_plain, _) = rows[1], rows[2]
    print(f"\ncache speed-up (no cache / cache): transformers {hf_plain / hf_cached:.1f}x, "
          f"ours {our_plain / our_cached:.1f}x")
    print(f"our cached decoding vs transformers': {hf_cached / our_cached:.2f}x the tokens/s")

    hf_logits, our_logits = outputs[rows[0][0]]
    print(f"forward: max |logit difference| {(hf_logits - our_logits).abs().max().item():.2e}")
    generated = [out for name, _, _, _, _ in rows[1:] for out in outputs[name]]
    same = all(torch.equal(generated[0], other) for other in generated[1:])
    print(f"generated tokens identical (transformers and ours, with and without cache): {same}")
    if not same:
        raise SystemExit("generated tokens differ")


if __name__ == "__main__":
    main()
