"""`ModelSpec`: one frozen description of a decoder-only architecture.

Everything the course computes (parameter counts, cache bytes, FLOPs) and builds
(`DecoderLM`) starts from a `ModelSpec`. It is built from a config dict
(`ModelSpec.from_dict`) or from a transformers config (`lmcourse.as_spec`, through the family
registry in `lmcourse.families`), and validated on construction: a bad value raises
`ValueError` naming the field and saying what would be valid. This module imports no other
module of the course: the registry builds on it, never the other way round.

A spec stores only what a family chose. Values that follow from the other fields (the score
scale, the rotated width, the kind of each layer) are properties computed on every read, so
`dataclasses.replace(spec, head_dim=32)` or `replace(spec, layers=3)` is the same spec as one
built from scratch with those fields.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FFN_KINDS = ("gelu", "swiglu", "geglu")
# the activation of each feed-forward kind when a spec names none (`ModelSpec.activation`)
DEFAULT_ACTIVATION = {"gelu": "gelu_new", "swiglu": "silu", "geglu": "gelu_pytorch_tanh"}
NORM_KINDS = ("layer", "rms")
LAYER_KINDS = ("full_attention", "sliding_attention")
ROPE_LAYOUTS = ("half", "pairs")

__all__ = [
    "DEFAULT_ACTIVATION",
    "FFN_KINDS",
    "LAYER_KINDS",
    "NORM_KINDS",
    "ROPE_LAYOUTS",
    "DICT_KEYS",
    "ModelSpec",
    "check_int",
    "divisors",
    "yarn_mscale",
]


@dataclass(frozen=True)
class ModelSpec:
    # ---- sizes
    d: int  # model width (hidden_size)
    layers: int  # number of decoder blocks
    vocab: int  # vocabulary size
    heads: int  # query heads
    kv_heads: int  # key-value heads (== heads: MHA, 1: MQA, in between: GQA)
    head_dim: int  # width of one head (d // heads unless the family says otherwise)
    # ---- feed-forward (required part)
    ffn: str  # 'gelu' (two matrices) | 'swiglu' | 'geglu' (three matrices, gated)
    hidden: int  # feed-forward width (intermediate_size)
    # ---- normalisation (required part)
    norm: str  # 'layer' (LayerNorm) | 'rms' (RMSNorm)
    # ---- identity
    family: str = "custom"  # transformers' model_type; 'custom' for config dicts
    # ---- feed-forward
    act: str = ""  # activation as transformers spells it ('gelu_new', 'silu', 'relu', ...)
    # ---- biases
    qkv_bias: bool = False  # biases on the query, key and value projections
    out_bias: bool = False  # bias on the attention output projection
    ffn_bias: bool = False  # biases on the feed-forward projections
    # ---- normalisation
    norm_affine: bool = True  # the norm has a learned scale (False: OLMo's parameter-free norm)
    norm_bias: bool = False  # the norm has a learned shift (GPT-2's LayerNorm)
    norms_per_block: int = 2  # 2 (one per stage) or 4 (Gemma 2's sandwich: before and after)
    norms_after: bool = False  # with 2 norms: after each stage, not before it (OLMo 2)
    qk_norm: bool = False  # RMSNorm on the queries and keys (Qwen3: each head on its own)
    qk_norm_all_heads: bool = False  # that norm spans all heads at once (OLMo 2)
    norm_eps: float = 1e-5  # epsilon of every norm of the model
    norm_offset: float = 0.0  # scale applied as (offset + weight): 1.0 for Gemma, else 0.0
    # ---- embeddings and positions
    tied: bool = False  # the output projection shares the token table
    positions: int = 0  # rows of a learned position table (0: none, rotary instead)
    position_offset: int = 0  # position p reads row p + offset of that table (OPT: 2)
    rope_theta: float = 10000.0  # rotary base (0.0 when positions are learned)
    rope_scaling: tuple = ()  # sorted (key, value) pairs of rope_parameters beyond the base
    rotary_fraction: float = 1.0  # share of each head that rotates (GPT-NeoX, Qwen3-Next: 0.25)
    rope_layout: str = "half"  # rotary pairs: 'half' (x[i], x[i+dim/2]) | 'pairs' (x[2i], x[2i+1])
    embed_scale: float = 1.0  # token embeddings are multiplied by this (Gemma: sqrt(d))
    # ---- attention scores
    score_scale: float = 0.0  # the score scale a family sets (Gemma 2, yarn); 0: 1/sqrt(head_dim)
    attn_softcap: float = 0.0  # tanh soft-cap of attention scores (0.0: none)
    final_softcap: float = 0.0  # tanh soft-cap of the logits (0.0: none)
    # ---- multipliers on the residual stream and the logits
    residual_scale: float = 1.0  # each stage's output is multiplied by this before the sum
    logit_divisor: float = 1.0  # the logits are divided by this (Granite's logits_scaling)
    # ---- attention span
    sliding_window: int = 0  # keys a sliding-window layer sees (0: no such layers)
    layer_pattern: tuple = ()  # layer kinds, repeated over the layers; (): all one kind
    # ---- mixture of experts (experts == 0: dense)
    experts: int = 0  # routed experts per MoE layer
    experts_per_token: int = 0  # top-k
    expert_hidden: int = 0  # width of one routed expert
    shared_experts: int = 0  # always-on experts (DeepSeek-V3), each expert_hidden wide
    dense_layers: int = 0  # the first dense_layers blocks have a dense feed-forward
    norm_topk: bool = False  # renormalise the top-k router weights to sum to 1
    router_bias: bool = False  # DeepSeek-V3's score-correction bias on the router
    routed_scale: float = 1.0  # multiplier of the routed output (DeepSeek-V3: 2.5)
    router_weights_in_model_dtype: bool = False  # top-k weights in the model's dtype (Qwen3-MoE)
    n_group: int = 1  # DeepSeek-V3's group-limited routing: groups of experts
    topk_group: int = 1  # ... and how many groups a token may choose from
    # ---- latent attention, MLA (kv_lora_rank == 0: ordinary attention)
    q_lora_rank: int = 0  # 0: queries projected directly
    kv_lora_rank: int = 0  # width of the cached key-value latent
    qk_nope_head_dim: int = 0  # query/key width without rotation
    qk_rope_head_dim: int = 0  # query/key width that rotates (one rotary key shared by heads)
    v_head_dim: int = 0  # value width per head
    # ---- OLMo
    qkv_clip: float = 0.0  # clamp queries, keys and values to [-clip, clip] (0.0: none)

    # ---- what follows from the fields ---------------------------------------------------

    @property
    def activation(self) -> str:
        """The feed-forward's activation as transformers spells it: `act`, or the default of
        the feed-forward kind when the spec names none (DEFAULT_ACTIVATION)."""
        return self.act or DEFAULT_ACTIVATION[self.ffn]

    @property
    def attn_scale(self) -> float:
        """The factor on q.k: the family's `score_scale`, else 1/sqrt(head_dim)."""
        return self.score_scale or self.head_dim**-0.5

    @property
    def rotary_dim(self) -> int:
        """Dimensions of each head that rotate: MLA's rotary key, else rotary_fraction of the
        head (0 with learned positions)."""
        if not self.rope_theta:
            return 0
        if self.kv_lora_rank:
            return self.qk_rope_head_dim
        return int(self.head_dim * self.rotary_fraction)

    @property
    def layer_types(self) -> tuple[str, ...]:
        """Each layer's kind: `layer_pattern` repeated, else every layer sliding if
        sliding_window > 0 and full otherwise."""
        pattern = self.layer_pattern or (
            "sliding_attention" if self.sliding_window else "full_attention",
        )
        return tuple(pattern[i % len(pattern)] for i in range(self.layers))

    @property
    def moe_layers(self) -> int:
        """Blocks whose feed-forward is a mixture of experts."""
        return self.layers - self.dense_layers if self.experts else 0

    # ---- validation ---------------------------------------------------------------------

    def __post_init__(self):
        for name in _SIZES:
            check_int(name, getattr(self, name), low=1)
        for name in _COUNTS:
            check_int(name, getattr(self, name), low=0)
        for name in _POSITIVE:
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in _NON_NEGATIVE:
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        for name, kinds in (
            ("ffn", FFN_KINDS),
            ("norm", NORM_KINDS),
            ("rope_layout", ROPE_LAYOUTS),
        ):
            if getattr(self, name) not in kinds:
                raise ValueError(f"{name} must be one of {kinds}, got {getattr(self, name)!r}")
        if self.norms_per_block not in (2, 4):
            raise ValueError(f"norms_per_block must be 2 or 4, got {self.norms_per_block!r}")
        if self.norms_after and self.norms_per_block != 2:
            raise ValueError(
                "norms_after=True places the 2 norms of a block after each stage; "
                f"norms_per_block={self.norms_per_block} already has norms after"
            )
        if self.qk_norm_all_heads and not self.qk_norm:
            raise ValueError("qk_norm_all_heads=True needs qk_norm=True")
        if self.norm_bias and (self.norm != "layer" or not self.norm_affine):
            raise ValueError("norm_bias=True needs norm='layer' with norm_affine=True")
        if self.heads % self.kv_heads:
            raise ValueError(
                f"kv_heads={self.kv_heads} must divide heads={self.heads} "
                f"(valid: {divisors(self.heads)})"
            )
        self._check_positions()
        self._check_experts()
        self._check_latent()
        self._check_layer_pattern()
        # a list given for a tuple field is stored as the tuple, so that specs compare and hash
        object.__setattr__(self, "layer_pattern", tuple(self.layer_pattern))
        object.__setattr__(self, "rope_scaling", tuple(self.rope_scaling))

    def _check_positions(self):
        if self.positions and self.rope_theta:
            raise ValueError(
                "a spec has learned positions (positions > 0) or rotary positions "
                "(rope_theta > 0), not both; set rope_theta=0.0 with positions"
            )
        if not self.positions and not self.rope_theta:
            raise ValueError("no positions: set positions > 0 (learned table) or rope_theta > 0")
        if self.position_offset >= max(self.positions, 1):
            raise ValueError(
                f"position_offset={self.position_offset} needs a learned table with "
                f"more rows (positions={self.positions})"
            )
        if not 0 < self.rotary_fraction <= 1:
            raise ValueError(f"rotary_fraction must be in (0, 1], got {self.rotary_fraction!r}")
        if self.rotary_dim % 2:
            raise ValueError(
                f"rotary_dim = head_dim * rotary_fraction must be even, got "
                f"{self.head_dim} * {self.rotary_fraction} = {self.rotary_dim}"
            )

    def _check_experts(self):
        if not self.experts:
            for name in ("experts_per_token", "expert_hidden", "shared_experts", "dense_layers"):
                if getattr(self, name):
                    raise ValueError(
                        f"{name}={getattr(self, name)} needs experts > 0 "
                        "(experts=0 is a dense model)"
                    )
            return
        if not 1 <= self.experts_per_token <= self.experts:
            raise ValueError(
                f"experts_per_token must be in 1..experts={self.experts}, "
                f"got {self.experts_per_token}"
            )
        if not self.expert_hidden:
            raise ValueError("expert_hidden must be > 0 when experts > 0")
        if self.dense_layers >= self.layers:
            raise ValueError(
                f"dense_layers must be < layers={self.layers}, got {self.dense_layers}"
            )
        if self.experts % self.n_group or self.topk_group > self.n_group:
            raise ValueError(
                f"n_group={self.n_group} must divide experts={self.experts} "
                f"(valid: {divisors(self.experts)}) and "
                f"topk_group={self.topk_group} must be <= n_group"
            )

    def _check_latent(self):
        if not self.kv_lora_rank:
            if self.q_lora_rank:
                raise ValueError("q_lora_rank > 0 needs latent attention (kv_lora_rank > 0)")
            return
        for name in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            check_int(name, getattr(self, name), low=1)
        qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        if self.head_dim != qk:
            raise ValueError(
                f"head_dim must be qk_nope_head_dim + qk_rope_head_dim = {qk} "
                f"with latent attention, got {self.head_dim}"
            )
        if self.kv_heads != self.heads:
            raise ValueError(f"kv_heads must equal heads={self.heads} with latent attention")

    def _check_layer_pattern(self):
        if len(self.layer_pattern) > self.layers:
            raise ValueError(
                f"layer_pattern must have at most one entry per layer "
                f"({self.layers}), got {len(self.layer_pattern)}"
            )
        bad = sorted(set(self.layer_pattern) - set(LAYER_KINDS))
        if bad:
            raise ValueError(f"layer_pattern entries must be in {LAYER_KINDS}, got {bad}")
        if "sliding_attention" in self.layer_pattern and not self.sliding_window:
            raise ValueError(
                "layer_pattern has 'sliding_attention' layers but sliding_window=0; "
                "set sliding_window > 0"
            )

    # ---- constructors -------------------------------------------------------------------

    @classmethod
    def from_dict(cls, c: dict) -> ModelSpec:
        """Build a spec from a config dict (the T1 lesson's `describe` input).

        'gelu' is the GPT-2 feed-forward: width 4d unless `hidden` is given, with biases;
        'swiglu' and 'geglu' take `hidden` and have no biases. `bias=True` puts biases on
        the query, key, value and output projections; norm 'layer' has a scale and a shift.
        """
        if not isinstance(c, dict):
            raise ValueError(f"config must be a dict, got {type(c).__name__}")
        unknown = sorted(set(c) - set(DICT_KEYS))
        if unknown:
            raise ValueError(f"unknown key(s) {unknown}; valid keys: {list(DICT_KEYS)}")
        required = ["d", "layers", "vocab", "heads", "ffn", "bias", "norm", "tied"]
        if c.get("ffn") != "gelu":
            required.append("hidden")
        for key in required:
            if key not in c:
                raise ValueError(f"missing key {key!r}; a config dict needs {required}")
        d, heads = c["d"], c["heads"]
        check_int("d", d, low=1)
        check_int("heads", heads, low=1)
        if d % heads:
            raise ValueError(
                f"heads={heads} must divide d={d} (head_dim is d // heads); "
                f"valid heads: {divisors(d)}"
            )
        if c["ffn"] not in FFN_KINDS:
            raise ValueError(f"ffn must be one of {FFN_KINDS}, got {c['ffn']!r}")
        positions = c.get("positions", 0)
        gelu = c["ffn"] == "gelu"
        return cls(
            d=d,
            layers=c["layers"],
            vocab=c["vocab"],
            heads=heads,
            kv_heads=c.get("kv_heads", heads),
            head_dim=d // heads,
            ffn=c["ffn"],
            hidden=c.get("hidden", 4 * d) if gelu else c["hidden"],
            act=DEFAULT_ACTIVATION[c["ffn"]],
            qkv_bias=bool(c["bias"]),
            out_bias=bool(c["bias"]),
            ffn_bias=gelu,
            norm=c["norm"],
            norm_bias=c["norm"] == "layer",
            tied=bool(c["tied"]),
            positions=positions,
            rope_theta=0.0 if positions else 10000.0,
        )


