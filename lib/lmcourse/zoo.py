"""Families side by side: a block as a diff of another, and one summary row per architecture.

    diff(base, spec)            the spec fields in which `spec` differs from `base`
    design_diff(base, spec)     the same less the size fields, with the key-value sharing and
                                the kind of positions the sizes decide shown instead
    pattern(kinds)              per-layer kinds written as their repeating unit
    presets_by_family()         the published presets (`lmcourse.configs`) of each registry family
    norm_modules(config)        norm layers inside one decoder block, as transformers builds them
    block_layout(config)        the parts of a model from input to output, each with its label
    table_row(config)           a table row: parameters, norms, attention, feed-forward, positions,
                                cache bytes per token (every count from `lmcourse.count`)
    linear_attention_state(c)   numbers a hybrid linear-attention model (Qwen3-Next) keeps per
                                sequence: a fixed state per linear layer, plus a growing cache

Everything is read from a `ModelSpec` (or a config `as_spec` accepts); nothing is built.
"""

from __future__ import annotations

import dataclasses

from . import configs
from .count import describe
from .families import FAMILIES, as_spec
from .spec import ModelSpec

# The spec stores what a family chose (a score scale, a rotated fraction, a layer pattern); a diff
# shows the values that follow, under the names the rest of the course reads, and only when the
# rest of the spec does not already explain them.
_DERIVED = {
    "score_scale": "attn_scale",
    "rotary_fraction": "rotary_dim",
    "layer_pattern": "layer_types",
}
_IDENTITY = ("family",)  # the name of the row, not a difference of the block


def pattern(kinds) -> str:
    """Per-layer kinds as their shortest repeating unit, each run counted:
    '(5 sliding + 1 full) x4 + 2 sliding' for Gemma 3's 26 layers, '32 full' for Llama 2."""
    kinds = [k.split("_")[0] for k in kinds]  # 'sliding_attention' -> 'sliding'
    period = next(
        n for n in range(1, len(kinds) + 1) if all(k == kinds[i % n] for i, k in enumerate(kinds))
    )
    repeats, rest = divmod(len(kinds), period)

    def runs(part):
        counted = [[part[0], 0]]
        for kind in part:
            if kind != counted[-1][0]:
                counted.append([kind, 0])
            counted[-1][1] += 1
        return " + ".join(f"{n} {kind}" for kind, n in counted)

    if period in (1, len(kinds)):  # one kind throughout, or no repetition
        return runs(kinds)
    unit = f"({runs(kinds[:period])}) x{repeats}"
    return unit + (f" + {runs(kinds[:rest])}" if rest else "")


def _show(value):
    if isinstance(value, tuple) and value and all(isinstance(v, str) for v in value):
        return pattern(value)
    if isinstance(value, tuple):
        return dict(value)  # rope_scaling pairs
    return value


def diff(base, spec) -> dict[str, tuple]:
    """{field: (base value, spec value)} for every `ModelSpec` field that differs.

    Derived fields (score scale, rotated width, per-layer kinds) are listed only when the rest
    of the spec does not already explain them: a layer_types list that is not all one kind,
    a rotated width that is not the whole head, a scale that is not 1/sqrt(head_dim).
    """
    a, b = as_spec(base), as_spec(spec)
    changes = {}
    for f in dataclasses.fields(ModelSpec):
        name = _DERIVED.get(f.name, f.name)
        x, y = getattr(a, name), getattr(b, name)
        if x == y or name in _IDENTITY or (f.name in _DERIVED and not _chosen(b, name)):
            continue
        changes[name] = (_show(x), _show(y))
    return changes


# Fields that set how big a model is, not what its block does. `design_diff` leaves them out and
# shows what two of them decide (how key-value heads are shared, whether a position table exists).
SIZE_FIELDS = frozenset(
    {
        "d",
        "layers",
        "vocab",
        "heads",
        "kv_heads",
        "head_dim",
        "hidden",
        "positions",
        "expert_hidden",
        "q_lora_rank",
        "kv_lora_rank",
        "qk_nope_head_dim",
        "qk_rope_head_dim",
        "v_head_dim",
    }
)


