"""Shared fixtures and helpers.

Fixtures: the SmolLM2 models are loaded once per test session (and converted from the GGUF file
first if the user's cache does not hold them yet): tests must not modify them.

Helpers that several test modules use are plain functions here, imported with
`from conftest import random_model, spec` (pytest puts tests/ on sys.path). A test module
imports no other test module (tests/test_imports.py): what several share is here or in a helper
module (tests/browsing.py, tests/formgrader_pages.py, tests/lib/parity_cases.py, tests/lab_cases).

The `browser` fixture (below) is chromium for the browser tests.
"""

import functools
import os
import shutil

import pytest


def spec(**changes):
    """A tiny Llama-style ModelSpec; keyword arguments override fields."""
    from lmcourse import ModelSpec

    base = dict(
        d=32,
        layers=2,
        vocab=64,
        heads=4,
        kv_heads=2,
        head_dim=8,
        ffn="swiglu",
        hidden=48,
        act="silu",
        norm="rms",
    )
    return ModelSpec(**(base | changes))


def random_model(s, seed: int = 0):
    """A DecoderLM of spec `s` in eval mode with large random weights (std 0.3) and norm scales
    away from one, so that a norm or scale applied in the wrong place shows."""
    import torch
    from lmcourse import DecoderLM

    torch.manual_seed(seed)
    model = DecoderLM(s).eval()
    model.reset_parameters(std=0.3)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.2 * torch.randn_like(p))
    return model


@functools.cache
def meta_model(name: str):
    """transformers' own model of the published config `name`, without memory (shapes only)."""
    import torch
    from lmcourse import configs
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(configs.load(name))


def turned_pairs(x, inv_freq, position):
    """x [head_dim] in the 'half' layout, pair i = (x[i], x[i + dim/2]) turned by position *
    inv_freq[i] with a 2x2 rotation: [pairs, 2]. Written independently of lmcourse's rope."""
    import torch

    half = x.shape[0] // 2
    a, b = x[:half].double(), x[half:].double()
    angle = position * inv_freq.double()
    return torch.stack((a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()), -1)


def decoder_blocks(model):
    """The decoder blocks of a transformers causal LM (GPT-2 calls them `h`, OPT nests them)."""
    base = model.base_model
    base = base.decoder if hasattr(base, "decoder") else base
    return base.layers if hasattr(base, "layers") else base.h


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    """The SmolLM2 tokenizer."""
    from lmcourse.pretrained import load_tokenizer

    return load_tokenizer()


@pytest.fixture(scope="session")
def smollm2_hf():
    """transformers' LlamaForCausalLM with the real SmolLM2-135M-Instruct weights (read only)."""
    from lmcourse.pretrained import load_smollm2_transformers

    return load_smollm2_transformers()


@pytest.fixture(scope="session")
def smollm2(smollm2_hf):
    """The course's DecoderLM with the same weights as `smollm2_hf` (read only)."""
    from lmcourse import from_transformers

    return from_transformers(smollm2_hf).eval()


@pytest.fixture(scope="session")
def sandbox_installed():
    """CI (.ci/run sets LM10_REQUIRE_SANDBOX=1) must have bubblewrap; elsewhere, skip loudly."""
    if shutil.which("bwrap") is None:
        message = "bubblewrap is not installed: apt-get install bubblewrap (.ci/run does)"
        if os.environ.get("LM10_REQUIRE_SANDBOX") == "1":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def browser():
    """CI (.ci/run sets LM10_REQUIRE_BROWSER=1) must have chromium; elsewhere, skip loudly."""
    from browsing import CHROMIUM, CHROMIUM_ARGS

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if sync_playwright is None or not CHROMIUM.exists():
        message = (
            "the browser test needs Debian's chromium (apt-get install chromium; .ci/run "
            "does) and Playwright for Python (the dev extras)"
        )
        if os.environ.get("LM10_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
