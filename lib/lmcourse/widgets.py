"""ipywidgets interactives used by the lessons; each lesson stores a static figure beside them.

A widget wires its sliders to a figure of `lmcourse.plots` (or prints a table); it draws nothing
itself."""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt

from . import count
from .families import as_spec
from .spec import divisors


def _slider_look() -> dict:
    """Keyword arguments of a slider: it updates on release, shows its whole description, and
    has a track of its own beside it (inside ipywidgets' default 300 px a long description left
    the track some 25 px, too short to pick a position with the mouse)."""
    return dict(
        continuous_update=False,
        style={"description_width": "initial"},
        layout=widgets.Layout(width="36em"),
    )


# ---- LM10-T2: rotary position embeddings ------------------------------------------------------


def rope_score_widget(q, k, inv_freq, query_position: int = 64, window: int = 64):
    """Drag the key's position n (the query sits at `query_position`), then a shift that moves
    both: the score q̃·k̃ follows n but not the shift. A third slider picks the pair drawn on
    the right, its two rotated halves as arrows with their cosine."""
    from .plots import plot_rope_score_at

    pairs = inv_freq.shape[-1]

    def show(key_position: int, shift: int, pair: int):
        plot_rope_score_at(q, k, inv_freq, query_position, window, key_position, shift, pair)
        plt.show()

    return widgets.interactive(
        show,
        key_position=widgets.IntSlider(
            query_position - 7,
            query_position - window,
            query_position,
            description="key position n (before shift)",
            **_slider_look(),
        ),
        shift=widgets.IntSlider(0, 0, 5000, 50, description="shift both by", **_slider_look()),
        pair=widgets.IntSlider(0, 0, pairs - 1, description="pair drawn", **_slider_look()),
    )


# ---- LM10-T3: grouped-query attention ---------------------------------------------------------


def kv_heads_widget(
    names=("SmolLM2-135M", "Llama-3.1-8B", "Llama-2-7B", "Mistral-7B-v0.1", "Qwen2.5-7B"),
    tokens: int = 8192,
    kv_bytes: int = 2,
):
    """Pick a published model and a number of key-value heads (a divisor of its query heads):
    parameters, cache per token and cache after `tokens` tokens, against the published setting."""
    import dataclasses

    from . import configs

    specs = {name: as_spec(configs.load(name)) for name in names}
    model = widgets.Dropdown(options=list(names), description="model")
    kv = widgets.SelectionSlider(options=[1], description="kv heads", continuous_update=False)
    out = widgets.Output()

    def on_model(change=None):
        spec = specs[model.value]
        kv.options = divisors(spec.heads)
        kv.value = spec.kv_heads

    def show(change=None):
        spec = specs[model.value]
        if spec.heads % kv.value:
            return  # options are being replaced; on_model sets a valid value next
        chosen = dataclasses.replace(spec, kv_heads=kv.value)
        rows = []
        for label, s in (("published", spec), ("chosen", chosen)):
            info = count.describe(s, kv_bytes=kv_bytes)
            full = count.cache_bytes(s, tokens, kv_bytes=kv_bytes)
            rows.append(
                (
                    f"{label} ({s.kv_heads} kv of {s.heads})",
                    info["total"],
                    info["cache_bytes_per_token"],
                    full,
                )
            )
        out.clear_output(wait=True)
        with out:
            print(f"{'':28}{'parameters':>16}{'cache/token':>14}{f'cache @ {tokens:,}':>16}")
            for label, total, per_token, full in rows:
                print(f"{label:28}{total:>16,}{per_token:>12,} B{full / 1e9:>13.2f} GB")
            print(
                f"group size {spec.heads // kv.value}: query head i reads kv head "
                f"i // {spec.heads // kv.value}"
            )

    model.observe(on_model, names="value")
    kv.observe(show, names="value")
    model.observe(show, names="value")
    on_model()
    show()
    return widgets.VBox([widgets.HBox([model, kv]), out])


