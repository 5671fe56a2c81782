"""lmcourse.widgets: each interactive builds with the sliders its lesson describes, and its
callback draws (or prints) for several settings without an error. The callbacks are called
directly: ipywidgets' `interactive` would log an exception in a callback, not raise it."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from lmcourse import configs, widgets  # noqa: E402
from lmcourse.blocks.rope import inverse_frequencies  # noqa: E402

plt = matplotlib.pyplot


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def sliders(widget) -> dict:
    """description -> (min, max, value) of an `interactive`'s sliders (options for selections)."""
    found = {}
    for child in widget.children:
        if hasattr(child, "options") and child.options:
            found[child.description] = (tuple(child.options), child.value)
        elif hasattr(child, "min"):
            found[child.description] = (child.min, child.max, child.value)
    return found


def test_rope_score_widget_has_three_sliders_and_draws_every_setting():
    inv_freq = inverse_frequencies(10000.0, 16)
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(16, generator=generator), torch.randn(16, generator=generator)
    w = widgets.rope_score_widget(q, k, inv_freq, query_position=64, window=64)
    assert sliders(w) == {
        "key position n (before shift)": (0, 64, 57),
        "shift both by": (0, 5000, 0),
        "pair drawn": (0, 7, 0),
    }
    assert len(plt.get_fignums()) == 1, "interactive draws the first setting when built"
    plt.close("all")
    for key_position, shift, pair in ((57, 0, 0), (0, 5000, 7), (64, 50, 3)):
        w.f(key_position=key_position, shift=shift, pair=pair)
        left, right = plt.gcf().axes
        m, n = 64 + shift, key_position + shift
        assert left.get_title().startswith(f"query at m = {m}, key at n = {n}: m − n = {m - n}")
        assert right.get_title().startswith(f"pair {pair} (one turn per ")
    assert len(plt.get_fignums()) == 3, "one figure per setting"


def test_rope_score_widget_score_follows_the_offset_not_the_shift():
    inv_freq = inverse_frequencies(10000.0, 16)
    generator = torch.Generator().manual_seed(1)
    q, k = torch.randn(16, generator=generator), torch.randn(16, generator=generator)
    w = widgets.rope_score_widget(q, k, inv_freq)
    scores = []
    for shift in (0, 2500):
        w.f(key_position=60, shift=shift, pair=0)
        scores.append(float(plt.gcf().axes[0].get_title().rsplit("score ", 1)[1]))
    assert scores[0] == pytest.approx(scores[1], abs=2e-3)


def test_kv_heads_widget_offers_the_divisors_of_the_chosen_models_heads(capsys):
    box = widgets.kv_heads_widget(names=("SmolLM2-135M", "Llama-3.1-8B"), tokens=1024)
    model, kv = box.children[0].children
    assert model.options == ("SmolLM2-135M", "Llama-3.1-8B")
    assert kv.options == (1, 3, 9) and kv.value == 3, "SmolLM2: 9 query heads, 3 kv heads"
    model.value = "Llama-3.1-8B"
    assert kv.options == (1, 2, 4, 8, 16, 32) and kv.value == 8
    kv.value = 1
    printed = capsys.readouterr().out
    assert "chosen (1 kv of 32)" in printed and "published (8 kv of 32)" in printed
    assert "group size 32: query head i reads kv head i // 32" in printed


def test_toy_moe_is_seeded_and_routes_each_token_to_k_experts():
    a, b, other = widgets.toy_moe(seed=0), widgets.toy_moe(seed=0), widgets.toy_moe(seed=1)
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=0, msg=f"{name} differs under one seed")
    assert not torch.equal(a.router.weight, other.router.weight)
    x = torch.randn(10, 64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        weights, chosen = a.router(x)
    assert chosen.shape == (10, 2) and weights.sum(-1).allclose(torch.ones(10))


def test_router_load_widget_draws_each_experts_load_for_several_settings():
    w = widgets.router_load_widget(tokens=64, d=16)
    assert sliders(w) == {"experts E": (2, 64, 8), "experts per token k": (1, 8, 2)}
    for experts, k in ((8, 2), (2, 1), (64, 8)):
        w.f(experts=experts, k=k)
        (ax,) = plt.gcf().axes
        assert len(ax.patches) == experts
        assert sum(bar.get_height() for bar in ax.patches) == 64 * k, "each token picks k"
        assert ax.get_title() == (
            f"top-{k} of {experts} experts: each token uses "
            f"{k / experts:.1%} of the expert parameters"
        )


def test_router_load_widget_says_when_k_exceeds_the_experts(capsys):
    w = widgets.router_load_widget(tokens=8, d=16)
    plt.close("all")  # the figure of the first setting, drawn when built
    w.f(experts=2, k=5)
    printed = capsys.readouterr().out
    assert "experts per token k must be at most the number of experts (2)" in printed
    assert plt.get_fignums() == []


def test_kv_cache_budget_widget_sliders_and_its_bar_for_several_settings():
    import dataclasses

    from lmcourse import as_spec, count

    config = configs.load("Llama-3.1-8B")
    w = widgets.kv_cache_budget_widget(config)
    found = sliders(w)
    assert found["key-value heads"] == ((1, 2, 4, 8, 16, 32), 8)
    assert found["tokens per sequence"] == (tuple(2**e for e in range(10, 18)), 8192)
    assert found["GPU memory (GiB)"] == ((16, 24, 40, 48, 80), 80)
    spec = as_spec(config)
    for kv_heads, tokens, gpu_gib in ((8, 8192, 80), (1, 2**17, 24), (32, 1024, 16)):
        w.f(kv_heads=kv_heads, tokens=tokens, gpu_gib=gpu_gib)
        (ax,) = plt.gcf().axes
        chosen = dataclasses.replace(spec, kv_heads=kv_heads)
        fits = count.requests_that_fit(chosen, tokens, gpu_gib * 2**30)  # GiB, as cards are sold
        want = f"{fits} sequence(s) of {tokens:,} tokens fit on a GPU of {gpu_gib} GiB"
        assert ax.get_title() == want
