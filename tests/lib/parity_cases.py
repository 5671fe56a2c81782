"""The parity cases of the family registry as transformers configs, and a transformers model
with every parameter random: what tests/lib/test_parity.py compares with transformers and
tests/lib/test_fastdecode.py decodes on both paths (tests/lib/test_families.py checks that every
family has a case here)."""

from __future__ import annotations

import math

import pytest
import torch
import transformers
from lmcourse import as_spec
from lmcourse.families import FAMILIES
from lmcourse.families.base import PARITY_VOCAB as VOCAB

__all__ = ["CASES", "PARITY", "VOCAB", "parity_config", "random_hf_model"]


def parity_config(name: str, case: str, **changes):
    """The registry's parity case `case` of family `name` as a transformers config, with
    `changes` on top."""
    return transformers.AutoConfig.for_model(name, **(FAMILIES[name].parity[case] | changes))


PARITY = {  # "<family>-<case>" -> config
    f"{name}-{case}": parity_config(name, case)
    for name, entry in FAMILIES.items()
    for case in entry.parity
}
CASES = [pytest.param(config, id=key) for key, config in PARITY.items()]


def random_hf_model(config, seed: int = 0):
    """A transformers model whose every parameter is random, with activations of order one."""
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    offset = 1.0 - as_spec(config).norm_offset  # stored value of scale 1
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or ".ln_" in name:
                p.copy_((offset if name.endswith("weight") else 0.0) + 0.2 * torch.randn_like(p))
            elif p.dim() == 1:
                p.normal_(0.0, 0.2)
            elif "embed" in name or "wte" in name or "wpe" in name:
                p.normal_(0.0, 1.0)
            else:
                p.normal_(0.0, 1.0 / math.sqrt(p.shape[-1]))
        for name, b in model.named_buffers():
            if "e_score_correction_bias" in name:
                b.normal_(0.0, 0.2)
    return model