# ---- LM10-T4: RMSNorm, SwiGLU and mixture of experts -----------------------------------------


def toy_moe(experts: int = 8, k: int = 2, d: int = 64, expert_hidden: int = 32, seed: int = 0):
    """A small mixture-of-experts layer (`blocks.moe.MoE`: softmax router, top-k weights
    renormalised to sum to one) with random weights drawn from `seed`: the layer the router
    widget routes through, and lesson T4 takes apart.

    Every weight matrix ~ N(0, 1/fan_in), so a unit-variance token gets router logits of
    variance about one.
    """
    import torch

    from .blocks.moe import MoE
    from .spec import ModelSpec

    spec = ModelSpec(
        d=d,
        layers=1,
        vocab=1,
        heads=1,
        kv_heads=1,
        head_dim=d,
        ffn="swiglu",
        hidden=expert_hidden,
        norm="rms",
        experts=experts,
        experts_per_token=k,
        expert_hidden=expert_hidden,
        norm_topk=True,
    )
    moe = MoE(spec)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in moe.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * p.shape[-1] ** -0.5)
    return moe.eval()


def router_load_widget(tokens: int = 512, d: int = 64, seed: int = 0, token_seed: int = 1):
    """Choose the number of experts E and the top-k: a random router (`toy_moe`,
    weights from `seed`) sends `tokens` random tokens (from `token_seed`; a seed of their own, so
    that no token copies a router row); the bars show each expert's load, the title the share of
    expert parameters one token uses (k / E). The static twin is `plots.plot_expert_load`."""
    import torch

    from .plots import plot_expert_load

    x = torch.randn(tokens, d, generator=torch.Generator().manual_seed(token_seed))  # [tokens, d]

    def show(experts: int, k: int):
        if k > experts:
            print(f"experts per token k must be at most the number of experts ({experts})")
            return
        moe = toy_moe(experts, k, d=d, seed=seed)
        with torch.no_grad():
            _, chosen = moe.router(x)  # [tokens, k]
        plot_expert_load(
            chosen,
            experts,
            title=f"top-{k} of {experts} experts: each token uses "
            f"{k / experts:.1%} of the expert parameters",
        )
        plt.show()

    return widgets.interactive(
        show,
        experts=widgets.IntSlider(8, 2, 64, description="experts E", **_slider_look()),
        k=widgets.IntSlider(2, 1, 8, description="experts per token k", **_slider_look()),
    )


# ---- LM10-T5: the key-value cache -------------------------------------------------------------


def kv_cache_budget_widget(config, gpu_gib=(16, 24, 40, 48, 80), kv_bytes=2, weight_bytes=2):
    """Sliders for the number of key-value heads, the context length and the GPU's memory in GiB
    (memory sizes of common cards, whose "GB" is about that many GiB; 80 is the default): one bar
    splits the GPU into weights, one sequence's cache and the rest, and the title says how many
    such sequences fit (`count.requests_that_fit`)."""
    from .plots import plot_kv_cache_budget

    spec = as_spec(config)
    kv = widgets.SelectionSlider(
        options=divisors(spec.heads),
        value=spec.kv_heads,
        description="key-value heads",
        **_slider_look(),
    )
    tokens = widgets.SelectionSlider(
        options=[2**e for e in range(10, 18)],
        value=2**13,
        description="tokens per sequence",
        **_slider_look(),
    )
    gpu = widgets.SelectionSlider(
        options=list(gpu_gib),
        value=80 if 80 in gpu_gib else gpu_gib[-1],
        description="GPU memory (GiB)",
        **_slider_look(),
    )

    def show(kv_heads, tokens, gpu_gib):
        plot_kv_cache_budget(spec, kv_heads, tokens, gpu_gib, kv_bytes, weight_bytes)
        plt.show()

    return widgets.interactive(show, kv_heads=kv, tokens=tokens, gpu_gib=gpu)