def kv_sharing(config) -> str:
    """'MHA', 'MQA', 'MLA', or 'GQA g:1' with g query heads per key-value head."""
    s = as_spec(config)
    if s.kv_lora_rank:
        return "MLA"
    if s.kv_heads == s.heads:
        return "MHA"
    return "MQA" if s.kv_heads == 1 else f"GQA {s.heads // s.kv_heads}:1"


# Fields that only say how a family rounds in half precision (in float32 they change nothing):
# an implementation's choice, not the block's design. `design_diff` leaves them out.
ROUNDING_FIELDS = frozenset({"router_weights_in_model_dtype"})


def design_diff(base, spec) -> dict[str, tuple]:
    """`diff` less `SIZE_FIELDS` and `ROUNDING_FIELDS`, plus `kv_sharing` and
    `learned_positions` where they differ: the choices two published models differ in, whatever
    their sizes."""
    a, b = as_spec(base), as_spec(spec)
    decided = {
        "kv_sharing": (kv_sharing(a), kv_sharing(b)),
        "learned_positions": (bool(a.positions), bool(b.positions)),
    }
    changes = {k: v for k, v in decided.items() if v[0] != v[1]}
    left_out = SIZE_FIELDS | ROUNDING_FIELDS
    return changes | {k: v for k, v in diff(a, b).items() if k not in left_out}


def presets_by_family() -> dict[str, list[str]]:
    """{model_type: names `configs.load` accepts} for every family of the registry, in the
    registry's order, each list in `configs.available()` order (an empty list: no preset)."""
    found = {name: [] for name in FAMILIES}
    for preset in configs.available():
        found[configs.load(preset).model_type].append(preset)
    return found


def _chosen(s: ModelSpec, name: str) -> bool:
    if name == "attn_scale":
        return abs(s.attn_scale - s.head_dim**-0.5) > 1e-12
    if name == "rotary_dim":
        return s.rope_theta > 0 and s.rotary_dim != (s.qk_rope_head_dim or s.head_dim)
    return len(set(s.layer_types)) > 1  # layer_types


def norm_modules(config) -> int:
    """Norm layers in one decoder block: 2 (pre-norm) or 4 (sandwich), plus a query and a key
    norm (QK-norm), plus latent attention's norms on the compressed key-value (and query)."""
    s = as_spec(config)
    latent = (1 + bool(s.q_lora_rank)) if s.kv_lora_rank else 0
    return s.norms_per_block + 2 * s.qk_norm + latent


def norm_placement(config) -> str:
    s = as_spec(config)
    kind = {"layer": "LayerNorm", "rms": "RMSNorm"}[s.norm]
    if s.norm == "layer" and not s.norm_affine:
        kind += " (no parameters)"
    # norms_after is OLMo 2's "reordered" norm, x + norm(f(x)): not the post-norm of OPT-350m or
    # the original Transformer, norm(x + f(x)), which normalises the residual stream itself
    where = ["sandwich" if s.norms_per_block == 4 else "reordered" if s.norms_after else "pre"]
    if s.qk_norm:
        where.append("QK-norm across heads" if s.qk_norm_all_heads else "QK-norm")
    if s.kv_lora_rank:
        where.append("latent")
    return f"{kind}: {' + '.join(where)}"


def attention_kind(config) -> str:
    s = as_spec(config)
    if s.kv_lora_rank:
        kind = f"MLA (latent {s.kv_lora_rank} + rotary key {s.qk_rope_head_dim})"
    elif s.kv_heads == s.heads:
        kind = f"MHA ({s.heads} heads)"
    elif s.kv_heads == 1:
        kind = f"MQA ({s.heads} heads)"
    else:
        kind = f"GQA ({s.heads} heads, {s.kv_heads} kv)"
    sliding = s.layer_types.count("sliding_attention")
    if sliding:
        kind += f", window {s.sliding_window:,} on {sliding} of {s.layers} layers"
    if s.attn_softcap:
        kind += f", soft-cap {s.attn_softcap:g}"
    return kind


def ffn_kind(config) -> str:
    s = as_spec(config)
    name = {"gelu": f"MLP ({s.activation})", "swiglu": "SwiGLU", "geglu": "GeGLU"}[s.ffn]
    if not s.experts:
        return name
    kind = f"MoE {name}: {s.experts_per_token} of {s.experts}"
    if s.shared_experts:
        kind += f" + {s.shared_experts} shared"
    if s.dense_layers:
        kind += f", first {s.dense_layers} dense"
    return kind


