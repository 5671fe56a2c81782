"""Shared fixtures. The SmolLM2 models are loaded once per test session (and converted from the
GGUF file first if the user's cache does not hold them yet): tests must not modify them."""

import os
import shutil

import pytest


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
