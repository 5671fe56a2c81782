"""lmcourse: the library behind LM10, "decoder-only models, then and now".

    import lmcourse
    lmcourse.describe(config)            # parameters, active parameters, cache bytes per token
    lmcourse.cache_bytes(config, tokens) # bytes the key-value cache holds after `tokens` tokens
    lmcourse.DecoderLM(spec)             # a readable decoder-only model (GPT-2 to DeepSeek-V3)
    lmcourse.from_transformers(hf_model) # the same model, with a transformers model's weights
    lmcourse.as_spec(config)             # a dict, a transformers config or a spec, as a ModelSpec

Names are imported on first use, so `import lmcourse` stays fast and the counter
works without loading torch's model code.
"""

from importlib import import_module

_EXPORTS = {
    "ModelSpec": "lmcourse.spec",
    "as_spec": "lmcourse.families",
    "from_transformers": "lmcourse.bridge",
    "describe": "lmcourse.count",
    "cache_bytes": "lmcourse.count",
    "DecoderLM": "lmcourse.blocks.model",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'lmcourse' has no attribute {name!r}")


def __dir__():
    return __all__
