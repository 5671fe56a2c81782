"""Published model configurations, built locally as transformers config objects.

    from lmcourse import configs
    configs.available()              # ['DeepSeek-V3', 'Gemma-2-2B', ..., 'gpt2']
    cfg = configs.load("Llama-3.1-8B")  # a transformers LlamaConfig, no download
    configs.declared_context(cfg)     # 131072: the longest context it declares

The hyperparameters are those of each checkpoint's published config.json, kept with its family
(`lmcourse.families`, each family's `published`); only the fields that shape the architecture
(and so the parameter count, the cache and the FLOPs) are set, the rest keep transformers'
defaults. `T1_GPT2` and `T1_7B` are the two config dicts (`ModelSpec.from_dict`) of the T1
lesson: GPT-2 small and a 7B model of the Llama 2 family.
"""

from __future__ import annotations

from .families import FAMILIES, as_spec, family

T1_GPT2 = dict(
    d=768,
    layers=12,
    vocab=50257,
    heads=12,
    ffn="gelu",
    bias=True,
    norm="layer",
    tied=True,
    positions=1024,
)
T1_7B = dict(
    d=4096,
    layers=32,
    vocab=32000,
    heads=32,
    ffn="swiglu",
    hidden=11008,
    bias=False,
    norm="rms",
    tied=False,
)


# course name -> (transformers model_type, config.json fields), from each family's `published`
_PUBLISHED: dict[str, tuple[str, dict]] = {
    name: (entry.name, fields)
    for entry in FAMILIES.values()
    for name, fields in entry.published.items()
}


def available() -> list[str]:
    """Names `load` accepts, sorted case-insensitively."""
    return sorted(_PUBLISHED, key=str.lower)


def load(name: str):
    """The published configuration `name` as a transformers `PretrainedConfig` (no hub access)."""
    if name not in _PUBLISHED:
        raise ValueError(f"unknown configuration {name!r}; available: {available()}")
    from transformers import AutoConfig

    model_type, fields = _PUBLISHED[name]
    return AutoConfig.for_model(model_type, **fields)


_TOY_TOKENS = dict(bos_token_id=0, eos_token_id=1, pad_token_id=None)  # inside the toy vocabulary


def toy(name: str, **overrides):
    """The family of `name` at toy sizes (for tests and quick forward passes), as a config:
    the published fields with the family's toy sizes (`lmcourse.families`) on top."""
    if name not in _PUBLISHED:
        raise ValueError(f"unknown configuration {name!r}; available: {available()}")
    from transformers import AutoConfig

    model_type, fields = _PUBLISHED[name]
    fields = {**fields, **_TOY_TOKENS, **family(model_type).toy, **overrides}
    return AutoConfig.for_model(model_type, **fields)


def declared_context(config) -> int | None:
    """The longest context a transformers config declares (max_position_embeddings or, for
    GPT-2, n_positions); None for config dicts and specs without a learned table."""
    for name in ("max_position_embeddings", "n_positions"):
        value = getattr(config, name, None)
        if value:
            return int(value)
    spec = as_spec(config)
    return spec.positions or None


# ---- GPT-2's fields against Llama's (lesson LM10-T8) ------------------------------------------

# (what the field decides, GPT-2's field or None, what GPT-2 does without one, Llama's field).
# A dotted name reads inside a dict field: "rope_parameters.rope_theta".
FIELD_MAP = (
    ("width", "n_embd", "", "hidden_size"),
    ("blocks", "n_layer", "", "num_hidden_layers"),
    ("vocabulary", "vocab_size", "", "vocab_size"),
    ("query heads", "n_head", "", "num_attention_heads"),
    ("key-value heads", "n_head", "", "num_key_value_heads"),
    ("feed-forward width", "n_inner", "", "intermediate_size"),
    ("activation", "activation_function", "", "hidden_act"),
    ("norm epsilon", "layer_norm_epsilon", "", "rms_norm_eps"),
    ("positions", "n_positions", "", "max_position_embeddings"),
    ("rotary base", None, "(none: a learned table)", "rope_parameters.rope_theta"),
    ("rotary scaling", None, "(none)", "rope_parameters.rope_type"),
    ("attention biases", None, "(none: always on)", "attention_bias"),
    ("feed-forward biases", None, "(none: always on)", "mlp_bias"),
    ("tied output table", "tie_word_embeddings", "", "tie_word_embeddings"),
)


def _read_field(config, name: str):
    """The value of `name` in a transformers config; a dotted name reads inside a dict field."""
    value = config
    for part in name.split("."):
        value = value.get(part) if isinstance(value, dict) else getattr(value, part)
    return value


def _shown(value) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 1 else f"{value:g}"
    return str(value)


def field_table(gpt2, llamas: dict) -> list[dict]:
    """Rows for `lmcourse.count.table`: each decision of FIELD_MAP with GPT-2's field and value,
    Llama's field, and its value in each config of `llamas` (name -> LlamaConfig)."""
    if getattr(gpt2, "model_type", None) != "gpt2":
        raise ValueError(
            f"gpt2 must be a GPT-2 config (model_type 'gpt2'), got "
            f"{getattr(gpt2, 'model_type', type(gpt2).__name__)!r}"
        )
    if not isinstance(llamas, dict) or not llamas:
        raise ValueError("llamas must be a non-empty dict of name -> Llama-architecture config")
    wrong = {
        n: getattr(c, "model_type", None)
        for n, c in llamas.items()
        if getattr(c, "model_type", None) != "llama"
    }
    if wrong:
        raise ValueError(
            f"llamas must hold Llama-architecture configs (model_type 'llama'); got {wrong}"
        )
    rows = []
    for concept, old, missing, new in FIELD_MAP:
        row = {
            "decides": concept,
            "GPT-2 field": old or "-",
            "GPT-2": _shown(_read_field(gpt2, old)) if old else missing,
            "Llama field": new,
        }
        row |= {name: _shown(_read_field(config, new)) for name, config in llamas.items()}
        rows.append(row)
    return rows
