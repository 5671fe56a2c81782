"""lmcourse.evaluate: the loss is the mean next-token cross-entropy, the one transformers
computes from `labels=input_ids`, on tiny models whose answer is known."""

import math

import pytest
import torch
import transformers
from conftest import random_model, spec
from lmcourse import evaluate


def test_uniform_logits_score_ln_vocab():
    ids = torch.randint(0, 50, (3, 8), generator=torch.Generator().manual_seed(0))
    assert evaluate.loss_of_logits(torch.zeros(3, 8, 50), ids) == pytest.approx(math.log(50))


def test_the_loss_scores_token_t_plus_1_from_position_t():
    ids = torch.tensor([[0, 1, 2, 3]])
    logits = torch.full((1, 4, 5), -1e4)
    logits[0, torch.arange(3), ids[0, 1:]] = 0.0  # certain of each next token
    assert evaluate.loss_of_logits(logits, ids) == pytest.approx(0.0, abs=1e-6)
    logits[0, 3] = 0.0  # the last position predicts nothing: it does not count
    assert evaluate.loss_of_logits(logits, ids) == pytest.approx(0.0, abs=1e-6)
    shifted = torch.full((1, 4, 5), -1e4)
    shifted[0, torch.arange(3), ids[0, :3]] = 0.0  # certain of the *current* token: wrong
    assert evaluate.loss_of_logits(shifted, ids) > 1e3


def test_loss_of_a_decoder_lm_matches_transformers_labels_loss():
    config = transformers.LlamaConfig(
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=64,
        bos_token_id=None,
        eos_token_id=None,
    )
    hf = transformers.LlamaForCausalLM(config).eval()
    ids = torch.randint(0, 64, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = hf(ids, labels=ids).loss.item()
    assert evaluate.loss(hf, ids) == pytest.approx(expected, rel=1e-6)
    model = random_model(spec())
    with torch.no_grad():
        logits = model(ids)
    assert evaluate.loss(model, ids) == evaluate.loss_of_logits(logits, ids)


def test_position_ids_reach_the_model():
    model = random_model(spec())
    ids = torch.randint(0, 64, (1, 6), generator=torch.Generator().manual_seed(2))
    moved = torch.tensor([[0, 5, 9, 20, 21, 40]])  # not a shift: rotary is blind to shifts
    with torch.no_grad():
        expected = evaluate.loss_of_logits(model(ids, position_ids=moved), ids)
    assert evaluate.loss(model, ids, moved) == expected
    assert evaluate.loss(model, ids, moved) != evaluate.loss(model, ids)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda m: evaluate.loss(m, torch.tensor([[1]])), "at least 2 tokens"),
        (lambda m: evaluate.loss(m, torch.tensor([1, 2, 3])), r"got torch.int64 of shape \(3,\)"),
        (lambda m: evaluate.loss(m, torch.tensor([[1.0, 2.0]])), "got torch.float32"),
        (lambda m: evaluate.loss(m, [[1, 2]]), "got list"),
        (
            lambda m: evaluate.loss(m, torch.tensor([[1, 2, 3]]), torch.tensor([[0, 1]])),
            r"position_ids must have the shape of input_ids \(1, 3\)",
        ),
        (
            lambda m: evaluate.loss_of_logits(torch.zeros(1, 2, 5), torch.tensor([[1, 2, 3]])),
            r"logits must be \[batch, tokens, vocab\]",
        ),
    ],
)
def test_bad_input_is_refused_naming_what_was_given(call, match):
    with pytest.raises(ValueError, match=match):
        call(random_model(spec()))
