"""lmcourse.timing: interleaved, repeated timings with their spread, on a fixed thread count.

These tests check what the timings are made of (order, counts, statistics, thread handling,
the busy warning), never how fast anything is: speed is measured by `make bench`."""

import statistics

import pytest
import torch
from lmcourse import timing


def test_contestants_alternate_in_a_rotating_order_after_one_warm_up_each():
    calls = []
    contestants = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    result = timing.compare(contestants, repeats=4)
    assert calls[:3] == ["a", "b", "c"], "each contestant is warmed up once, in order"
    rounds = [calls[3 + 3 * r : 6 + 3 * r] for r in range(4)]
    assert rounds == [list("abc"), list("bca"), list("cab"), list("abc")]
    assert [len(t.seconds) for t in result.timings] == [4, 4, 4]


def test_each_run_makes_number_calls_and_records_their_mean():
    calls = []
    result = timing.compare({"a": lambda: calls.append("a")}, repeats=3, number=4)
    assert len(calls) == 1 + 3 * 4 and len(result.timings[0].seconds) == 3
    assert "(3 runs of 4 calls, 1 thread)" in result.report(unit="µs")


def test_median_and_spread_are_those_of_the_recorded_samples():
    t = timing.Timing("x", (1.0, 2.0, 3.0, 4.0, 100.0))
    assert t.median == 3.0
    q1, _, q3 = statistics.quantiles(t.seconds, n=4)
    assert t.spread == pytest.approx((q3 - q1) / 3.0)
    assert timing.Timing("x", (1.0, 5.0, 9.0)).spread == 0.0, "too few runs for quartiles"


def test_one_thread_by_default_and_the_callers_setting_is_restored():
    before = torch.get_num_threads()
    seen = []
    result = timing.compare({"f": lambda: seen.append(torch.get_num_threads())}, repeats=2)
    assert set(seen) == {1} and result.threads == 1
    assert torch.get_num_threads() == before
    seen.clear()
    result = timing.compare(
        {"f": lambda: seen.append(torch.get_num_threads())}, repeats=2, threads=None
    )
    assert set(seen) == {before} and result.threads == before


def test_the_thread_setting_is_restored_when_a_contestant_raises():
    before = torch.get_num_threads()

    def fails():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        timing.compare({"f": fails}, threads=1)
    assert torch.get_num_threads() == before


def test_torch_threads_sets_and_restores_the_thread_count():
    before = torch.get_num_threads()
    with timing.torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError, match="boom"), timing.torch_threads(1):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before
    with timing.torch_threads(None):
        assert torch.get_num_threads() == before
    for bad in (0, True, 1.5, "2"):
        with pytest.raises(ValueError, match="positive int or None"), timing.torch_threads(bad):
            pass


def test_sync_runs_after_every_timed_call():
    synced = []
    timing.compare({"a": lambda: None, "b": lambda: None}, repeats=3, sync=lambda: synced.append(1))
    assert len(synced) == 1 + 2 * 3, "one sync after the warm-ups, then one per timed call"


def quiet_and_busy():
    quiet = timing.Timing("layer_norm", (1e-4,) * 7 + (1.02e-4,))
    busy = timing.Timing("rms_norm", (1e-4, 1e-4, 2e-4, 3e-4, 1e-4, 4e-4, 1e-4, 2e-4))
    return quiet, busy


def test_report_gives_median_spread_runs_threads_and_ratio():
    quiet, _ = quiet_and_busy()
    slow = timing.Timing("rms_norm", (2e-4,) * 8)
    result = timing.Comparison((quiet, slow), threads=1)
    lines = result.report(unit="µs", baseline="layer_norm").splitlines()
    assert len(lines) == 2 and not result.busy
    assert lines[1].split() == [
        "rms_norm",
        "median",
        "200.0",
        "µs",
        "spread",
        "0%",
        "(8",
        "runs,",
        "1",
        "thread)",
        "2.00x",
        "layer_norm",
    ]
    assert result.ratio("rms_norm", "layer_norm") == pytest.approx(2.0)
    per_token = result.report(unit="s", per=8, per_label="tokens").splitlines()[1]
    assert "40000.0 tokens/s" in per_token


