"""A tiny GPT-2 that the course trains itself: learned positions you can watch break.

GPT-2 adds one learned row per position to each token; a row that training never reached
keeps its random initial values. This model is GPT-2's architecture at toy size (the course's
`DecoderLM` with a GPT-2 spec: LayerNorm, GELU MLP, biases, tied token table, learned
positions), trained for about a minute on 2 CPU cores on the course's text (`lmcourse.text`).
Its tokens are CHARACTERS: the vocabulary is the sorted set of characters of the whole text,
so the output layer is small and a minute of training buys a thousand steps.

    model = load()                          # the trained weights shipped with the course
    ids = evaluation_ids(512)               # [8, 64]: 512 characters as 8 windows of CONTEXT
    loss(model, ids)                        # positions 0..63: rows seen in training
    loss(model, ids, 500 + positions)       # rows 500..563: rows training never reached

Losses (`lmcourse.evaluate.loss`) are in nats per character.

Characters [EVAL_CHAR_OFFSET, TRAIN_CHAR_OFFSET) of the text are kept for evaluation; training
windows are drawn from characters TRAIN_CHAR_OFFSET.. only. Every training window is CONTEXT
characters long, so rows 0..CONTEXT-1 of the position table are trained and rows
CONTEXT..POSITIONS-1 never receive a gradient; training uses AdamW without weight decay, so
those rows stay exactly at their initial values. Short windows are what make the model lean on
its positions: each trained row gets a gradient from every window, so within a minute the rows
learn to tell "one character back" from "five back", and the model falls apart without them.

Training is seeded: the same arguments give the same weights on the same machine, but not
bit for bit on another CPU, whose float kernels round differently over a thousand steps. So the
course ships the weights of `train()` (seed 0) in lmcourse/data/tinygpt.safetensors, with the
settings that produced them in tinygpt.json beside it, and every lesson loads those: the same
numbers on every machine. `train()` retrains from scratch in about a minute;
`python -m lmcourse.tinygpt` rewrites the shipped files.
"""

from __future__ import annotations

import functools
import json
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from . import text
from .blocks.model import DecoderLM
from .families import as_spec
from .spec import ModelSpec

WIDTH, LAYERS, HEADS = 64, 2, 4
CONTEXT = 64  # characters per training window: position rows 0..63 are trained
POSITIONS = 1024  # rows of the position table, as in GPT-2: room for a shift of 500
BATCH = 32  # windows per step
STEPS = 1000
LEARNING_RATE = 1e-2
WARMUP = 20
EVAL_CHAR_OFFSET = 0  # evaluation slices start at this character of the text
TRAIN_CHAR_OFFSET = 20_000  # training windows lie in characters 20,000.. (disjoint from eval)
SHIPPED = Path(__file__).parent / "data" / "tinygpt.safetensors"  # train() with seed 0


@functools.cache
def vocabulary() -> str:
    """The model's tokens: every distinct character of the course's text, in sorted order."""
    return "".join(sorted(set(text.load())))


@functools.cache
def _index() -> dict[str, int]:
    return {ch: i for i, ch in enumerate(vocabulary())}


def encode(s: str) -> torch.LongTensor:
    """A string as a batch of one: LongTensor [1, len(s)] of character ids."""
    if not isinstance(s, str) or not s:
        raise ValueError(f"s must be a non-empty str, got {s!r:.60}")
    index = _index()
    unknown = sorted(set(s) - index.keys())
    if unknown:
        raise ValueError(
            f"s contains characters outside the vocabulary: {unknown[:10]} "
            f"(valid: the {len(index)} characters of tinygpt.vocabulary())"
        )
    return torch.tensor([[index[ch] for ch in s]], dtype=torch.long)


def decode(ids: torch.Tensor) -> str:
    """Character ids [n] or [1, n] back to the string."""
    if ids.dtype != torch.long or ids.dim() not in (1, 2) or (ids.dim() == 2 and len(ids) != 1):
        raise ValueError(
            f"ids must be a LongTensor [n] or [1, n], got {ids.dtype} of shape {tuple(ids.shape)}"
        )
    chars = vocabulary()
    flat = ids.flatten().tolist()
    bad = [i for i in flat if not 0 <= i < len(chars)]
    if bad:
        raise ValueError(f"ids must be in [0, {len(chars)}), got {bad[:10]}")
    return "".join(chars[i] for i in flat)


