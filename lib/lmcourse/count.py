"""The counter: parameters, key-value cache bytes and FLOPs of a decoder-only model.

Every function takes a config dict, a transformers config or a `ModelSpec` and works
from the spec alone (no model is built), yet counts exactly what transformers builds:

    describe(config)              block, total, cache bytes per token, feed-forward share, active
    breakdown(config)             parameters per component; the values sum to the total
    parameter_shares(config)      share of all parameters per group of components (SHARE_GROUPS)
    cache_bytes(config, tokens)   bytes the cache holds after `tokens` tokens
    flops_per_token(config, n)    forward matmul FLOPs of one token attending to n keys
    decode_step(config, n, batch) FLOPs and bytes read by one decoding step, and their ratio
    table(rows)                   a plain-text table of a list of dicts, for lessons

Conventions. A parameter is an entry of a tensor in `model.parameters()`, each tensor once
(a tied output head is the token table, so it is not counted again). DeepSeek-V3's router
score-correction bias is a buffer in transformers, not a parameter, and is not counted.
"""

from __future__ import annotations

import math

from .families import as_spec
from .spec import ModelSpec, check_int

# The keys `describe` returns first: the four figures the T1 lesson prints for its two models.
DESCRIBE_FIRST_KEYS = ("block", "total", "cache_bytes_per_token", "ffn_share")
BLOCK_PARTS = ("attention", "ffn", "experts", "shared_experts", "router", "norms")
PARTS = ("embeddings", "positions", *BLOCK_PARTS, "output_head")


# ---- parameters ------------------------------------------------------------------------


def _norm(s: ModelSpec, width: int) -> int:
    """One norm over `width` features: scale (if learned) and shift (LayerNorm with bias)."""
    return width * (int(s.norm_affine) + int(s.norm_bias))


def _attention(s: ModelSpec) -> int:
    if s.kv_lora_rank:  # MLA: queries through an optional low-rank bottleneck, keys and values
        qk = s.qk_nope_head_dim + s.qk_rope_head_dim  # from a shared latent plus one rotary key
        if s.q_lora_rank:  # q_a_proj, q_a_layernorm, q_b_proj
            q = s.d * s.q_lora_rank + s.q_lora_rank * s.qkv_bias + s.q_lora_rank
            q += s.q_lora_rank * s.heads * qk
        else:
            q = s.d * s.heads * qk
        kv_a = s.d * (s.kv_lora_rank + s.qk_rope_head_dim)  # kv_a_proj_with_mqa
        kv_a += (s.kv_lora_rank + s.qk_rope_head_dim) * s.qkv_bias + s.kv_lora_rank  # + norm
        kv_b = s.kv_lora_rank * s.heads * (s.qk_nope_head_dim + s.v_head_dim)
        out = s.heads * s.v_head_dim * s.d + s.d * s.out_bias
        return q + kv_a + kv_b + out
    q = s.heads * s.head_dim
    kv = s.kv_heads * s.head_dim
    weights = s.d * q + 2 * s.d * kv + q * s.d
    biases = (q + 2 * kv) * s.qkv_bias + s.d * s.out_bias
    qk_norm = 0  # one RMSNorm scale for queries, one for keys: per head, or across all heads
    if s.qk_norm:
        qk_norm = (s.heads + s.kv_heads) * s.head_dim if s.qk_norm_all_heads else 2 * s.head_dim
    return weights + biases + qk_norm


def _ffn(s: ModelSpec, hidden: int, bias: bool) -> int:
    """A feed-forward of width `hidden`: two matrices (gelu) or three (gated)."""
    if s.ffn == "gelu":
        return 2 * s.d * hidden + (hidden + s.d) * bias
    return 3 * s.d * hidden + (2 * hidden + s.d) * bias