def test_a_busy_machine_is_reported_below_the_table():
    quiet, busy = quiet_and_busy()
    result = timing.Comparison((quiet, busy), threads=2)
    assert busy.spread > timing.BUSY_SPREAD and result.busy
    report = result.report(unit="µs")
    assert report.splitlines()[-1].startswith("warning: a spread above 25% means the machine")
    assert "(8 runs, 2 threads)" in report


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(contestants={}), "contestants must be a non-empty dict"),
        (dict(contestants={"a": 1}), "contestants must be a non-empty dict"),
        (dict(contestants={"a": print}, repeats=0), "repeats must be a positive int"),
        (dict(contestants={"a": print}, repeats=True), "repeats must be a positive int"),
        (dict(contestants={"a": print}, number=0), "number must be a positive int"),
        (dict(contestants={"a": print}, threads=0), "threads must be a positive int or None"),
    ],
)
def test_compare_refuses_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        timing.compare(**kwargs)


def test_report_and_ratio_refuse_unknown_names_and_units():
    quiet, busy = quiet_and_busy()
    result = timing.Comparison((quiet, busy), threads=1)
    with pytest.raises(ValueError, match=r"no contestant named 'gelu'; the contestants are"):
        result.ratio("gelu", "layer_norm")
    with pytest.raises(ValueError, match="unit must be one of"):
        result.report(unit="minutes")
    with pytest.raises(ValueError, match="no contestant named"):
        result.report(baseline="gelu")


def tied_toy() -> torch.nn.Module:
    model = torch.nn.Sequential(
        torch.nn.Embedding(50, 8),
        torch.nn.Linear(8, 6),
        torch.nn.LayerNorm(6),
        torch.nn.Linear(6, 50, bias=False),
    )
    model[3].weight = model[0].weight  # a tied table: one tensor, read once
    return model


def test_floor_reader_streams_every_tensor_a_step_reads_once():
    read, nbytes = timing.floor_reader(tied_toy())
    with torch.profiler.profile(record_shapes=True) as prof:
        read()
    sums = [e.input_shapes[0] for e in prof.events() if e.name == "aten::sum"]
    # the tied table once, the Linear's matrix and bias, the LayerNorm's weight and bias
    assert sorted(sums) == [[6], [6], [6], [6, 8], [50, 8]], sums
    assert nbytes == (50 * 8 + 6 * 8 + 3 * 6) * 4, "the tied table counted twice"
    with pytest.raises(ValueError, match="no parameters"):
        timing.floor_reader(torch.nn.ReLU())


def test_matvec_reader_multiplies_a_vector_by_each_matrix_once():
    read, nbytes = timing.matvec_reader(tied_toy())
    with torch.profiler.profile(record_shapes=True) as prof:
        read()
    products = [e.input_shapes for e in prof.events() if e.name == "aten::mm"]
    assert sorted(products) == [[[1, 8], [8, 6]], [[1, 8], [8, 50]]], products
    assert nbytes == (50 * 8 + 6 * 8) * 4, "the tied table counted twice, or a vector counted"
    with pytest.raises(ValueError, match="no weight matrices"):
        timing.matvec_reader(torch.nn.LayerNorm(4))


@pytest.mark.parametrize(
    "changes",
    [
        dict(tied=True),
        dict(tied=False),
        dict(tied=False, positions=16, rope_theta=0.0, norm="layer"),
    ],
    ids=["tied", "untied", "learned-positions"],
)
def test_a_step_reads_the_weight_bytes_that_count_decode_step_counts(changes):
    """A token or position table is looked up by row, so a step does not stream it, unless it
    is also the output head: the floor's bytes are count.decode_step's weight bytes, less the
    rows it looks up (one per table, for one sequence)."""
    from conftest import spec
    from lmcourse import DecoderLM, cache_bytes, count

    s = spec(**changes)
    model = DecoderLM(s)
    weights = {t.data_ptr() for t in timing.step_weights(model)}
    assert (model.embed.weight.data_ptr() in weights) == s.tied
    assert model.pos_embed is None or model.pos_embed.weight.data_ptr() not in weights
    _, nbytes = timing.floor_reader(model)
    tables = (0 if s.tied else 1) + (1 if s.positions else 0)
    step = count.decode_step(s, 1, weight_bytes=4, kv_bytes=4)["bytes"]
    assert nbytes == step - cache_bytes(s, 1, kv_bytes=4) - tables * s.d * 4