def evaluation_ids(n: int = 512) -> torch.LongTensor:
    """The fixed evaluation slice: characters EVAL_CHAR_OFFSET..EVAL_CHAR_OFFSET+n, encoded and cut
    into windows of the model's context, in order: LongTensor [n // CONTEXT, CONTEXT]."""
    limit = (TRAIN_CHAR_OFFSET - EVAL_CHAR_OFFSET) // CONTEXT * CONTEXT
    if isinstance(n, bool) or not isinstance(n, int) or not CONTEXT <= n <= limit or n % CONTEXT:
        raise ValueError(
            f"n must be a multiple of CONTEXT ({CONTEXT}) in [{CONTEXT}, {limit}] "
            f"(the evaluation region), got {n!r}"
        )
    ids = encode(text.load()[EVAL_CHAR_OFFSET : EVAL_CHAR_OFFSET + n])  # [1, n]
    return ids.view(n // CONTEXT, CONTEXT)


def unigram_loss(input_ids: torch.Tensor) -> float:
    """The baseline a model must beat: mean cross-entropy, in nats per character, of predicting
    input_ids[:, 1:] from character frequencies of the training region alone (add-one
    smoothed), the same targets `lmcourse.evaluate.loss` scores."""
    if input_ids.dim() != 2 or input_ids.shape[1] < 2 or input_ids.dtype != torch.long:
        raise ValueError(
            "input_ids must be a LongTensor [batch, tokens] with at least 2 tokens, "
            f"got {input_ids.dtype} of shape {tuple(input_ids.shape)}"
        )
    data = encode(text.load()[TRAIN_CHAR_OFFSET:])[0]  # [n_train]
    counts = torch.bincount(data, minlength=len(vocabulary())).double() + 1.0  # [vocab]
    log_p = (counts / counts.sum()).log()
    return -log_p[input_ids[:, 1:]].mean().item()


def spec() -> ModelSpec:
    """GPT-2's architecture at toy size, over the character vocabulary."""
    from transformers import GPT2Config

    config = GPT2Config(
        vocab_size=len(vocabulary()),
        n_positions=POSITIONS,
        n_embd=WIDTH,
        n_layer=LAYERS,
        n_head=HEADS,
        bos_token_id=None,
        eos_token_id=None,
    )
    return as_spec(config)


def _learning_rate(step: int, steps: int) -> float:
    """Linear warm-up, then cosine decay to zero."""
    if step < WARMUP:
        return LEARNING_RATE * (step + 1) / WARMUP
    progress = (step - WARMUP) / max(1, steps - WARMUP)
    return LEARNING_RATE * 0.5 * (1.0 + math.cos(math.pi * progress))


def train(steps: int = STEPS, seed: int = 0, verbose: bool = True) -> DecoderLM:
    """Train a fresh model for `steps` steps of BATCH random CONTEXT-character windows."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    data = encode(text.load()[TRAIN_CHAR_OFFSET:])[0]  # [n_train]
    torch.manual_seed(seed)
    model = DecoderLM(spec())
    sampler = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=LEARNING_RATE, betas=(0.9, 0.95), weight_decay=0.0
    )
    start = time.perf_counter()
    model.train()
    for step in range(steps):
        starts = torch.randint(0, len(data) - CONTEXT, (BATCH,), generator=sampler)
        window = torch.stack([data[s : s + CONTEXT + 1] for s in starts.tolist()])
        inputs, targets = window[:, :-1], window[:, 1:]  # [BATCH, CONTEXT] each
        logits = model(inputs)  # [BATCH, CONTEXT, vocab]
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        for group in optimizer.param_groups:
            group["lr"] = _learning_rate(step, steps)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if verbose and (step + 1) % max(1, steps // 4) == 0:
            print(
                f"step {step + 1}/{steps}: training loss {loss.item():.3f} nats/char "
                f"({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
    return model.eval()


def settings(steps: int = STEPS, seed: int = 0) -> dict[str, int | float]:
    """Everything that decides the weights `train(steps, seed)` produces (with the text and
    torch's kernels): recorded beside the shipped weights and checked when they are loaded."""
    return {
        "width": WIDTH,
        "layers": LAYERS,
        "heads": HEADS,
        "context": CONTEXT,
        "positions": POSITIONS,
        "batch": BATCH,
        "steps": steps,
        "learning_rate": LEARNING_RATE,
        "warmup": WARMUP,
        "weight_decay": 0.0,
        "train_offset": TRAIN_CHAR_OFFSET,
        "vocabulary_size": len(vocabulary()),
        "seed": seed,
    }


def save(model: DecoderLM, path: Path, steps: int = STEPS, seed: int = 0) -> None:
    """Write `model` to path (.safetensors) and, beside it (.json), the settings it was trained
    with and the torch version that trained it."""
    from safetensors.torch import save_model

    path = Path(path)
    record = {
        "settings": settings(steps, seed),
        "torch": torch.__version__,
        "trained_by": "lmcourse.tinygpt.train(steps, seed)",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    save_model(model, str(path))
    path.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")


def load(path: Path = SHIPPED) -> DecoderLM:
    """The trained model: by default the weights shipped with the course (the same on every
    machine); `path` reads a model written by `save`. The settings recorded beside the weights
    must be this module's settings: a model trained otherwise is refused, not silently used."""
    from safetensors.torch import load_model

    path = Path(path)
    if not path.is_file() or not path.with_suffix(".json").is_file():
        raise FileNotFoundError(
            f"{path} and its .json record must both exist; write them with "
            "tinygpt.save(model, path) or `python -m lmcourse.tinygpt`"
        )
    recorded = json.loads(path.with_suffix(".json").read_text())["settings"]
    expected = settings(recorded.get("steps", STEPS), recorded.get("seed", 0))
    if recorded != expected:
        changed = sorted(
            k for k in expected.keys() | recorded.keys() if recorded.get(k) != expected.get(k)
        )
        raise ValueError(
            f"{path} was trained with other settings ({', '.join(changed)} differ "
            f"from lmcourse.tinygpt's); retrain it with `python -m lmcourse.tinygpt`"
        )
    model = DecoderLM(spec())
    load_model(model, str(path))
    return model.eval()


if __name__ == "__main__":  # python -m lmcourse.tinygpt: retrain and rewrite the shipped weights
    start = time.perf_counter()
    save(train(), SHIPPED)
    print(f"wrote {SHIPPED} and its .json record in {time.perf_counter() - start:.0f} s")