def positions_kind(config) -> str:
    s = as_spec(config)
    if s.positions:
        offset = f", offset {s.position_offset}" if s.position_offset else ""
        return f"learned ({s.positions:,} rows{offset})"
    kind = "RoPE" if s.rotary_dim == (s.qk_rope_head_dim or s.head_dim) else "partial RoPE"
    if s.kv_lora_rank:
        kind = f"decoupled RoPE ({s.rotary_dim} of {s.head_dim})"
    scaling = dict(s.rope_scaling)
    extra = f", {scaling['rope_type']} x{scaling['factor']:g}" if "rope_type" in scaling else ""
    return f"{kind} {s.rope_theta:,.0f}{extra}"


def block_layout(config) -> list[tuple[str, str]]:
    """The parts of a model from input to output, as (part, label) pairs: the part names are
    the same for every model ("embed", "positions", "norm1", "attention", "norm2", "ffn",
    "final_norm", "head"), the labels are read from the configuration."""
    s = as_spec(config)
    norm = {"layer": "LayerNorm", "rms": "RMSNorm"}[s.norm]
    group = s.heads // s.kv_heads
    kv = (
        f"{s.heads} heads, a key-value head each"
        if group == 1
        else f"{s.heads} query heads share {s.kv_heads} key-value heads"
    )
    if s.experts:
        ffn = f"{s.experts} experts, {s.experts_per_token} per token"
    elif s.ffn == "gelu":
        ffn = f"MLP: 2 matrices, width {s.hidden:,}, GELU"
    else:
        ffn = f"gated: 3 matrices, width {s.hidden:,}, {s.activation}"
    parts = [("embed", f"token table {s.vocab:,} x {s.d}")]
    if s.positions:
        parts.append(("positions", f"+ learned position table, {s.positions:,} rows"))
    rotary = "" if s.positions else f"\nq and k rotated by position (base {s.rope_theta:,.0f})"
    parts += [
        ("norm1", norm),
        ("attention", f"attention: {kv}{rotary}"),
        ("norm2", norm),
        ("ffn", ffn),
        ("final_norm", f"final {norm}"),
        ("head", "output: the token table (tied)" if s.tied else "output: its own matrix"),
    ]
    return parts


def table_row(config, kv_bytes=2) -> dict:
    """One row of the zoo table; every count comes from `describe`."""
    info = describe(config, kv_bytes=kv_bytes)
    return {
        "total": info["total"],
        "active": info["active"],
        "norms": norm_modules(config),
        "placement": norm_placement(config),
        "attention": attention_kind(config),
        "feed-forward": ffn_kind(config),
        "positions": positions_kind(config),
        "cache B/token": info["cache_bytes_per_token"],
    }


def linear_attention_state(config) -> dict[str, int]:
    """Numbers one sequence keeps in a hybrid model with gated delta-rule layers (Qwen3-Next).

    A linear-attention layer keeps, whatever the length, a causal-convolution window over its
    mixed query-key-value channels (channels x kernel) and one key x value matrix per value
    head (the recurrent state); a full-attention layer caches keys and values per token.

        fixed       numbers held by all linear layers together, at any length
        per_token   numbers added per token by the full-attention layers
    """
    kinds = list(getattr(config, "layer_types", None) or [])
    if not kinds or "linear_attention" not in kinds:
        raise ValueError(
            "config must have layer_types with 'linear_attention' layers "
            "(a hybrid such as transformers' Qwen3NextConfig)"
        )
    key_dim = config.linear_num_key_heads * config.linear_key_head_dim
    value_dim = config.linear_num_value_heads * config.linear_value_head_dim
    conv = (2 * key_dim + value_dim) * config.linear_conv_kernel_dim  # queries, keys, values
    recurrent = (
        config.linear_num_value_heads * config.linear_key_head_dim * config.linear_value_head_dim
    )
    full = kinds.count("full_attention")
    return {
        "linear_layers": kinds.count("linear_attention"),
        "full_layers": full,
        "conv_per_layer": conv,
        "recurrent_per_layer": recurrent,
        "fixed": kinds.count("linear_attention") * (conv + recurrent),
        "per_token": full * 2 * config.num_key_value_heads * config.head_dim,
    }
