"""The tiny character-level GPT-2 the course trains itself: seeded, cached, and broken by
shifted positions."""

import pytest
import torch
from lmcourse import evaluate, text, tinygpt
from lmcourse.blocks.model import DecoderLM

MIN_GAIN = 0.5  # nats per character: how much better than the unigram baseline the model must be
SHIFT = 500  # the lesson's shift of every position id


def max_difference(a: DecoderLM, b: DecoderLM) -> float:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    return max((sa[name] - sb[name]).abs().max().item() for name in sa)


def test_training_is_seeded_and_the_cache_returns_the_trained_model(tmp_path):
    trained = tinygpt.train_or_load(steps=2, verbose=False, folder=tmp_path)
    path = tinygpt.cache_path(steps=2, folder=tmp_path)
    assert path.is_file() and [p.name for p in tmp_path.iterdir()] == [path.name]
    loaded = tinygpt.train_or_load(steps=2, verbose=False, folder=tmp_path)
    assert max_difference(trained, loaded) == 0.0, "the cached model differs from the trained"
    assert loaded.head.weight is loaded.embed.weight, "loading untied the output table"
    again = tinygpt.train(steps=2, verbose=False)
    assert max_difference(trained, again) == 0.0, "two trainings with one seed differ"
    other = tinygpt.train(steps=2, seed=1, verbose=False)
    assert max_difference(trained, other) > 0.0, "the seed does not change the model"


def test_position_rows_beyond_the_context_keep_their_initial_values():
    trained = tinygpt.train(steps=2, verbose=False)
    torch.manual_seed(0)  # the seed train() starts from
    initial = DecoderLM(tinygpt.spec())
    rows, rows0 = trained.pos_embed.weight, initial.pos_embed.weight
    assert rows.shape == (tinygpt.POSITIONS, tinygpt.WIDTH)
    assert tinygpt.POSITIONS >= 512 + SHIFT, "the table has no rows for the lesson's shift"
    assert torch.equal(rows[tinygpt.CONTEXT :], rows0[tinygpt.CONTEXT :]), "untrained rows moved"
    assert not torch.equal(rows[: tinygpt.CONTEXT], rows0[: tinygpt.CONTEXT])


def test_the_vocabulary_is_every_character_of_the_text_and_round_trips():
    whole = text.load()
    assert tinygpt.vocabulary() == "".join(sorted(set(whole)))
    ids = tinygpt.encode(whole)
    assert ids.shape == (1, len(whole)) and ids.dtype == torch.long
    assert tinygpt.decode(ids) == whole, "decode(encode(text)) is not the text"
    assert tinygpt.decode(ids[0, :5]) == whole[:5], "decode of a 1-d tensor differs"


def test_the_evaluation_slice_is_the_start_of_the_text_and_outside_training():
    ids = tinygpt.evaluation_ids(512)
    start = tinygpt.EVAL_OFFSET
    assert ids.shape == (1, 512)
    assert tinygpt.decode(ids) == text.load()[start : start + 512]
    assert start + 512 <= tinygpt.TRAIN_OFFSET, "evaluation and training characters overlap"
    assert torch.equal(ids, tinygpt.evaluation_ids()), "the default slice is not 512 characters"


@pytest.mark.parametrize("s, match", [("", "s must be a non-empty str"),
                                      (b"abc", "s must be a non-empty str"),
                                      ("caf\u00e9 \u2603", "outside the vocabulary")])
def test_encode_refuses_bad_input(s, match):
    with pytest.raises(ValueError, match=match):
        tinygpt.encode(s)


@pytest.mark.parametrize("ids, match", [
    (torch.tensor([0, 1, 1000]), r"ids must be in \[0, "),
    (torch.tensor([-1]), r"ids must be in \[0, "),
    (torch.tensor([1.0, 2.0]), "ids must be a LongTensor"),
    (torch.zeros(2, 3, dtype=torch.long), "ids must be a LongTensor"),
])
def test_decode_refuses_bad_input(ids, match):
    with pytest.raises(ValueError, match=match):
        tinygpt.decode(ids)


@pytest.mark.parametrize("n", [0, 1, 2.5, True, tinygpt.TRAIN_OFFSET + 1])
def test_bad_evaluation_lengths_are_refused(n):
    with pytest.raises(ValueError, match="n must be an int in"):
        tinygpt.evaluation_ids(n)


@pytest.mark.parametrize("steps", [0, -1, 2.5, True])
def test_bad_steps_are_refused(steps):
    with pytest.raises(ValueError, match="steps must be a positive int"):
        tinygpt.train(steps=steps, verbose=False)


@pytest.mark.parametrize("seed", [1.5, "0", False])
def test_bad_seeds_are_refused(seed):
    with pytest.raises(ValueError, match="seed must be an int"):
        tinygpt.train(steps=1, seed=seed, verbose=False)


def test_shifting_positions_moves_the_loss_of_the_learned_position_table():
    """The lesson's claim: unlike SmolLM2's rotation, the learned table is not shift-invariant:
    512 characters read at positions 500..1011 (rows training never reached) score worse than
    at positions 0..511. (This small model leans on its positions only a little: no collapse.)"""
    model = tinygpt.train_or_load(verbose=False)  # the lesson's model, in the cache folder
    ids = tinygpt.evaluation_ids(512)
    shifted = torch.arange(SHIFT, SHIFT + 512).unsqueeze(0)
    plain, moved = evaluate.loss(model, ids), evaluate.loss(model, ids, shifted)
    baseline = tinygpt.unigram_loss(ids)
    assert plain < baseline - MIN_GAIN, (
        f"the trained model scores {plain:.3f} nats/char, the unigram baseline {baseline:.3f}; "
        f"expected the model better by more than {MIN_GAIN}")
    assert moved > plain, (
        f"loss {plain:.3f} nats/char at positions 0.., {moved:.3f} shifted by {SHIFT}; "
        "expected the shifted loss to be higher")