_SIZES = (
    "d",
    "layers",
    "vocab",
    "heads",
    "kv_heads",
    "head_dim",
    "hidden",
    "n_group",
    "topk_group",
)
_COUNTS = (
    "positions",
    "position_offset",
    "sliding_window",
    "experts",
    "experts_per_token",
    "expert_hidden",
    "shared_experts",
    "dense_layers",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
)
_POSITIVE = ("norm_eps", "embed_scale", "routed_scale", "residual_scale", "logit_divisor")
_NON_NEGATIVE = (
    "score_scale",
    "attn_softcap",
    "final_softcap",
    "rope_theta",
    "qkv_clip",
    "norm_offset",
)

# Keys of a config dict (`ModelSpec.from_dict`), the T1 lesson's input.
DICT_KEYS = (
    "d",
    "layers",
    "vocab",
    "heads",
    "kv_heads",
    "ffn",
    "hidden",
    "bias",
    "norm",
    "tied",
    "positions",
)


def check_int(name: str, value, low: int, hint: str = "") -> int:
    """`value` if it is an integer >= low (not a bool), else ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}{hint}, got {value!r}")
    return value


def divisors(n: int) -> list[int]:
    """Every k in 1..n that divides n: the valid head counts, key-value head counts, groups."""
    return [k for k in range(1, n + 1) if n % k == 0] if n > 0 else []


def yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """YaRN's magnitude correction for a context stretched by `factor`: 1 + 0.1 mscale ln(factor)
    (1 when nothing is stretched)."""
    return 0.1 * mscale * math.log(factor) + 1.0 if factor > 1 else 1.0
