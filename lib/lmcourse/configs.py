"""Published model configurations, built locally as transformers config objects.

    from lmcourse import configs
    configs.available()              # ['DeepSeek-V3', 'Gemma-2-2B', ..., 'gpt2']
    cfg = configs.load("Llama-3.1-8B")  # a transformers LlamaConfig, no download
    configs.declared_context(cfg)     # 131072: the longest context it declares

The hyperparameters are those of each checkpoint's published config.json; only the fields
that shape the architecture (and so the parameter count, the cache and the FLOPs) are set,
the rest keep transformers' defaults. `SEED_GPT2` and `SEED_7B` are the two seed-style dicts
of the T1 lesson.
"""

from __future__ import annotations

from .families import as_spec, family

SEED_GPT2 = dict(
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
SEED_7B = dict(
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


def _rope_parameters(theta: float, **scaling) -> dict:
    """transformers 5.x keeps the rotary base and its scaling together in `rope_parameters`."""
    return {
        "rope_parameters": {
            "rope_type": scaling.pop("rope_type", "default"),
            "rope_theta": theta,
            **scaling,
        }
    }


_LLAMA3_ROPE = dict(
    rope_type="llama3",
    low_freq_factor=1.0,
    high_freq_factor=4.0,
    original_max_position_embeddings=8192,
)

# name -> (transformers model_type, config.json fields)
_PUBLISHED: dict[str, tuple[str, dict]] = {
    "gpt2": (
        "gpt2",
        dict(
            vocab_size=50257,
            n_positions=1024,
            n_embd=768,
            n_layer=12,
            n_head=12,
            activation_function="gelu_new",
            layer_norm_epsilon=1e-5,
        ),
    ),
    "OPT-125m": (
        "opt",
        dict(
            vocab_size=50272,
            hidden_size=768,
            ffn_dim=3072,
            num_hidden_layers=12,
            num_attention_heads=12,
            max_position_embeddings=2048,
            word_embed_proj_dim=768,
            do_layer_norm_before=True,
            activation_function="relu",
            tie_word_embeddings=True,
        ),
    ),
    "OPT-6.7B": (
        "opt",
        dict(
            vocab_size=50272,
            hidden_size=4096,
            ffn_dim=16384,
            num_hidden_layers=32,
            num_attention_heads=32,
            max_position_embeddings=2048,
            word_embed_proj_dim=4096,
            do_layer_norm_before=True,
            activation_function="relu",
            tie_word_embeddings=True,
        ),
    ),
    "SmolLM2-135M": (
        "llama",
        dict(
            vocab_size=49152,
            hidden_size=576,
            intermediate_size=1536,
            num_hidden_layers=30,
            num_attention_heads=9,
            num_key_value_heads=3,
            max_position_embeddings=8192,
            rms_norm_eps=1e-5,
            tie_word_embeddings=True,
            **_rope_parameters(100000.0),
        ),
    ),
    "TinyLlama-1.1B": (
        "llama",
        dict(
            vocab_size=32000,
            hidden_size=2048,
            intermediate_size=5632,
            num_hidden_layers=22,
            num_attention_heads=32,
            num_key_value_heads=4,
            max_position_embeddings=2048,
            rms_norm_eps=1e-5,
            tie_word_embeddings=False,
            **_rope_parameters(10000.0),
        ),
    ),
    "Llama-2-7B": (
        "llama",
        dict(
            vocab_size=32000,
            hidden_size=4096,
            intermediate_size=11008,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=32,
            max_position_embeddings=4096,
            rms_norm_eps=1e-5,
            tie_word_embeddings=False,
            **_rope_parameters(10000.0),
        ),
    ),
    "Llama-3.1-8B": (
        "llama",
        dict(
            vocab_size=128256,
            hidden_size=4096,
            intermediate_size=14336,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=8,
            max_position_embeddings=131072,
            rms_norm_eps=1e-5,
            tie_word_embeddings=False,
            **_rope_parameters(500000.0, factor=8.0, **_LLAMA3_ROPE),
        ),
    ),
    "Llama-3.1-405B": (
        "llama",
        dict(
            vocab_size=128256,
            hidden_size=16384,
            intermediate_size=53248,
            num_hidden_layers=126,
            num_attention_heads=128,
            num_key_value_heads=8,
            max_position_embeddings=131072,
            rms_norm_eps=1e-5,
            tie_word_embeddings=False,
            **_rope_parameters(500000.0, factor=8.0, **_LLAMA3_ROPE),
        ),
    ),
    "Llama-3.2-1B": (
        "llama",
        dict(
            vocab_size=128256,
            hidden_size=2048,
            intermediate_size=8192,
            num_hidden_layers=16,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=64,
            max_position_embeddings=131072,
            rms_norm_eps=1e-5,
            tie_word_embeddings=True,
            **_rope_parameters(500000.0, factor=32.0, **_LLAMA3_ROPE),
        ),
    ),
    "Mistral-7B-v0.1": (
        "mistral",
        dict(
            vocab_size=32000,
            hidden_size=4096,
            intermediate_size=14336,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=128,
            max_position_embeddings=32768,
            rms_norm_eps=1e-5,
            tie_word_embeddings=False,
            sliding_window=4096,
            **_rope_parameters(10000.0),
        ),
    ),
    "Mixtral-8x7B": (
        "mixtral",
        dict(
            vocab_size=32000,
            hidden_size=4096,
            intermediate_size=14336,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=8,
            max_position_embeddings=32768,
            rms_norm_eps=1e-5,
            tie_word_embeddings=False,
            sliding_window=None,
            num_local_experts=8,
            num_experts_per_tok=2,
            **_rope_parameters(1000000.0),
        ),
    ),
    "Qwen2.5-7B": (
        "qwen2",
        dict(
            vocab_size=152064,
            hidden_size=3584,
            intermediate_size=18944,
            num_hidden_layers=28,
            num_attention_heads=28,
            num_key_value_heads=4,
            max_position_embeddings=131072,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            use_sliding_window=False,
            max_window_layers=28,
            **_rope_parameters(1000000.0),
        ),
    ),
    "Qwen3-8B": (
        "qwen3",
        dict(
            vocab_size=151936,
            hidden_size=4096,
            intermediate_size=12288,
            num_hidden_layers=36,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=128,
            max_position_embeddings=40960,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            use_sliding_window=False,
            **_rope_parameters(1000000.0),
        ),
    ),
    "Qwen3-30B-A3B": (
        "qwen3_moe",
        dict(
            vocab_size=151936,
            hidden_size=2048,
            intermediate_size=6144,
            moe_intermediate_size=768,
            num_hidden_layers=48,
            num_attention_heads=32,
            num_key_value_heads=4,
            head_dim=128,
            num_experts=128,
            num_experts_per_tok=8,
            norm_topk_prob=True,
            decoder_sparse_step=1,
            mlp_only_layers=[],
            max_position_embeddings=40960,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            use_sliding_window=False,
            **_rope_parameters(1000000.0),
        ),
    ),
    "Gemma-2-2B": (
        "gemma2",
        dict(
            vocab_size=256000,
            hidden_size=2304,
            intermediate_size=9216,
            num_hidden_layers=26,
            num_attention_heads=8,
            num_key_value_heads=4,
            head_dim=256,
            hidden_activation="gelu_pytorch_tanh",
            max_position_embeddings=8192,
            rms_norm_eps=1e-6,
            query_pre_attn_scalar=256,
            sliding_window=4096,
            attn_logit_softcapping=50.0,
            final_logit_softcapping=30.0,
            tie_word_embeddings=True,
            **_rope_parameters(10000.0),
        ),
    ),
    "Phi-3-mini-4k": (
        "phi3",
        dict(
            vocab_size=32064,
            hidden_size=3072,
            intermediate_size=8192,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=32,
            max_position_embeddings=4096,
            original_max_position_embeddings=4096,
            rms_norm_eps=1e-5,
            sliding_window=2047,
            tie_word_embeddings=False,
            **_rope_parameters(10000.0),
        ),
    ),
    "OLMo-7B": (
        "olmo",
        dict(
            vocab_size=50304,
            hidden_size=4096,
            intermediate_size=11008,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=32,
            max_position_embeddings=2048,
            clip_qkv=None,
            tie_word_embeddings=False,
            **_rope_parameters(10000.0),
        ),
    ),
    "OLMo-2-7B": (
        "olmo2",
        dict(
            vocab_size=100352,
            hidden_size=4096,
            intermediate_size=11008,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=32,
            max_position_embeddings=4096,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            **_rope_parameters(500000.0),
        ),
    ),
    "DeepSeek-V3": (
        "deepseek_v3",
        dict(
            vocab_size=129280,
            hidden_size=7168,
            intermediate_size=18432,
            moe_intermediate_size=2048,
            num_hidden_layers=61,
            num_attention_heads=128,
            num_key_value_heads=128,
            n_shared_experts=1,
            n_routed_experts=256,
            num_experts_per_tok=8,
            routed_scaling_factor=2.5,
            n_group=8,
            topk_group=4,
            first_k_dense_replace=3,
            norm_topk_prob=True,
            q_lora_rank=1536,
            kv_lora_rank=512,
            qk_nope_head_dim=128,
            qk_rope_head_dim=64,
            v_head_dim=128,
            max_position_embeddings=163840,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            rope_interleave=True,
            **_rope_parameters(
                10000.0,
                rope_type="yarn",
                factor=40.0,
                beta_fast=32.0,
                beta_slow=1.0,
                mscale=1.0,
                mscale_all_dim=1.0,
                original_max_position_embeddings=4096,
            ),
        ),
    ),
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


_TINY_TOKENS = dict(bos_token_id=0, eos_token_id=1, pad_token_id=None)  # inside the toy vocabulary


def tiny(name: str, **overrides):
    """The family of `name` at toy sizes (for tests and quick forward passes), as a config:
    the published fields with the family's toy sizes (`lmcourse.families`) on top."""
    if name not in _PUBLISHED:
        raise ValueError(f"unknown configuration {name!r}; available: {available()}")
    from transformers import AutoConfig

    model_type, fields = _PUBLISHED[name]
    fields = {**fields, **_TINY_TOKENS, **family(model_type).toy, **overrides}
    return AutoConfig.for_model(model_type, **fields)


def declared_context(config) -> int | None:
    """The longest context a transformers config declares (max_position_embeddings or, for
    GPT-2, n_positions); None for seed-style dicts and specs without a learned table."""
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


def read_field(config, name: str):
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
            "GPT-2": _shown(read_field(gpt2, old)) if old else missing,
            "Llama field": new,
        }
        row |= {name: _shown(read_field(config, new)) for name, config in llamas.items()}
        rows.append(row)
    return rows
