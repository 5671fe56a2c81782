"""`ModelSpec`: one frozen description of a decoder-only architecture.

Everything the course computes (parameter counts, cache bytes, FLOPs) and builds
(`DecoderLM`) starts from a `ModelSpec`. It is built from a seed-style dict
(`ModelSpec.from_dict`) or from a transformers config (`ModelSpec.from_transformers`),
and validated on construction: a bad value raises `ValueError` naming the field and
saying what would be valid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# Field list (shared contract between spec.py, count.py and blocks/):
#
# identity
#   family           str    'gpt2', 'llama', 'mistral', 'mixtral', 'qwen2', 'qwen3', 'qwen3_moe',
#                           'gemma2', 'phi3', 'olmo', 'deepseek_v3', 'opt', or 'custom' (seed-style
#                           dicts)
# sizes
#   d                int    model width (hidden_size)
#   layers           int    number of decoder blocks
#   vocab            int    vocabulary size
#   heads            int    query heads
#   kv_heads         int    key-value heads (== heads: MHA, 1: MQA, in between: GQA)
#   head_dim         int    width of one head (d // heads unless the family says otherwise)
# feed-forward
#   ffn              str    'gelu' (two matrices) | 'swiglu' | 'geglu' (three matrices, gated)
#   hidden           int    feed-forward width (intermediate_size)
#   act              str    activation name as transformers spells it ('gelu_new', 'silu',
#                           'gelu_pytorch_tanh', ...)
# biases
#   qkv_bias         bool   biases on the query, key and value projections
#   out_bias         bool   bias on the attention output projection
#   mlp_bias         bool   biases on the feed-forward projections
# normalisation
#   norm             str    'layer' (LayerNorm) | 'rms' (RMSNorm)
#   norm_affine      bool   the norm has a learned scale (False: OLMo's parameter-free LayerNorm)
#   norm_bias        bool   the norm has a learned shift (LayerNorm of GPT-2)
#   norms_per_block  int    2 (pre-norm) or 4 (Gemma 2's sandwich norms)
#   qk_norm          bool   RMSNorm on each query and key head (Qwen3)
#   norm_eps         float
#   norm_offset      float  scale applied as (offset + weight): 1.0 for Gemma 2, else 0.0
# embeddings and positions
#   tied             bool   output projection shares the token table
#   positions        int    rows of a learned position table (0: none, rotary instead)
#   position_offset  int    position p reads row p + offset of that table (OPT: 2, else 0)
#   rope_theta       float  rotary base (0.0 when positions are learned)
#   rope_scaling     tuple  sorted (key, value) pairs of transformers' rope_parameters beyond the
#                           base (for example llama3 factor/low_freq_factor/...), () when none
#   rotary_dim       int    dimensions of a head that are rotated (head_dim unless partial)
#   rope_interleave  bool   DeepSeek-V3's interleaved layout of the rotary dimensions
#   embed_scale      float  multiply token embeddings by this (Gemma 2: sqrt(d)), else 1.0
#   attn_scale       float  score scale, 1/sqrt(head_dim) unless the family says otherwise
#   attn_softcap     float  tanh soft-cap of attention scores (0.0: none)
#   qkv_clip         float  clamp queries, keys and values to [-clip, clip] (OLMo; 0.0: none)
#   final_softcap    float  tanh soft-cap of the logits (0.0: none)
# attention span
#   sliding_window   int    window of sliding-window layers (0: none)
#   layer_types      tuple  per layer 'full_attention' or 'sliding_attention'
# mixture of experts (experts == 0: dense)
#   experts          int    routed experts per MoE layer
#   experts_per_token int   top-k
#   expert_hidden    int    width of one routed expert
#   shared_experts   int    always-on experts (DeepSeek-V3), each expert_hidden wide
#   dense_layers     int    the first `dense_layers` blocks have a dense feed-forward, `hidden` wide
#   norm_topk        bool   renormalise the top-k router weights to sum to 1
#   router_bias      bool   DeepSeek-V3's score-correction bias on the router
#   routed_scale     float  multiplier of the routed output (DeepSeek-V3: 2.5)
#   n_group, topk_group int DeepSeek-V3's group-limited routing (1, 1 otherwise)
# latent attention, MLA (kv_lora_rank == 0: ordinary attention)
#   q_lora_rank      int    0: queries projected directly
#   kv_lora_rank     int
#   qk_nope_head_dim int
#   qk_rope_head_dim int
#   v_head_dim       int

FFN_KINDS = ("gelu", "swiglu", "geglu")
NORM_KINDS = ("layer", "rms")
LAYER_KINDS = ("full_attention", "sliding_attention")


@dataclass(frozen=True)
class ModelSpec:
    d: int
    layers: int
    vocab: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: str
    hidden: int
    norm: str
    family: str = "custom"
    act: str = ""
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    norm_affine: bool = True
    norm_bias: bool = False
    norms_per_block: int = 2
    qk_norm: bool = False
    norm_eps: float = 1e-5
    norm_offset: float = 0.0
    tied: bool = False
    positions: int = 0
    position_offset: int = 0
    rope_theta: float = 10000.0
    rope_scaling: tuple = ()
    rotary_dim: int = 0
    rope_interleave: bool = False
    embed_scale: float = 1.0
    attn_scale: float = 0.0
    attn_softcap: float = 0.0
    final_softcap: float = 0.0
    sliding_window: int = 0
    layer_types: tuple = field(default=())
    experts: int = 0
    experts_per_token: int = 0
    expert_hidden: int = 0
    shared_experts: int = 0
    dense_layers: int = 0
    norm_topk: bool = False
    router_bias: bool = False
    routed_scale: float = 1.0
    n_group: int = 1
    topk_group: int = 1
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    qkv_clip: float = 0.0

    def __post_init__(self):
        for name in ("d", "layers", "vocab", "heads", "kv_heads", "head_dim", "hidden"):
            _check_int(name, getattr(self, name), low=1)
        for name in ("positions", "position_offset", "rotary_dim", "sliding_window", "experts",
                     "experts_per_token", "expert_hidden", "shared_experts", "dense_layers",
                     "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                     "v_head_dim"):
            _check_int(name, getattr(self, name), low=0)
        _check_int("n_group", self.n_group, low=1)
        _check_int("topk_group", self.topk_group, low=1)
        for name in ("norm_eps", "embed_scale", "routed_scale"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("attn_scale", "attn_softcap", "final_softcap", "rope_theta", "qkv_clip",
                     "norm_offset"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if self.ffn not in FFN_KINDS:
            raise ValueError(f"ffn must be one of {FFN_KINDS}, got {self.ffn!r}")
        if self.norm not in NORM_KINDS:
            raise ValueError(f"norm must be one of {NORM_KINDS}, got {self.norm!r}")
        if self.norms_per_block not in (2, 4):
            raise ValueError(f"norms_per_block must be 2 or 4, got {self.norms_per_block!r}")
        if self.norm_bias and (self.norm != "layer" or not self.norm_affine):
            raise ValueError("norm_bias=True needs norm='layer' with norm_affine=True")
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads={self.kv_heads} must divide heads={self.heads} "
                             f"(valid: {_divisors(self.heads)})")
        if self.positions and self.rope_theta:
            raise ValueError("a spec has learned positions (positions > 0) or rotary positions "
                             "(rope_theta > 0), not both; set rope_theta=0.0 with positions")
        if not self.positions and not self.rope_theta:
            raise ValueError("no positions: set positions > 0 (learned table) or rope_theta > 0")
        if self.position_offset >= max(self.positions, 1):
            raise ValueError(f"position_offset={self.position_offset} needs a learned table with "
                             f"more rows (positions={self.positions})")
        if self.rotary_dim > self.head_dim or self.rotary_dim % 2:
            raise ValueError(f"rotary_dim must be even and <= head_dim={self.head_dim}, "
                             f"got {self.rotary_dim}")
        self._check_experts()
        self._check_latent()
        self._check_layer_types()
        # Fill the derived defaults, so that readers of a spec never see a placeholder 0.
        if self.rope_theta and not self.rotary_dim:
            rotary = self.qk_rope_head_dim if self.kv_lora_rank else self.head_dim
            object.__setattr__(self, "rotary_dim", rotary)
        if not self.attn_scale:
            object.__setattr__(self, "attn_scale", self.head_dim**-0.5)
        if not self.layer_types:
            kind = "sliding_attention" if self.sliding_window else "full_attention"
            object.__setattr__(self, "layer_types", (kind,) * self.layers)
        object.__setattr__(self, "layer_types", tuple(self.layer_types))
        object.__setattr__(self, "rope_scaling", tuple(self.rope_scaling))

    def _check_experts(self):
        if not self.experts:
            for name in ("experts_per_token", "expert_hidden", "shared_experts", "dense_layers"):
                if getattr(self, name):
                    raise ValueError(f"{name}={getattr(self, name)} needs experts > 0 "
                                     "(experts=0 is a dense model)")
            return
        if not 1 <= self.experts_per_token <= self.experts:
            raise ValueError(f"experts_per_token must be in 1..experts={self.experts}, "
                             f"got {self.experts_per_token}")
        if not self.expert_hidden:
            raise ValueError("expert_hidden must be > 0 when experts > 0")
        if self.dense_layers >= self.layers:
            raise ValueError(f"dense_layers must be < layers={self.layers}, "
                             f"got {self.dense_layers}")
        if self.experts % self.n_group or self.topk_group > self.n_group:
            raise ValueError(f"n_group={self.n_group} must divide experts={self.experts} and "
                             f"topk_group={self.topk_group} must be <= n_group")

    def _check_latent(self):
        if not self.kv_lora_rank:
            if self.q_lora_rank:
                raise ValueError("q_lora_rank > 0 needs latent attention (kv_lora_rank > 0)")
            return
        for name in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            _check_int(name, getattr(self, name), low=1)
        qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        if self.head_dim != qk:
            raise ValueError(f"head_dim must be qk_nope_head_dim + qk_rope_head_dim = {qk} "
                             f"with latent attention, got {self.head_dim}")
        if self.kv_heads != self.heads:
            raise ValueError(f"kv_heads must equal heads={self.heads} with latent attention")

    def _check_layer_types(self):
        if not self.layer_types:
            return
        if len(self.layer_types) != self.layers:
            raise ValueError(f"layer_types must have one entry per layer ({self.layers}), "
                             f"got {len(self.layer_types)}")
        bad = sorted(set(self.layer_types) - set(LAYER_KINDS))
        if bad:
            raise ValueError(f"layer_types entries must be in {LAYER_KINDS}, got {bad}")
        if "sliding_attention" in self.layer_types and not self.sliding_window:
            raise ValueError("layer_types has 'sliding_attention' layers but sliding_window=0; "
                             "set sliding_window > 0")

    @property
    def moe_layers(self) -> int:
        """Blocks whose feed-forward is a mixture of experts."""
        return self.layers - self.dense_layers if self.experts else 0

    # ---- constructors -------------------------------------------------------------------

    @classmethod
    def from_dict(cls, c: dict) -> ModelSpec:
        """Build a spec from a seed-style dict (the T1 lesson's `describe` input).

        'gelu' is the GPT-2 feed-forward: width 4d unless `hidden` is given, with biases;
        'swiglu' and 'geglu' take `hidden` and have no biases. `bias=True` puts biases on
        the query, key, value and output projections; norm 'layer' has a scale and a shift.
        """
        if not isinstance(c, dict):
            raise ValueError(f"config must be a dict, got {type(c).__name__}")
        unknown = sorted(set(c) - set(SEED_KEYS))
        if unknown:
            raise ValueError(f"unknown key(s) {unknown}; valid keys: {list(SEED_KEYS)}")
        required = ["d", "layers", "vocab", "heads", "ffn", "bias", "norm", "tied"]
        if c.get("ffn") != "gelu":
            required.append("hidden")
        for key in required:
            if key not in c:
                raise ValueError(f"missing key {key!r}; a seed-style dict needs {required}")
        d, heads = c["d"], c["heads"]
        _check_int("d", d, low=1)
        _check_int("heads", heads, low=1)
        if d % heads:
            raise ValueError(f"heads={heads} must divide d={d} (head_dim is d // heads); "
                             f"valid heads: {_divisors(d)}")
        if c["ffn"] not in FFN_KINDS:
            raise ValueError(f"ffn must be one of {FFN_KINDS}, got {c['ffn']!r}")
        positions = c.get("positions", 0)
        gelu = c["ffn"] == "gelu"
        return cls(
            d=d, layers=c["layers"], vocab=c["vocab"], heads=heads,
            kv_heads=c.get("kv_heads", heads), head_dim=d // heads,
            ffn=c["ffn"], hidden=c.get("hidden", 4 * d) if gelu else c["hidden"],
            act={"gelu": "gelu_new", "swiglu": "silu", "geglu": "gelu_pytorch_tanh"}[c["ffn"]],
            qkv_bias=bool(c["bias"]), out_bias=bool(c["bias"]), mlp_bias=gelu,
            norm=c["norm"], norm_bias=c["norm"] == "layer", tied=bool(c["tied"]),
            positions=positions, rope_theta=0.0 if positions else 10000.0,
        )

    @classmethod
    def from_transformers(cls, config) -> ModelSpec:
        """Build a spec from a transformers `PretrainedConfig` (families in `FAMILIES`)."""
        if isinstance(config, ModelSpec):
            return config
        model_type = getattr(config, "model_type", None)
        if model_type not in _READERS:
            raise ValueError(f"unsupported model_type {model_type!r}; supported families: "
                             f"{sorted(_READERS)}")
        return cls(family=model_type, **_READERS[model_type](config))


SEED_KEYS = ("d", "layers", "vocab", "heads", "kv_heads", "ffn", "hidden", "bias", "norm", "tied",
             "positions")


def as_spec(config) -> ModelSpec:
    """A seed-style dict, a transformers config or a `ModelSpec`, as a `ModelSpec`."""
    if isinstance(config, ModelSpec):
        return config
    if isinstance(config, dict):
        return ModelSpec.from_dict(config)
    if hasattr(config, "model_type"):
        return ModelSpec.from_transformers(config)
    raise ValueError(f"config must be a dict, a transformers config or a ModelSpec, "
                     f"got {type(config).__name__}")


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0] if n > 0 else []


# ---- transformers configs, one reader per family, written as diffs ----------------------


def _rope(c) -> dict:
    """rope_theta and the remaining rope_parameters (transformers 5.x keeps them together)."""
    params = dict(c.rope_parameters or {})
    theta = float(params.pop("rope_theta"))
    params.pop("partial_rotary_factor", None)
    if params.get("rope_type", "default") == "default":
        params.pop("rope_type", None)
    scaling = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))
    return {"rope_theta": theta, "rope_scaling": scaling}


def _llama(c) -> dict:
    head_dim = getattr(c, "head_dim", None) or _implied_head_dim(c)
    bias = bool(getattr(c, "attention_bias", False))
    return dict(
        d=c.hidden_size, layers=c.num_hidden_layers, vocab=c.vocab_size,
        heads=c.num_attention_heads, kv_heads=c.num_key_value_heads or c.num_attention_heads,
        head_dim=head_dim, ffn="swiglu", hidden=c.intermediate_size,
        act=getattr(c, "hidden_act", ""), qkv_bias=bias, out_bias=bias,
        mlp_bias=bool(getattr(c, "mlp_bias", False)), norm="rms",
        norm_eps=getattr(c, "rms_norm_eps", 1e-5), tied=bool(c.tie_word_embeddings), **_rope(c),
    )


def _implied_head_dim(c) -> int:
    if c.hidden_size % c.num_attention_heads:
        raise ValueError(f"num_attention_heads={c.num_attention_heads} must divide "
                         f"hidden_size={c.hidden_size} when head_dim is not given")
    return c.hidden_size // c.num_attention_heads


def _windows(c) -> dict:
    """Sliding-window layers as transformers' cache sees them (layer_types, else all layers)."""
    window = getattr(c, "sliding_window", None) or 0
    types = tuple(getattr(c, "layer_types", None) or ())
    if not types:
        types = (("sliding_attention" if window else "full_attention"),) * c.num_hidden_layers
    if "sliding_attention" not in types:
        window = 0
    return {"sliding_window": window, "layer_types": types}


def _gpt2(c) -> dict:
    return dict(
        d=c.n_embd, layers=c.n_layer, vocab=c.vocab_size, heads=c.n_head, kv_heads=c.n_head,
        head_dim=_implied_head_dim(c),
        ffn="gelu", hidden=c.n_inner or 4 * c.n_embd, act=c.activation_function,
        qkv_bias=True, out_bias=True, mlp_bias=True, norm="layer", norm_bias=True,
        norm_eps=c.layer_norm_epsilon, tied=bool(c.tie_word_embeddings),
        positions=c.n_positions, rope_theta=0.0,
    )


def _opt(c) -> dict:
    """OPT: GPT-2's block with ReLU, separate q/k/v projections and a table offset by 2."""
    unsupported = [f"{name}={getattr(c, name)!r} (supported: {valid!r})" for name, valid in (
        ("do_layer_norm_before", True), ("word_embed_proj_dim", c.hidden_size),
        ("_remove_final_layer_norm", False)) if getattr(c, name) != valid]
    if unsupported:  # OPT-350m's post-norm blocks and projected embeddings are not built here
        raise ValueError(f"opt: unsupported {', '.join(unsupported)}; lmcourse builds pre-norm OPT "
                         "models whose embeddings are hidden_size wide (OPT-125m, OPT-1.3B and up)")
    bias, affine = bool(c.enable_bias), bool(c.layer_norm_elementwise_affine)
    return dict(
        d=c.hidden_size, layers=c.num_hidden_layers, vocab=c.vocab_size,
        heads=c.num_attention_heads, kv_heads=c.num_attention_heads, head_dim=_implied_head_dim(c),
        ffn="gelu", hidden=c.ffn_dim, act=c.activation_function, qkv_bias=bias, out_bias=bias,
        mlp_bias=bias, norm="layer", norm_affine=affine, norm_bias=affine, norm_eps=1e-5,
        tied=bool(c.tie_word_embeddings), positions=c.max_position_embeddings + 2,
        position_offset=2, rope_theta=0.0,
    )


def _mistral(c) -> dict:
    return _llama(c) | _windows(c)


def _mixtral(c) -> dict:
    return _mistral(c) | dict(experts=c.num_local_experts, experts_per_token=c.num_experts_per_tok,
                              expert_hidden=c.intermediate_size, norm_topk=True)


def _qwen2(c) -> dict:
    return _llama(c) | dict(qkv_bias=True, out_bias=False) | _windows(c)


def _qwen3(c) -> dict:
    return _llama(c) | dict(qk_norm=True) | _windows(c)


def _qwen3_moe(c) -> dict:
    layers = c.num_hidden_layers
    sparse = [i for i in range(layers)
              if i not in c.mlp_only_layers and (i + 1) % c.decoder_sparse_step == 0]
    dense = layers - len(sparse)
    if sparse != list(range(dense, layers)):
        raise ValueError("qwen3_moe: only the first layers may be dense (mlp_only_layers=[0..k-1], "
                         f"decoder_sparse_step=1); got sparse layers {sparse}")
    return _qwen3(c) | dict(experts=c.num_local_experts, experts_per_token=c.num_experts_per_tok,
                            expert_hidden=c.moe_intermediate_size, dense_layers=dense,
                            norm_topk=bool(c.norm_topk_prob))


def _gemma2(c) -> dict:
    return _llama(c) | _windows(c) | dict(
        ffn="geglu", act=c.hidden_activation, norms_per_block=4, norm_offset=1.0,
        embed_scale=c.hidden_size**0.5, attn_scale=c.query_pre_attn_scalar**-0.5,
        attn_softcap=c.attn_logit_softcapping or 0.0,
        final_softcap=c.final_logit_softcapping or 0.0,
    )


def _phi3(c) -> dict:
    spec = _llama(c) | _windows(c)
    factor = (c.rope_parameters or {}).get("partial_rotary_factor", 1.0)
    return spec | dict(rotary_dim=int(spec["head_dim"] * factor))


def _olmo(c) -> dict:
    return _llama(c) | dict(norm="layer", norm_affine=False, norm_eps=1e-5,
                            qkv_clip=float(c.clip_qkv or 0.0))


def yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """YaRN's magnitude correction for a context stretched by `factor`: 1 + 0.1 mscale ln(factor)
    (1 when nothing is stretched)."""
    return 0.1 * mscale * math.log(factor) + 1.0 if factor > 1 else 1.0


def _deepseek_v3(c) -> dict:
    spec = _llama(c)
    qk = c.qk_nope_head_dim + c.qk_rope_head_dim
    scale = qk**-0.5
    rope = c.rope_parameters or {}
    if rope.get("rope_type", "default") != "default" and rope.get("mscale_all_dim"):
        # transformers' yarn_apply_mscale: the score scale grows with the context extension
        scale *= yarn_mscale(rope["factor"], rope["mscale_all_dim"]) ** 2
    return spec | dict(
        kv_heads=c.num_attention_heads, head_dim=qk, attn_scale=scale,
        rope_interleave=bool(c.rope_interleave),
        experts=c.n_routed_experts, experts_per_token=c.num_experts_per_tok,
        expert_hidden=c.moe_intermediate_size, shared_experts=c.n_shared_experts,
        dense_layers=c.first_k_dense_replace, norm_topk=bool(c.norm_topk_prob),
        router_bias=True, routed_scale=float(c.routed_scaling_factor),
        n_group=c.n_group, topk_group=c.topk_group,
        q_lora_rank=c.q_lora_rank or 0, kv_lora_rank=c.kv_lora_rank,
        qk_nope_head_dim=c.qk_nope_head_dim, qk_rope_head_dim=c.qk_rope_head_dim,
        v_head_dim=c.v_head_dim,
    )


_READERS = {
    "gpt2": _gpt2, "llama": _llama, "mistral": _mistral, "mixtral": _mixtral, "qwen2": _qwen2,
    "qwen3": _qwen3, "qwen3_moe": _qwen3_moe, "gemma2": _gemma2, "phi3": _phi3, "olmo": _olmo,
    "deepseek_v3": _deepseek_v3, "opt": _opt,
}
FAMILIES = tuple(_READERS)