def block_parts(config, layer: int = 0) -> dict[str, int]:
    """Parameters of decoder block `layer` (0-based), per component (`BLOCK_PARTS`)."""
    s = as_spec(config)
    if not (isinstance(layer, int) and 0 <= layer < s.layers):
        raise ValueError(f"layer must be an integer in 0..{s.layers - 1}, got {layer!r}")
    return _block_parts(s, layer)


def _block_parts(s: ModelSpec, layer: int) -> dict[str, int]:
    moe = s.experts and layer >= s.dense_layers
    return {
        "attention": _attention(s),
        "ffn": 0 if moe else _ffn(s, s.hidden, s.ffn_bias),
        "experts": s.experts * _ffn(s, s.expert_hidden, False) if moe else 0,
        "shared_experts": _ffn(s, s.expert_hidden * s.shared_experts, False) if moe else 0,
        "router": s.experts * s.d if moe else 0,
        "norms": s.norms_per_block * _norm(s, s.d),
    }


def breakdown(config) -> dict[str, int]:
    """Parameters of the whole model per component (`PARTS`); the values sum to the total.

    Norms inside attention (Qwen3's query/key norms, MLA's latent norms) count as attention;
    `norms` holds the block norms and the final norm.
    """
    return _breakdown(as_spec(config))


def _breakdown(s: ModelSpec) -> dict[str, int]:
    parts = dict.fromkeys(PARTS, 0)
    parts["embeddings"] = s.vocab * s.d
    parts["positions"] = s.positions * s.d
    # dense blocks first (all of them for a dense model), then the MoE blocks
    for first, count in ((0, s.layers - s.moe_layers), (s.dense_layers, s.moe_layers)):
        if count:
            for name, value in _block_parts(s, first).items():
                parts[name] += count * value
    parts["norms"] += _norm(s, s.d)  # final norm
    parts["output_head"] = 0 if s.tied else s.vocab * s.d
    return parts


SHARE_GROUPS = {  # label -> components of `breakdown`
    "token table and output head": ("embeddings", "output_head"),
    "learned positions": ("positions",),
    "attention": ("attention",),
    "feed-forward (experts included)": ("ffn", "experts", "shared_experts", "router"),
    "norms": ("norms",),
}


def parameter_shares(config) -> dict[str, float]:
    """Share of all parameters in each group of `SHARE_GROUPS`; the shares sum to 1."""
    parts = breakdown(config)
    total = sum(parts.values())
    return {label: sum(parts[p] for p in names) / total for label, names in SHARE_GROUPS.items()}


def describe(config, kv_bytes=2) -> dict:
    """The T1 lesson's summary of a configuration.

    Keys, the four the T1 lesson prints first: `block` (parameters of the first decoder block),
    `total` (every unique parameter), `cache_bytes_per_token` (key-value cache added per token,
    before any sliding window fills), `ffn_share` (feed-forward share of the first block, 3
    decimals), then `active` (parameters one token uses: the total less the routed experts it
    skips).

    `active` follows one convention of several: it keeps both embedding tables (the input table
    is only looked up, not multiplied), the router and any shared experts. Model cards and papers
    may round it or leave the embeddings out; `breakdown` gives the parts to recount it.
    """
    s, kv_bytes = as_spec(config), _check_bytes(kv_bytes)
    block = _block_parts(s, 0)
    parts = _breakdown(s)
    total = sum(parts.values())
    ffn = block["ffn"] + block["experts"] + block["shared_experts"] + block["router"]
    routed = parts["experts"]  # every expert of every MoE layer; a token uses k of E
    active = total - routed + routed // s.experts * s.experts_per_token if s.experts else total
    return {
        "block": sum(block.values()),
        "total": total,
        "cache_bytes_per_token": math.ceil(_cache_numbers_per_token(s) * kv_bytes),
        "ffn_share": round(ffn / sum(block.values()), 3),
        "active": active,
    }


# ---- key-value cache -------------------------------------------------------------------


