"""The families the course reads from transformers: one module each, one registry.

Each module of this package holds everything the library knows about one transformers
`model_type`, as its `FAMILY` entry (`base.Family`):

    parent     the family it is written as a diff of (the parent module is its import)
    changes    its config reader: the ModelSpec fields that differ from the parent's reading;
               its one-line docstring says what differs ("Llama plus QK-norm ...")
    weights    its weight-name rules (spec -> {DecoderLM tensor: (transformers tensor,
               transform)}), when they differ from the parent's
    toy        config fields that shrink it to a toy (tests, quick forward passes) while keeping
               every feature: biases, norms, windows, experts, latent attention
    published  the config.json fields of its published checkpoints (`lmcourse.configs` loads them)
    parity     random configurations whose logits and tokens tests/lib/test_parity.py and
               tests/lib/test_fastdecode.py compare with transformers'

`tests/lib/test_families.py` checks that every entry is complete; docs/ADDING_A_FAMILY.md walks
through adding one. Nothing here imports torch.
"""

from __future__ import annotations

from ..spec import ModelSpec
from . import (
    deepseek_v3,
    gemma2,
    gpt2,
    granite,
    llama,
    mistral,
    mixtral,
    olmo,
    olmo2,
    opt,
    phi3,
    qwen2,
    qwen3,
    qwen3_moe,
)
from .base import Family, Rules

__all__ = ["FAMILIES", "Family", "Rules", "as_spec", "family"]

# in the order the zoo lesson shows them: GPT-2 and its diff, then Llama and its diffs
FAMILIES: dict[str, Family] = {
    module.FAMILY.name: module.FAMILY
    for module in (
        gpt2,
        opt,
        llama,
        mistral,
        mixtral,
        qwen2,
        qwen3,
        qwen3_moe,
        gemma2,
        phi3,
        olmo,
        olmo2,
        deepseek_v3,
        granite,
    )
}


def family(name) -> Family:
    """The registry entry of transformers' `model_type` `name`."""
    if name not in FAMILIES:
        raise ValueError(f"unsupported model_type {name!r}; supported families: {sorted(FAMILIES)}")
    return FAMILIES[name]


def as_spec(config) -> ModelSpec:
    """A config dict, a transformers config of a registered family or a `ModelSpec`, as a
    `ModelSpec` (a transformers config is read by its family's reader)."""
    if isinstance(config, ModelSpec):
        return config
    if isinstance(config, dict):
        return ModelSpec.from_dict(config)
    if hasattr(config, "model_type"):
        entry = family(config.model_type)
        return ModelSpec(family=entry.name, **entry.read(config))
    raise ValueError(
        f"config must be a dict, a transformers config or a ModelSpec, got {type(config).__name__}"
    )
