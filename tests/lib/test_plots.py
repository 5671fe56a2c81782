"""lmcourse.plots: figures draw what they claim to draw (the lessons' nbval runs check that they
appear; these tests check their data)."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from conftest import turned_pairs  # noqa: E402
from lmcourse import plots  # noqa: E402
from matplotlib import colors as mcolors  # noqa: E402


def test_plot_activations_draws_both_curves_and_their_difference():
    fig = plots.plot_activations("gelu", "silu", lo=-3.0, hi=2.0)
    left, right = fig.axes
    (gelu, silu), (gap,) = left.get_lines()[:2], [right.get_lines()[0]]
    x = torch.tensor(gelu.get_xdata())
    assert x[0] == -3.0 and x[-1] == 2.0
    torch.testing.assert_close(torch.tensor(gelu.get_ydata()), F.gelu(x))
    torch.testing.assert_close(torch.tensor(silu.get_ydata()), F.silu(x))
    torch.testing.assert_close(torch.tensor(gap.get_ydata()), F.silu(x) - F.gelu(x))
    assert [line.get_label() for line in (gelu, silu)] == ["gelu", "silu"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(first="swish"), "act must be one of"),
        (dict(lo=1.0, hi=1.0), "lo must be below hi"),
    ],
)
def test_plot_activations_refuses_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plots.plot_activations(**kwargs)


def test_block_diagrams_mark_the_four_changes_on_the_new_model_only():
    from lmcourse import configs

    fig = plots.plot_block_diagrams(configs.T1_GPT2, configs.load("Qwen3-30B-A3B"))
    old, new = ([t.get_text() for t in ax.texts if t.get_text().startswith("(")] for ax in fig.axes)
    assert old == []
    assert sorted(new) == sorted(["(3)", "(1) (2)", "(3)", "(4)", "(3)"]), new


def test_prefill_decode_computes_the_prompt_once_then_one_token_per_step():
    fig = plots.plot_prefill_decode(prompt=4, steps=2)
    (ax,) = fig.axes
    squares = [p for p in ax.patches if p.get_width() > 0]
    highlight = matplotlib.colors.to_rgb(plots.HIGHLIGHT)
    computed = [p for p in squares if p.get_facecolor()[:3] == highlight]
    assert len(squares) == 4 + 5 + 6, "each row holds every token seen so far"
    assert len(computed) == 4 + 1 + 1, "the prefill computes the prompt, each step one token"
    with pytest.raises(ValueError, match="prompt and steps must be positive ints"):
        plots.plot_prefill_decode(prompt=0)


def test_gated_ffn_and_router_diagram_takes_its_sizes_from_the_configurations():
    from lmcourse import configs

    fig = plots.plot_gated_ffn_and_router(
        configs.load("SmolLM2-135M"), configs.load("Mixtral-8x7B")
    )
    left, right = ([t.get_text() for t in ax.texts] for ax in fig.axes)
    assert "W_gate: d -> 1,536" in left and "x  (width d = 576)" in left and "silu" in left
    assert "router: 8 scores, softmax" in right
    assert "keep the top 2, renormalise their weights" in right
    shaded = [
        p
        for p in fig.axes[1].patches
        if p.get_facecolor()[:3] == matplotlib.colors.to_rgb(plots.HIGHLIGHT)
    ]
    assert len(shaded) == 2, "the top 2 experts are shaded"
    with pytest.raises(ValueError, match="gated must have a gated feed-forward layer"):
        plots.plot_gated_ffn_and_router(configs.T1_GPT2, configs.load("Mixtral-8x7B"))


def test_rope_base_by_year_plots_one_point_per_model_on_a_log_axis():
    fig = plots.plot_rope_base_by_year(
        {"Llama 2": (2023, 1e4), "Mistral": (2023, 1e4), "Llama 3": (2024, 5e5)}
    )
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and len(ax.lines) == 3
    assert sorted(t.get_text() for t in ax.texts) == ["Llama 2", "Llama 3", "Mistral"]
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match="points must be a non-empty dict"):
        plots.plot_rope_base_by_year({})


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    matplotlib.pyplot.close("all")


def test_rope_rotate_pairs_turns_each_pair_by_position_times_its_frequency():
    from lmcourse.blocks.rope import inverse_frequencies

    inv_freq = inverse_frequencies(10000.0, 16)
    x = torch.randn(16, generator=torch.Generator().manual_seed(0))
    positions = [0, 1, 7, 300]
    got = plots.rope_rotate_pairs(x, inv_freq, positions)
    assert got.shape == (4, 8, 2)
    torch.testing.assert_close(got[0], torch.stack(x.chunk(2), -1))  # position 0: unturned
    for row, position in zip(got, positions, strict=True):
        torch.testing.assert_close(
            row.double(), turned_pairs(x, inv_freq, position), rtol=1e-5, atol=1e-5
        )
    with pytest.raises(ValueError, match="x must be a vector of 16 numbers"):
        plots.rope_rotate_pairs(torch.zeros(15), inv_freq, positions)


def test_rope_score_at_plots_the_score_of_every_key_and_marks_the_chosen_one():
    from lmcourse.blocks.rope import inverse_frequencies

    inv_freq = inverse_frequencies(100.0, 8)
    generator = torch.Generator().manual_seed(1)
    q, k = torch.randn(8, generator=generator), torch.randn(8, generator=generator)
    fig = plots.plot_rope_score_at(
        q, k, inv_freq, query_position=10, window=6, key_position=7, shift=0, pair=2
    )
    left, right = fig.axes
    curve, marker = left.get_lines()
    keys = list(range(4, 11))
    assert curve.get_xdata().tolist() == keys
    expected = [
        (turned_pairs(q, inv_freq, 10) * turned_pairs(k, inv_freq, n)).sum().item() for n in keys
    ]
    torch.testing.assert_close(
        torch.tensor(curve.get_ydata(), dtype=torch.double),
        torch.tensor(expected, dtype=torch.double),
        rtol=1e-5,
        atol=1e-5,
    )
    assert marker.get_xdata().tolist() == [7]
    assert left.get_title().startswith("query at m = 10, key at n = 7: m − n = 3, score ")
    assert right.get_title().startswith("pair 2 (one turn per ")
    shifted = plots.plot_rope_score_at(q, k, inv_freq, 10, 6, 7, shift=1000, pair=2)
    moved = shifted.axes[0].get_lines()[0]
    assert moved.get_xdata().tolist() == [n + 1000 for n in keys]
    torch.testing.assert_close(
        torch.tensor(moved.get_ydata()), torch.tensor(curve.get_ydata()), rtol=1e-3, atol=1e-3
    )  # the score depends on m - n only


def test_parameter_shares_bars_add_up_to_one_per_model():
    from lmcourse import configs, count

    models = {"GPT-2": configs.T1_GPT2, "SmolLM2": configs.load("SmolLM2-135M")}
    fig = plots.plot_parameter_shares(models)
    (ax,) = fig.axes
    bars = ax.patches
    assert len(bars) == len(count.SHARE_GROUPS) * 2
    for row, name in enumerate(["SmolLM2", "GPT-2"]):  # first model on top
        widths = [bar.get_width() for bar in bars[row::2]]
        expected = list(count.parameter_shares(models[name]).values())
        assert widths == pytest.approx(expected) and sum(widths) == pytest.approx(1.0)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(count.SHARE_GROUPS)
    with pytest.raises(ValueError, match="models must be a non-empty dict"):
        plots.plot_parameter_shares({})


def test_kv_groups_connect_query_head_i_to_kv_head_i_over_the_group():
    fig = plots.plot_kv_groups(heads=8, kv_heads=(8, 2, 1))
    assert [ax.get_title(loc="center") for ax in fig.axes] == [
        "MHA: 8 kv heads, group 1",
        "GQA: 2 kv heads, group 4",
        "MQA: 1 kv head, group 8",
    ]
    for ax, group in zip(fig.axes, (1, 4, 8), strict=True):
        lines = ax.get_lines()
        assert len(lines) == 8, "one line per query head"
        for i, line in enumerate(lines):
            assert line.get_xdata()[0] == i + 0.5
            assert line.get_xdata()[1] == (i // group + 0.5) * group
    with pytest.raises(ValueError, match="kv_heads=3 must divide heads=8"):
        plots.plot_kv_groups(heads=8, kv_heads=(3,))


def test_kv_head_sweep_plots_parameters_and_cache_in_billions():
    rows = [
        dict(kv_heads=8, total=2e9, cache_bytes=4e9),
        dict(kv_heads=1, total=1e9, cache_bytes=0.5e9),
    ]
    fig = plots.plot_kv_head_sweep(rows, "toy", tokens=4096)
    left, right = fig.axes
    assert left.get_lines()[0].get_xdata().tolist() == [1, 8]  # sorted by kv heads
    assert left.get_lines()[0].get_ydata().tolist() == [1.0, 2.0]
    assert right.get_lines()[0].get_ydata().tolist() == [0.5, 4.0]
    assert right.get_title() == "toy: cache after 4,096 tokens"


def test_cache_vs_context_stops_each_line_at_the_declared_context():
    from lmcourse import configs, count

    gpt2, llama = configs.load("gpt2"), configs.load("Llama-3.1-8B")
    fig = plots.plot_cache_vs_context({"GPT-2": gpt2, "Llama": llama}, max_tokens=2**14)
    (ax,) = fig.axes
    gpt2_line, _, llama_line, _ = ax.get_lines()[:4]
    assert gpt2_line.get_xdata()[-1] == 1024, "GPT-2's position table has 1,024 rows"
    assert llama_line.get_xdata()[-1] == 2**14, "max_tokens caps a longer declared context"
    assert "declared maximum, max_position_embeddings" in ax.get_xlabel()
    for line, config in ((gpt2_line, gpt2), (llama_line, llama)):
        x, y = line.get_xdata(), line.get_ydata()
        assert list(y) == [count.cache_bytes(config, int(n)) for n in x]
    # the reference lines are binary, like every memory size in the lesson
    marks = {text.get_text().strip(): text.get_position()[1] for text in ax.texts}
    assert marks == {"1 MiB": 2**20, "1 GiB": 2**30}
    with pytest.raises(ValueError, match="max_tokens must be an integer >= 2"):
        plots.plot_cache_vs_context({"GPT-2": gpt2}, max_tokens=1)


def test_kv_cache_budget_splits_the_gpu_in_gib_into_weights_and_one_sequences_cache():
    import dataclasses

    from lmcourse import as_spec, configs, count

    spec = as_spec(configs.load("Llama-3.1-8B"))
    fig = plots.plot_kv_cache_budget(spec, kv_heads=2, tokens=8192, gpu_gib=80)
    (ax,) = fig.axes
    weights, cache = ax.patches[:2]
    chosen = dataclasses.replace(spec, kv_heads=2)
    gib = 2**30  # an A100 sold as "80 GB" reports 80 GiB
    assert weights.get_width() == pytest.approx(count.describe(chosen)["total"] * 2 / gib)
    assert cache.get_x() == pytest.approx(weights.get_width())
    assert cache.get_width() == pytest.approx(count.cache_bytes(chosen, 8192) / gib)
    fits = count.requests_that_fit(chosen, 8192, 80 * gib)
    assert fits != count.requests_that_fit(chosen, 8192, 80e9), "the unit must make a difference"
    assert ax.get_title() == f"{fits} sequence(s) of 8,192 tokens fit on a GPU of 80 GiB"
    assert ax.get_xlabel() == "GiB (2³⁰ bytes)"


def test_cache_vs_kv_heads_draws_one_line_per_context_over_the_divisors_of_heads():
    import dataclasses

    from lmcourse import as_spec, configs, count

    spec = as_spec(configs.load("SmolLM2-135M"))  # 9 query heads
    fig = plots.plot_cache_vs_kv_heads(spec, contexts=(1024, 4096))
    (ax,) = fig.axes
    lines = ax.get_lines()[:2]
    for line, n in zip(lines, (1024, 4096), strict=True):
        assert line.get_xdata().tolist() == [1, 3, 9]
        expected = [
            count.cache_bytes(dataclasses.replace(spec, kv_heads=k), n) / 2**30 for k in (1, 3, 9)
        ]
        assert line.get_ydata().tolist() == pytest.approx(expected)
        assert line.get_label() == f"cache, {n:,} tokens"
    gpu = [line for line in ax.get_lines() if line.get_label().startswith("GPU memory")]
    assert [line.get_label() for line in gpu] == ["GPU memory, 80 GiB"]
    assert gpu[0].get_ydata()[0] == 80


def test_norm_mean_fractions_plot_the_median_over_tokens_per_block():
    fractions = {
        (0, "attention"): torch.tensor([0.1, 0.2, 0.3]),
        (0, "feed-forward"): torch.tensor([0.0, 0.5, 1.0]),
        (1, "attention"): torch.tensor([0.4, 0.4, 0.4]),
        (1, "feed-forward"): torch.tensor([0.2, 0.2, 0.2]),
        (2, "final"): torch.tensor([0.05, 0.05, 0.05]),
    }
    fig = plots.plot_norm_mean_fractions(fractions)
    (ax,) = fig.axes
    attention, ffn = ax.get_lines()[:2]
    assert attention.get_xdata().tolist() == [0, 1]
    assert attention.get_ydata() == pytest.approx([20.0, 40.0])  # percent
    assert ffn.get_ydata() == pytest.approx([50.0, 20.0])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "before attention",
        "before feed-forward",
        "final norm",
    ]
    with pytest.raises(ValueError, match="fractions must be a non-empty dict"):
        plots.plot_norm_mean_fractions({})


def test_expert_load_bars_count_the_tokens_routed_to_each_expert():
    chosen = torch.tensor([[0, 1], [0, 2], [0, 1]])  # 3 tokens, top-2 of 4 experts
    fig = plots.plot_expert_load(chosen, experts=4)
    (ax,) = fig.axes
    assert [bar.get_height() for bar in ax.patches] == [3, 2, 1, 0]
    assert ax.get_lines()[0].get_ydata()[0] == pytest.approx(1.5)  # even share 6 / 4
    assert ax.get_title().endswith("busiest 2.00× the even share")


def test_total_vs_active_bars_are_describes_figures_in_billions():
    from lmcourse import configs, count

    models = {"Mixtral": configs.load("Mixtral-8x7B"), "SmolLM2": configs.load("SmolLM2-135M")}
    fig = plots.plot_total_vs_active(models)
    (ax,) = fig.axes
    totals, actives = ax.patches[:2], ax.patches[2:]
    for i, name in enumerate(["SmolLM2", "Mixtral"]):  # first model on top
        info = count.describe(models[name])
        assert totals[i].get_width() == pytest.approx(info["total"] / 1e9)
        assert actives[i].get_width() == pytest.approx(info["active"] / 1e9)
    assert actives[0].get_width() == totals[0].get_width(), "a dense model uses every parameter"
    assert actives[1].get_width() < totals[1].get_width() / 2


def test_ablation_losses_bars_hold_each_loss_and_the_reference_line():
    fig = plots.plot_ablation_losses({"full": 2.5, "no gate": 3.0}, reference=4.0)
    (ax,) = fig.axes
    assert [bar.get_width() for bar in ax.patches] == [3.0, 2.5]  # first on top
    assert [t.get_text() for t in ax.texts] == [" 3.000", " 2.500"]
    assert ax.get_lines()[0].get_xdata()[0] == 4.0
    assert ax.get_legend().get_texts()[0].get_text() == "uniform guess: 4.00"
    with pytest.raises(ValueError, match="losses must be a non-empty dict"):
        plots.plot_ablation_losses({})


def test_attention_by_offset_plots_the_mean_over_heads_with_a_band():
    weights = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7]])  # [heads, offsets]
    fig = plots.plot_attention_by_offset({"trained": weights}, title="t")
    (ax,) = fig.axes
    (line,) = ax.get_lines()
    assert line.get_xdata().tolist() == [0, 1, 2]
    assert line.get_ydata() == pytest.approx([0.3, 0.25, 0.45])
    assert line.get_label() == "trained (mean of 2 heads)"
    assert ax.get_title() == "t"


def test_rope_wavelengths_draw_one_line_per_entry_and_one_per_mark_on_a_log_axis():
    fig = plots.plot_rope_wavelengths({"base 1e4": [6.3, 63.0, 630.0]}, marks={"context": 100})
    (ax,) = fig.axes
    line, mark = ax.get_lines()
    assert line.get_ydata().tolist() == [6.3, 63.0, 630.0] and ax.get_yscale() == "log"
    assert list(mark.get_ydata()) == [100, 100] and mark.get_label() == "context"


def test_rope_pair_turns_a_vector_by_theta_per_position():
    fig = plots.plot_rope_pair(theta=0.5, positions=3)
    a, b = fig.axes
    tips = [ann.xy for ann in a.texts if hasattr(ann, "arrow_patch")]
    assert len(tips) == 3
    for p, (x, y) in enumerate(tips):
        c, s = torch.tensor(p * 0.5).cos().item(), torch.tensor(p * 0.5).sin().item()
        assert (x, y) == pytest.approx((c * 1.0 - s * 0.35, s * 1.0 + c * 0.35))
    assert b.get_title() == "(b) q@4, k@1 (solid) and both +3 (dashed)"


def test_rope_scores_curves_do_not_move_when_both_positions_shift():
    from lmcourse.blocks.rope import inverse_frequencies

    inv_freq = inverse_frequencies(10000.0, 16)
    generator = torch.Generator().manual_seed(2)
    q, k = torch.randn(16, generator=generator), torch.randn(16, generator=generator)
    fig = plots.plot_rope_scores(q, k, inv_freq, 40, range(0, 30), shifts=(0, 500), pairs=(0, 5))
    left, right = fig.axes
    plain, shifted = left.get_lines()
    torch.testing.assert_close(
        torch.tensor(shifted.get_ydata()), torch.tensor(plain.get_ydata()), rtol=1e-3, atol=1e-3
    )
    assert [line.get_label() for line in right.get_lines()][:2] == ["pair 0", "pair 5"]
    assert all(-1 - 1e-6 <= v <= 1 + 1e-6 for line in right.get_lines() for v in line.get_ydata())


# ---- colours a reader with a colour-vision deficiency can tell apart ----------------------------


def _drawn_colours(fig) -> set[str]:
    """Hex colours of every data artist of `fig`: lines and their markers, bars and boxes,
    scatter points and bands (not the axes' own spines, ticks, grid or text)."""
    from matplotlib.colors import to_hex, to_rgba

    found = set()

    def add(colour):
        for rgba in [colour] if isinstance(colour, str) else list(to_rgba_list(colour)):
            if to_rgba(rgba)[3] > 0:  # a transparent fill or edge draws nothing
                found.add(to_hex(rgba))

    def to_rgba_list(colours):
        import numpy as np

        colours = np.asarray(colours)
        return [tuple(c) for c in colours.reshape(-1, 4)] if colours.size else []

    for ax in fig.axes:
        for line in ax.get_lines():
            add(to_rgba(line.get_color()))
            if line.get_marker() not in (None, "None", "", " "):
                add(to_rgba(line.get_markerfacecolor()))
        for patch in ax.patches:
            if patch.get_fill():
                add(patch.get_facecolor())
            add(patch.get_edgecolor())
        for collection in ax.collections:
            add(collection.get_facecolor())
        for text in ax.texts:
            if getattr(text, "arrow_patch", None) is not None:  # an annotation's arrow
                add(text.arrow_patch.get_edgecolor())
    return found


def _every_figure():
    """One of each of plots.py's figures (except the viridis arrows of plot_rope_pair's left
    panel, checked apart), drawn small."""
    from lmcourse import configs

    gpt2, llama = configs.T1_GPT2, configs.load("Llama-3.1-8B")
    seven = {name: configs.load(name) for name in configs.available()[:7]}
    inv_freq = 1.0 / 10000 ** (torch.arange(0, 8, 2) / 8)
    q, k = torch.linspace(-1, 1, 8), torch.linspace(1, -1, 8)
    chosen = torch.tensor([[0, 1], [0, 2], [0, 1]])
    fractions = {
        (0, "attention"): torch.tensor([0.1, 0.2]),
        (0, "feed-forward"): torch.tensor([0.3, 0.4]),
        (1, "final"): torch.tensor([0.1, 0.1]),
    }
    sweep = [
        dict(kv_heads=8, total=2e9, cache_bytes=4e9),
        dict(kv_heads=1, total=1e9, cache_bytes=5e8),
    ]
    yield plots.plot_parameter_shares(
        {"GPT-2": gpt2, "Llama": llama, "Qwen3": configs.load("Qwen3-30B-A3B")}
    )
    yield plots.plot_block_diagrams(gpt2, configs.load("Qwen3-30B-A3B"))
    yield plots.plot_rope_wavelengths(
        {"a": [1.0, 10.0], "b": [2.0, 20.0], "c": [3.0, 30.0]}, marks={"m": 5}
    )
    yield plots.plot_rope_scores(
        q, k, inv_freq, 20, range(0, 12), shifts=(0, 50), pairs=(0, 1, 2, 3)
    )
    yield plots.plot_rope_score_at(q, k, inv_freq, 10, 6, 7)
    yield plots.plot_attention_by_offset({f"model {i}": torch.rand(2, 5) for i in range(4)})
    yield plots.plot_kv_groups(heads=9, kv_heads=(9, 3, 1))
    yield plots.plot_kv_head_sweep(sweep, "toy", tokens=16)
    yield plots.plot_norm_mean_fractions(fractions)
    yield plots.plot_ablation_losses({"full": 2.5, "no gate": 3.0}, reference=4.0)
    yield plots.plot_activations()
    yield plots.plot_gated_ffn_and_router(llama, configs.load("Mixtral-8x7B"))
    yield plots.plot_total_vs_active({"Mixtral": configs.load("Mixtral-8x7B"), "Llama": llama})
    yield plots.plot_expert_load(chosen, experts=4)
    yield plots.plot_prefill_decode(prompt=3, steps=2)
    yield plots.plot_cache_vs_context(seven, max_tokens=2**12)
    yield plots.plot_cache_vs_kv_heads(llama, contexts=(1024, 4096, 16384))
    yield plots.plot_kv_cache_budget(llama, kv_heads=2, tokens=8192, gpu_gib=80)
    yield plots.plot_rope_base_by_year({"a": (2023, 1e4), "b": (2024, 5e5)})


def test_every_figure_draws_only_the_palettes_colours_and_no_two_are_confusable():
    from tools import colour_vision

    # the simulation tells the classic red-green confusion from a safe pair
    assert ("deuteranopia", "green", "red") in colour_vision.confusable(
        {"red": "tab:red", "green": "tab:green"}
    )
    assert colour_vision.confusable({"black": "black", "white": "white"}) == []
    palette = colour_vision.palette()
    assert colour_vision.confusable(palette) == [], "pairs a colour-blind reader cannot tell apart"
    assert colour_vision.stray_colours() == [], "colours written out in plots.py, not from COLOURS"
    allowed = {mcolors.to_hex(c) for c in palette.values()} | {"#ffffff"}  # white text and edges
    import matplotlib.pyplot as plt

    for fig in _every_figure():
        drawn = _drawn_colours(fig)
        title = fig.axes[0].get_title() or fig.axes[-1].get_title()
        assert drawn <= allowed, f"{title!r} draws {sorted(drawn - allowed)}, not in plots.COLOURS"
        plt.close(fig)


def test_no_two_lines_of_a_many_series_figure_differ_by_colour_alone():
    """Seven models in T5's cache figure: each line has its own colour AND the four line styles
    repeat, so two neighbours never share both a style and a similar colour."""
    from lmcourse import configs

    models = {name: configs.load(name) for name in configs.available()[:7]}
    fig = plots.plot_cache_vs_context(models, max_tokens=2**12)
    lines = [line for line in fig.axes[0].get_lines() if line.get_label() in models]
    assert len(lines) == 7
    assert len({line.get_color() for line in lines}) == 7
    assert [line.get_linestyle() for line in lines[:4]] == ["-", "--", "-.", ":"]
