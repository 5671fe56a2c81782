"""lmcourse.plots: figures draw what they claim to draw (the lessons' nbval runs check that they
appear; these tests check their data)."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from lmcourse import plots  # noqa: E402


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


@pytest.mark.parametrize("kwargs, match", [
    (dict(first="swish"), "act must be one of"),
    (dict(lo=1.0, hi=1.0), "lo must be below hi"),
])
def test_plot_activations_refuses_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plots.plot_activations(**kwargs)


def test_block_layout_reads_each_part_from_the_configuration():
    from lmcourse import configs

    gpt2 = dict(plots.block_layout(configs.SEED_GPT2))
    assert gpt2["positions"] == "+ learned position table, 1,024 rows"
    assert gpt2["attention"] == "attention: 12 heads, a key-value head each"
    assert gpt2["norm1"] == "LayerNorm" and gpt2["head"] == "output: the token table (tied)"
    qwen = dict(plots.block_layout(configs.load("Qwen3-30B-A3B")))
    assert "positions" not in qwen and qwen["norm2"] == "RMSNorm"
    assert qwen["attention"].startswith("attention: 32 query heads share 4 key-value heads\n")
    assert qwen["ffn"] == "128 experts, 8 per token" and qwen["head"] == "output: its own matrix"


def test_block_diagrams_mark_the_four_changes_on_the_new_model_only():
    from lmcourse import configs

    fig = plots.plot_block_diagrams(configs.SEED_GPT2, configs.load("Qwen3-30B-A3B"))
    old, new = ([t.get_text() for t in ax.texts if t.get_text().startswith("(")]
                for ax in fig.axes)
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

    fig = plots.plot_gated_ffn_and_router(configs.load("SmolLM2-135M"),
                                          configs.load("Mixtral-8x7B"))
    left, right = ([t.get_text() for t in ax.texts] for ax in fig.axes)
    assert "W_gate: d -> 1,536" in left and "x  (width d = 576)" in left and "silu" in left
    assert "router: 8 scores, softmax" in right
    assert "keep the top 2, renormalise their weights" in right
    shaded = [p for p in fig.axes[1].patches
              if p.get_facecolor()[:3] == matplotlib.colors.to_rgb(plots.HIGHLIGHT)]
    assert len(shaded) == 2, "the top 2 experts are shaded"
    with pytest.raises(ValueError, match="gated must have a gated feed-forward layer"):
        plots.plot_gated_ffn_and_router(configs.SEED_GPT2, configs.load("Mixtral-8x7B"))


def test_rope_base_by_year_plots_one_point_per_model_on_a_log_axis():
    fig = plots.plot_rope_base_by_year({"Llama 2": (2023, 1e4), "Mistral": (2023, 1e4),
                                        "Llama 3": (2024, 5e5)})
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and len(ax.lines) == 3
    assert sorted(t.get_text() for t in ax.texts) == ["Llama 2", "Llama 3", "Mistral"]
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match="points must be a non-empty dict"):
        plots.plot_rope_base_by_year({})
