"""The course's evaluation text: the documentation that ships inside CPython.

`pydoc_data.topics.topics` maps 79 help topics ("assert", "assignment", ... "yield") to the
reference manual's text for them: about 465,000 characters of real prose and code that nobody
on the course wrote, present on every Python install, no download. `load()` joins the topics in
sorted order, so the text (and every number computed on it) is the same on every machine that
runs the same Python version (3.11; another patch release may ship slightly different docs).

Token slices are fixed, so that a loss printed in a lesson is reproducible:

    ids = token_ids(tokenizer, 1024)                     # [1, 1024], the first evaluation tokens
    ids = token_ids(tokenizer, 512, offset=TRAIN_TOKEN_OFFSET) # a slice of the training region

Tokens [EVAL_TOKEN_OFFSET, EVAL_TOKEN_OFFSET + EVAL_TOKENS) are the evaluation region: lessons
measure SmolLM2's losses there; TRAIN_TOKEN_OFFSET marks where a model trained on this text should
start. The small character-level model the course trains itself (`lmcourse.tinygpt`) splits the
text in characters instead: it is evaluated on the first tinygpt.TRAIN_CHAR_OFFSET characters and
trained only on the rest, so its training and evaluation never overlap.
"""

from __future__ import annotations

import functools

import torch

EVAL_TOKEN_OFFSET = 0  # where every evaluation slice of the course starts
EVAL_TOKENS = 8192  # size of the evaluation region
TRAIN_TOKEN_OFFSET = EVAL_TOKEN_OFFSET + EVAL_TOKENS  # training slices start here, run to the end


@functools.cache
def load() -> str:
    """The evaluation text: every pydoc topic, in sorted order of the topic names."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[name] for name in sorted(topics))


@functools.lru_cache(maxsize=4)
def _all_token_ids(tokenizer) -> torch.Tensor:
    """The whole text tokenised once per tokenizer, without special tokens: [n]."""
    ids = tokenizer(load(), add_special_tokens=False)["input_ids"]
    return torch.tensor(ids, dtype=torch.long)


def token_count(tokenizer) -> int:
    """Number of tokens in the whole text (113,108 with the SmolLM2 tokenizer on Python 3.11.7)."""
    return _all_token_ids(tokenizer).numel()


def token_ids(tokenizer, n_tokens: int, offset: int = EVAL_TOKEN_OFFSET) -> torch.LongTensor:
    """Tokens [offset, offset + n_tokens) of the text as a batch of one: LongTensor [1, n_tokens].

    The result is a fresh tensor: editing it does not change later slices.
    """
    total = token_count(tokenizer)
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 1:
        raise ValueError(f"n_tokens must be a positive int, got {n_tokens!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset < total:
        raise ValueError(f"offset must be an int in [0, {total}), got {offset!r}")
    if offset + n_tokens > total:
        raise ValueError(
            f"n_tokens={n_tokens} from offset={offset} runs past the end of the text "
            f"({total} tokens): at most {total - offset} tokens fit from that offset"
        )
    return _all_token_ids(tokenizer)[offset : offset + n_tokens].clone().unsqueeze(0)
