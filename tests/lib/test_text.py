"""The evaluation text and its fixed token slices."""

from pydoc_data.topics import topics

import pytest
import torch
from lmcourse import text


def test_text_holds_every_pydoc_topic_in_sorted_order():
    doc = text.load()
    end = 0
    for name in sorted(topics):  # each topic follows the previous one
        start = doc.find(topics[name], end)
        assert start >= 0, f"topic {name!r} is missing, or out of sorted order"
        end = start + len(topics[name])
    assert end == len(doc), f"{len(doc) - end} characters follow the last topic"
    assert doc == text.load()
    # DESIGN: about 465,000 characters
    assert 450_000 < len(doc) < 480_000, f"text has {len(doc):,} characters"


def test_whole_text_is_about_113k_smollm2_tokens(smollm2_tokenizer):
    count = text.token_count(smollm2_tokenizer)
    assert 110_000 < count < 116_000, f"text has {count:,} tokens, DESIGN says about 113,000"


def test_training_region_starts_after_the_evaluation_region():
    assert text.TRAIN_TOKEN_OFFSET >= text.EVAL_TOKEN_OFFSET + text.EVAL_TOKENS


def test_token_slices_are_fixed_consistent_and_fresh(smollm2_tokenizer):
    tok = smollm2_tokenizer
    ids = text.token_ids(tok, 1024)
    assert ids.shape == (1, 1024) and ids.dtype == torch.long
    assert torch.equal(ids, text.token_ids(tok, 1024, offset=text.EVAL_TOKEN_OFFSET))
    inner = text.token_ids(tok, 100, offset=text.EVAL_TOKEN_OFFSET + 200)
    assert torch.equal(inner, ids[:, 200:300]), "a slice at an offset differs from the same tokens"
    ids[0, 0] = -1  # the caller's copy only
    assert text.token_ids(tok, 1)[0, 0] != -1, "editing a slice changed the cached tokens"
    decoded = tok.decode(text.token_ids(tok, 50, offset=5000)[0])
    assert decoded in text.load(), f"decoded slice {decoded[:60]!r}... is not in the text"


def test_last_token_is_reachable_and_one_more_is_refused(smollm2_tokenizer):
    tok = smollm2_tokenizer
    total = text.token_count(tok)
    assert text.token_ids(tok, 10, offset=total - 10).shape == (1, 10)
    with pytest.raises(ValueError, match="runs past the end"):
        text.token_ids(tok, 11, offset=total - 10)


@pytest.mark.parametrize("n_tokens", [0, -5, 2.0, True, "10"])
def test_bad_n_tokens_is_refused(smollm2_tokenizer, n_tokens):
    with pytest.raises(ValueError, match="n_tokens must be a positive int"):
        text.token_ids(smollm2_tokenizer, n_tokens)


@pytest.mark.parametrize("offset", [-1, 1.0, None, 10**9])
def test_bad_offset_is_refused(smollm2_tokenizer, offset):
    with pytest.raises(ValueError, match="offset must be an int in"):
        text.token_ids(smollm2_tokenizer, 10, offset=offset)