def _cache_numbers_per_layer(s: ModelSpec) -> int:
    """Numbers one layer caches per token: keys and values, or MLA's latent and rotary key."""
    if s.kv_lora_rank:  # transformers caches the normalised latent and the rotated shared key
        return s.kv_lora_rank + s.qk_rope_head_dim
    return 2 * s.kv_heads * s.head_dim


def _cache_numbers_per_token(s: ModelSpec) -> int:
    return s.layers * _cache_numbers_per_layer(s)


def _check_bytes(value, name: str = "kv_bytes", per: str = "cached number"):
    """A positive number of bytes per stored number, as an int when it is whole."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(
            f"{name} must be a positive number of bytes per {per} "
            f"(2 for 16-bit, 0.5 for 4-bit), got {value!r}"
        )
    return int(value) if float(value).is_integer() else value


def cached_tokens(config, tokens: int) -> list[int]:
    """Tokens each layer's cache holds after `tokens` tokens, as transformers 5.x keeps them.

    A sliding-window layer (`DynamicSlidingWindowLayer`) keeps the last `sliding_window - 1`
    tokens: the newest token attends to those plus itself, `sliding_window` in all.
    """
    return _cached_tokens(as_spec(config), check_int("tokens", tokens, low=0))


def _cached_tokens(s: ModelSpec, tokens: int) -> list[int]:
    return [
        min(tokens, s.sliding_window - 1) if kind == "sliding_attention" else tokens
        for kind in s.layer_types
    ]


def cache_bytes(config, tokens: int, kv_bytes=2, batch: int = 1) -> int:
    """Bytes the key-value cache holds after `tokens` tokens of `batch` sequences.

    Sliding-window layers are capped as transformers caps them (see `cached_tokens`); a
    fractional `kv_bytes` (4-bit caches) rounds the total up to whole bytes.
    """
    s = as_spec(config)
    return _cache_bytes(
        s,
        check_int("tokens", tokens, low=0),
        _check_bytes(kv_bytes),
        check_int("batch", batch, low=1),
    )


def _cache_bytes(s: ModelSpec, tokens: int, kv_bytes, batch: int) -> int:
    numbers = batch * sum(_cached_tokens(s, tokens)) * _cache_numbers_per_layer(s)
    return math.ceil(numbers * kv_bytes)


# ---- compute ---------------------------------------------------------------------------


def flops_per_token(config, context: int) -> int:
    """Forward matmul FLOPs of one token that attends to `context` keys (itself included).

    Convention: 2 FLOPs per multiply-add; every weight matrix the token passes through counts
    once (embedding lookups, norms, biases, activations and softmax are not counted); MoE
    layers count the router, the k chosen experts and the shared experts; attention adds
    q.k scores and the weighted sum of values over min(context, sliding_window) keys on
    sliding-window layers. MLA counts its key/value up-projection once per token (as when a
    whole sequence is processed), with scores over (nope + rope)-wide keys.
    """
    s = as_spec(config)
    return _flops_per_token(s, check_int("context", context, low=1, hint=" (keys attended to)"))


def _flops_per_token(s: ModelSpec, context: int) -> int:
    flops = 0
    for layer, kind in enumerate(s.layer_types):
        keys = min(context, s.sliding_window) if kind == "sliding_attention" else context
        qk_dim = s.head_dim  # MLA: head_dim is qk_nope + qk_rope
        v_dim = s.v_head_dim if s.kv_lora_rank else s.head_dim
        flops += 2 * _attention_weights(s) + 2 * s.heads * (qk_dim + v_dim) * keys
        moe = s.experts and layer >= s.dense_layers
        if moe:
            active = s.experts_per_token * s.expert_hidden + s.shared_experts * s.expert_hidden
            flops += 2 * (s.experts * s.d + _ffn_weights(s, active))
        else:
            flops += 2 * _ffn_weights(s, s.hidden)
    return flops + 2 * s.vocab * s.d  # output head


def decode_step(config, context: int, batch: int = 1, weight_bytes=2, kv_bytes=2) -> dict:
    """One decoding step of a dense model: `batch` sequences each add one token that attends to
    `context` keys (its own included). Returns

        flops       batch * flops_per_token(config, context)
        bytes       what the step reads from memory: every weight matrix once, shared by the
                    whole batch (the token and position tables only for the rows looked up,
                    unless the output head is the tied token table), plus every sequence's cache
        intensity   flops / bytes: FLOPs per byte read. A machine whose ratio of arithmetic to
                    memory bandwidth is higher than this waits on memory, not on arithmetic.

    Mixtures of experts are refused: the experts a batch reads depend on its routing.
    """
    s = as_spec(config)
    if s.experts:
        raise ValueError(
            "decode_step counts dense models only: which experts a batch of "
            "tokens reads depends on the router's choices"
        )
    batch = check_int("batch", batch, low=1, hint=" (sequences decoded together)")
    context = check_int("context", context, low=1, hint=" (keys attended to)")
    weight_bytes = _check_bytes(weight_bytes, "weight_bytes", "weight")
    flops = batch * _flops_per_token(s, context)
    row_tables = [rows for rows in (0 if s.tied else s.vocab, s.positions) if rows]
    weights = sum(_breakdown(s).values()) - sum(row_tables) * s.d + batch * len(row_tables) * s.d
    read = weights * weight_bytes + _cache_bytes(s, context, _check_bytes(kv_bytes), batch)
    return {"flops": flops, "bytes": read, "intensity": flops / read}


def _attention_weights(s: ModelSpec) -> int:
    if s.kv_lora_rank:
        qk = s.qk_nope_head_dim + s.qk_rope_head_dim
        q = (
            s.d * s.q_lora_rank + s.q_lora_rank * s.heads * qk
            if s.q_lora_rank
            else s.d * s.heads * qk
        )
        kv = s.d * (s.kv_lora_rank + s.qk_rope_head_dim)
        kv += s.kv_lora_rank * s.heads * (s.qk_nope_head_dim + s.v_head_dim)
        return q + kv + s.heads * s.v_head_dim * s.d
    return 2 * s.d * s.heads * s.head_dim + 2 * s.d * s.kv_heads * s.head_dim


def _ffn_weights(s: ModelSpec, hidden: int) -> int:
    return (2 if s.ffn == "gelu" else 3) * s.d * hidden


# ---- printing --------------------------------------------------------------------------


def table(rows: list[dict]) -> str:
    """A plain-text table: one column per key (first-seen order), integers with separators.

    Strings align left, numbers right; floats print with 3 decimals; missing cells are blank.
    """
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise ValueError("rows must be a non-empty list of dicts (one dict per table row)")
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[_cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(str(c)), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    numeric = [all(_is_number(row.get(c)) for row in rows if c in row) for c in columns]

    def line(values):
        return "  ".join(
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line([str(c) for c in columns]), rule, *(line(r) for r in cells)])


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}"
    if _is_number(value):
        return f"{value:,}"
    return str(value)


def requests_that_fit(config, tokens: int, gpu_bytes: float, kv_bytes=2, weight_bytes=2) -> int:
    """How many sequences of `tokens` tokens fit their caches beside the weights in `gpu_bytes`.

    Weights take `weight_bytes` per parameter (every parameter, experts included); nothing is
    reserved for activations or fragmentation, so real servers fit fewer.
    """
    if not gpu_bytes > 0:
        raise ValueError(f"gpu_bytes must be > 0, got {gpu_bytes!r}")
    s = as_spec(config)
    free = gpu_bytes - sum(_breakdown(s).values()) * weight_bytes
    per_request = _cache_bytes(s, check_int("tokens", tokens, low=0), _check_bytes(kv_bytes), 1)
    return max(0, int(free // per_request))
