"""The families the course reads from transformers: one entry each, in one place.

An entry (`Family`) holds everything the library knows about a transformers `model_type`:

    read     its config reader: transformers config -> `ModelSpec` fields, written as a diff of
             its parent's reader ("Llama plus QK-norm"); its one-line docstring says what differs
    weights  its weight-name rules: spec -> {DecoderLM tensor: (transformers tensor, transform)};
             a family whose tensors are laid out differently passes its own hooks (Phi-3 fuses
             q, k and v into one tensor) instead of the bridge testing the family's name
    toy      config fields that shrink the family to a toy (for tests and quick forward passes)
             while keeping every feature: biases, norms, windows, experts, latent attention

`tests/lib/test_families.py` checks that every entry is complete, that a published configuration
(`lmcourse.configs`) and a parity case (`tests/lib/test_parity.py`) exist for it, and that its toy
keeps its features; docs/ADDING_A_FAMILY.md walks through adding one.

Nothing here imports torch: the counter reads configs without building a model, and the
transforms of the weight rules only call tensor methods.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .spec import ModelSpec, yarn_mscale

if TYPE_CHECKING:
    import torch

Source = tuple[str, "Callable[[torch.Tensor], torch.Tensor] | None"]  # transformers name, transform
Rules = dict[str, Source]


@dataclass(frozen=True)
class Family:
    name: str  # transformers' model_type
    parent: str | None  # the family `read` is written as a diff of (None: written out in full)
    read: Callable[[object], dict]  # transformers config -> ModelSpec fields (not `family`)
    weights: Callable[[ModelSpec], Rules]  # DecoderLM tensor -> (transformers tensor, transform)
    toy: dict  # transformers config fields of a toy-sized model with every feature kept

    @property
    def summary(self) -> str:
        """What the family changes, in one line: its reader's docstring."""
        return (self.read.__doc__ or "").strip()


def family(name) -> Family:
    """The registry entry of transformers' `model_type` `name`."""
    if name not in FAMILIES:
        raise ValueError(f"unsupported model_type {name!r}; supported families: {sorted(FAMILIES)}")
    return FAMILIES[name]


def as_spec(config) -> ModelSpec:
    """A seed-style dict, a transformers config of a registered family or a `ModelSpec`, as a
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


# ---- pieces the readers share ---------------------------------------------------------------


def _rope_fields(c) -> dict:
    """rope_theta and the remaining rope_parameters (transformers 5.x keeps them together)."""
    params = dict(c.rope_parameters or {})
    theta = float(params.pop("rope_theta"))
    params.pop("partial_rotary_factor", None)
    if params.get("rope_type", "default") == "default":
        params.pop("rope_type", None)
    scaling = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))
    return {"rope_theta": theta, "rope_scaling": scaling}


def _implied_head_dim(c) -> int:
    if c.hidden_size % c.num_attention_heads:
        raise ValueError(
            f"num_attention_heads={c.num_attention_heads} must divide "
            f"hidden_size={c.hidden_size} when head_dim is not given"
        )
    return c.hidden_size // c.num_attention_heads


def _windows(c) -> dict:
    """Sliding-window layers as transformers' cache sees them: the window, and the shortest
    repeating pattern of `layer_types` (left empty when every layer is of the default kind)."""
    window = getattr(c, "sliding_window", None) or 0
    types = tuple(getattr(c, "layer_types", None) or ())
    if "sliding_attention" not in types and (types or not window):
        return {"sliding_window": 0, "layer_pattern": ()}
    if not types:
        return {"sliding_window": window, "layer_pattern": ()}
    pattern = next(
        types[:n]
        for n in range(1, len(types) + 1)
        if all(t == types[i % n] for i, t in enumerate(types))
    )
    return {
        "sliding_window": window,
        "layer_pattern": () if pattern == ("sliding_attention",) else pattern,
    }


def _experts(c, hidden: int) -> dict:
    """Routed experts as Mixtral and the Qwen MoE models name them."""
    return dict(
        experts=c.num_local_experts, experts_per_token=c.num_experts_per_tok, expert_hidden=hidden
    )


# ---- readers, each a diff of its parent -----------------------------------------------------


def _gpt2(c) -> dict:
    """GPT-2: learned positions, LayerNorm with bias, a GELU MLP, biases everywhere."""
    return dict(
        d=c.n_embd,
        layers=c.n_layer,
        vocab=c.vocab_size,
        heads=c.n_head,
        kv_heads=c.n_head,
        head_dim=_implied_head_dim(c),
        ffn="gelu",
        hidden=c.n_inner or 4 * c.n_embd,
        act=c.activation_function,
        qkv_bias=True,
        out_bias=True,
        ffn_bias=True,
        norm="layer",
        norm_bias=True,
        norm_eps=c.layer_norm_epsilon,
        tied=bool(c.tie_word_embeddings),
        positions=c.n_positions,
        rope_theta=0.0,
    )


def _opt(c) -> dict:
    """GPT-2 with ReLU, separate q/k/v projections and a position table offset by 2."""
    unsupported = [
        f"{name}={getattr(c, name)!r} (supported: {valid!r})"
        for name, valid in (
            ("do_layer_norm_before", True),
            ("word_embed_proj_dim", c.hidden_size),
            ("_remove_final_layer_norm", False),
        )
        if getattr(c, name) != valid
    ]
    if unsupported:  # OPT-350m's post-norm blocks and projected embeddings are not built here
        raise ValueError(
            f"opt: unsupported {', '.join(unsupported)}; lmcourse builds pre-norm OPT "
            "models whose embeddings are hidden_size wide (OPT-125m, OPT-1.3B and up)"
        )
    bias, affine = bool(c.enable_bias), bool(c.layer_norm_elementwise_affine)
    return dict(
        d=c.hidden_size,
        layers=c.num_hidden_layers,
        vocab=c.vocab_size,
        heads=c.num_attention_heads,
        kv_heads=c.num_attention_heads,
        head_dim=_implied_head_dim(c),
        ffn="gelu",
        hidden=c.ffn_dim,
        act=c.activation_function,
        qkv_bias=bias,
        out_bias=bias,
        ffn_bias=bias,
        norm="layer",
        norm_affine=affine,
        norm_bias=affine,
        norm_eps=1e-5,
        tied=bool(c.tie_word_embeddings),
        positions=c.max_position_embeddings + 2,
        position_offset=2,
        rope_theta=0.0,
    )


def _llama(c) -> dict:
    """Llama: rotary positions, RMSNorm, SwiGLU, grouped key-value heads, no biases."""
    head_dim = getattr(c, "head_dim", None) or _implied_head_dim(c)
    bias = bool(getattr(c, "attention_bias", False))
    return dict(
        d=c.hidden_size,
        layers=c.num_hidden_layers,
        vocab=c.vocab_size,
        heads=c.num_attention_heads,
        kv_heads=c.num_key_value_heads or c.num_attention_heads,
        head_dim=head_dim,
        ffn="swiglu",
        hidden=c.intermediate_size,
        act=getattr(c, "hidden_act", ""),
        qkv_bias=bias,
        out_bias=bias,
        ffn_bias=bool(getattr(c, "mlp_bias", False)),
        norm="rms",
        norm_eps=getattr(c, "rms_norm_eps", 1e-5),
        tied=bool(c.tie_word_embeddings),
        **_rope_fields(c),
    )


def _mistral(c) -> dict:
    """Llama plus sliding-window attention."""
    return _llama(c) | _windows(c)


def _mixtral(c) -> dict:
    """Mistral whose feed-forward is a mixture of experts (softmax router, top-k renormalised)."""
    return _mistral(c) | _experts(c, c.intermediate_size) | dict(norm_topk=True)


def _qwen2(c) -> dict:
    """Llama plus biases on q, k and v (not the output) and optional windows."""
    return _llama(c) | dict(qkv_bias=True, out_bias=False) | _windows(c)


def _qwen3(c) -> dict:
    """Llama plus QK-norm (one RMSNorm per query and key head) and optional windows."""
    return _llama(c) | dict(qk_norm=True) | _windows(c)


def _qwen3_moe(c) -> dict:
    """Qwen3 whose feed-forward is a mixture of experts, after optional dense first layers."""
    layers = c.num_hidden_layers
    sparse = [
        i
        for i in range(layers)
        if i not in c.mlp_only_layers and (i + 1) % c.decoder_sparse_step == 0
    ]
    dense = layers - len(sparse)
    if sparse != list(range(dense, layers)):
        raise ValueError(
            "qwen3_moe: only the first layers may be dense (mlp_only_layers=[0..k-1], "
            f"decoder_sparse_step=1); got sparse layers {sparse}"
        )
    return (
        _qwen3(c)
        | _experts(c, c.moe_intermediate_size)
        | dict(dense_layers=dense, norm_topk=bool(c.norm_topk_prob))
    )


def _gemma2(c) -> dict:
    """Llama plus GeGLU, sandwich norms, scaled embeddings, soft-caps and alternating windows."""
    return (
        _llama(c)
        | _windows(c)
        | dict(
            ffn="geglu",
            act=c.hidden_activation,
            norms_per_block=4,
            norm_offset=1.0,
            embed_scale=c.hidden_size**0.5,
            score_scale=c.query_pre_attn_scalar**-0.5,
            attn_softcap=c.attn_logit_softcapping or 0.0,
            final_softcap=c.final_logit_softcapping or 0.0,
        )
    )


def _phi3(c) -> dict:
    """Mistral with fused q/k/v and gate/up tensors, and optionally partial rotary positions."""
    return _mistral(c) | dict(
        rotary_fraction=(c.rope_parameters or {}).get("partial_rotary_factor", 1.0)
    )


def _olmo(c) -> dict:
    """Llama with a parameter-free LayerNorm and optional clipping of q, k and v."""
    return _llama(c) | dict(
        norm="layer", norm_affine=False, norm_eps=1e-5, qkv_clip=float(c.clip_qkv or 0.0)
    )


def _olmo2(c) -> dict:
    """Llama with its norms after each stage, not before, and QK-norm across all heads."""
    return _llama(c) | dict(norms_after=True, qk_norm=True, qk_norm_all_heads=True)


def _deepseek_v3(c) -> dict:
    """Llama plus latent attention (MLA), rotary pairs side by side and sigmoid-routed experts."""
    qk = c.qk_nope_head_dim + c.qk_rope_head_dim
    scale = qk**-0.5
    rope = c.rope_parameters or {}
    if rope.get("rope_type", "default") != "default" and rope.get("mscale_all_dim"):
        # transformers' yarn_apply_mscale: the score scale grows with the context extension
        scale *= yarn_mscale(rope["factor"], rope["mscale_all_dim"]) ** 2
    return _llama(c) | dict(
        kv_heads=c.num_attention_heads,
        head_dim=qk,
        score_scale=scale,
        rope_layout="pairs" if c.rope_interleave else "half",
        experts=c.n_routed_experts,
        experts_per_token=c.num_experts_per_tok,
        expert_hidden=c.moe_intermediate_size,
        shared_experts=c.n_shared_experts,
        dense_layers=c.first_k_dense_replace,
        norm_topk=bool(c.norm_topk_prob),
        router_bias=True,
        routed_scale=float(c.routed_scaling_factor),
        n_group=c.n_group,
        topk_group=c.topk_group,
        q_lora_rank=c.q_lora_rank or 0,
        kv_lora_rank=c.kv_lora_rank,
        qk_nope_head_dim=c.qk_nope_head_dim,
        qk_rope_head_dim=c.qk_rope_head_dim,
        v_head_dim=c.v_head_dim,
    )


# ---- weight-name rules ----------------------------------------------------------------------


def _transpose(w):
    return w.T


def _part(sizes: list[int], j: int, dim: int = 0, transpose: bool = False):
    """The j-th of consecutive slices of `sizes` along `dim` (after an optional transpose)."""

    def cut(w):
        w = w.T if transpose else w
        if w.shape[dim] != sum(sizes):
            raise ValueError(
                f"dimension {dim} is {w.shape[dim]}, expected {sum(sizes)} = "
                f"{' + '.join(map(str, sizes))}"
            )
        return w.split(sizes, dim=dim)[j]

    return cut


def _norm_rules(spec: ModelSpec, ours: str, theirs: str) -> Rules:
    rules = {}
    if spec.norm_affine:
        rules[f"{ours}.weight"] = (f"{theirs}.weight", None)
    if spec.norm_bias:
        rules[f"{ours}.bias"] = (f"{theirs}.bias", None)
    return rules


def _gpt2_weights(spec: ModelSpec) -> Rules:
    """transformer.h.i.*, Conv1D weights stored transposed, q, k and v fused in c_attn."""
    d = spec.d
    rules = {
        "embed.weight": ("transformer.wte.weight", None),
        "pos_embed.weight": ("transformer.wpe.weight", None),
        "norm.weight": ("transformer.ln_f.weight", None),
        "norm.bias": ("transformer.ln_f.bias", None),
        "head.weight": ("lm_head.weight", None),
    }
    for i in range(spec.layers):
        b, h = f"blocks.{i}.", f"transformer.h.{i}."
        for ours, theirs in (("attn_norm", "ln_1"), ("ffn_norm", "ln_2")):
            rules[f"{b}{ours}.weight"] = (f"{h}{theirs}.weight", None)
            rules[f"{b}{ours}.bias"] = (f"{h}{theirs}.bias", None)
        for j, name in enumerate(("q_proj", "k_proj", "v_proj")):  # c_attn = [q | k | v]
            rules[f"{b}attn.{name}.weight"] = (
                f"{h}attn.c_attn.weight",
                _part([d] * 3, j, 0, transpose=True),
            )
            rules[f"{b}attn.{name}.bias"] = (f"{h}attn.c_attn.bias", _part([d] * 3, j))
        for ours, theirs in (
            ("attn.o_proj", "attn.c_proj"),
            ("ffn.up_proj", "mlp.c_fc"),
            ("ffn.down_proj", "mlp.c_proj"),
        ):
            rules[f"{b}{ours}.weight"] = (f"{h}{theirs}.weight", _transpose)
            rules[f"{b}{ours}.bias"] = (f"{h}{theirs}.bias", None)
    return rules


def _opt_weights(spec: ModelSpec) -> Rules:
    """model.decoder.* with GPT-2's norm names (final_layer_norm is the block's second)."""
    top = "model.decoder."
    rules = {
        "embed.weight": (f"{top}embed_tokens.weight", None),
        "pos_embed.weight": (f"{top}embed_positions.weight", None),
        "head.weight": ("lm_head.weight", None),
    }
    rules |= _norm_rules(spec, "norm", f"{top}final_layer_norm")
    for i in range(spec.layers):
        b, h = f"blocks.{i}.", f"{top}layers.{i}."
        rules |= _norm_rules(spec, f"{b}attn_norm", f"{h}self_attn_layer_norm")
        rules |= _norm_rules(spec, f"{b}ffn_norm", f"{h}final_layer_norm")
        for ours, theirs in (
            ("attn.q_proj", "self_attn.q_proj"),
            ("attn.k_proj", "self_attn.k_proj"),
            ("attn.v_proj", "self_attn.v_proj"),
            ("attn.o_proj", "self_attn.out_proj"),
            ("ffn.up_proj", "fc1"),
            ("ffn.down_proj", "fc2"),
        ):
            rules[f"{b}{ours}.weight"] = (f"{h}{theirs}.weight", None)
            if spec.ffn_bias:  # enable_bias puts a bias on every linear layer of the block
                rules[f"{b}{ours}.bias"] = (f"{h}{theirs}.bias", None)
    return rules


def _separate_qkv(spec: ModelSpec, b: str, a: str) -> Rules:
    """q_proj, k_proj, v_proj, each its own tensor (Llama)."""
    rules = {}
    for name in ("q_proj", "k_proj", "v_proj"):
        rules[f"{b}attn.{name}.weight"] = (f"{a}{name}.weight", None)
        if spec.qkv_bias:
            rules[f"{b}attn.{name}.bias"] = (f"{a}{name}.bias", None)
    return rules


def _fused_qkv(spec: ModelSpec, b: str, a: str) -> Rules:
    """One projection qkv_proj = [q | k | v] (Phi-3)."""
    sizes = [spec.heads * spec.head_dim] + [spec.kv_heads * spec.head_dim] * 2
    return {
        f"{b}attn.{name}.weight": (f"{a}qkv_proj.weight", _part(sizes, j))
        for j, name in enumerate(("q_proj", "k_proj", "v_proj"))
    }


def _separate_gate_up(spec: ModelSpec, b: str, m: str) -> Rules:
    """gate_proj and up_proj, each its own tensor (Llama)."""
    rules = {}
    for name in ("gate_proj", "up_proj"):
        rules[f"{b}ffn.{name}.weight"] = (f"{m}{name}.weight", None)
        if spec.ffn_bias:
            rules[f"{b}ffn.{name}.bias"] = (f"{m}{name}.bias", None)
    return rules


def _fused_gate_up(spec: ModelSpec, b: str, m: str) -> Rules:
    """One projection gate_up_proj = [gate | up] (Phi-3)."""
    return {
        f"{b}ffn.{name}.weight": (f"{m}gate_up_proj.weight", _part([spec.hidden] * 2, j))
        for j, name in enumerate(("gate_proj", "up_proj"))
    }


def _latent_attention_rules(spec: ModelSpec, b: str, a: str) -> Rules:
    """DeepSeek-V3's MLA projections and latent norms."""
    names = {
        "kv_a_proj": "kv_a_proj_with_mqa",
        "kv_a_norm": "kv_a_layernorm",
        "kv_b_proj": "kv_b_proj",
        "o_proj": "o_proj",
    }
    if spec.q_lora_rank:
        names |= {"q_a_proj": "q_a_proj", "q_a_norm": "q_a_layernorm", "q_b_proj": "q_b_proj"}
    else:
        names["q_proj"] = "q_proj"
    rules = {
        f"{b}attn.{ours}.weight": (f"{a}{theirs}.weight", None) for ours, theirs in names.items()
    }
    if spec.qkv_bias:
        for ours, theirs in (("kv_a_proj", "kv_a_proj_with_mqa"), ("q_a_proj", "q_a_proj")):
            if ours in names:
                rules[f"{b}attn.{ours}.bias"] = (f"{a}{theirs}.bias", None)
    if spec.out_bias:
        rules[f"{b}attn.o_proj.bias"] = (f"{a}o_proj.bias", None)
    return rules


def _llama_weights(spec: ModelSpec, qkv=_separate_qkv, gate_up=_separate_gate_up) -> Rules:
    """model.layers.i.{self_attn,mlp}.*: Llama and every family written as a diff of it. A family
    that fuses projections passes its own `qkv` or `gate_up` hook."""
    rules = {
        "embed.weight": ("model.embed_tokens.weight", None),
        "head.weight": ("lm_head.weight", None),
    }
    rules |= _norm_rules(spec, "norm", "model.norm")
    if spec.norms_per_block == 4:  # Gemma 2: a norm before and after each stage
        norms = {
            "attn_norm": "input_layernorm",
            "attn_post_norm": "post_attention_layernorm",
            "ffn_norm": "pre_feedforward_layernorm",
            "ffn_post_norm": "post_feedforward_layernorm",
        }
    elif spec.norms_after:  # OLMo 2: a norm after each stage only
        norms = {
            "attn_post_norm": "post_attention_layernorm",
            "ffn_post_norm": "post_feedforward_layernorm",
        }
    else:
        norms = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}
    for i in range(spec.layers):
        b, h = f"blocks.{i}.", f"model.layers.{i}."
        a, m = f"{h}self_attn.", f"{h}mlp."
        for ours, theirs in norms.items():
            rules |= _norm_rules(spec, b + ours, h + theirs)
        if spec.kv_lora_rank:
            rules |= _latent_attention_rules(spec, b, a)
        else:
            rules |= qkv(spec, b, a)
            rules[f"{b}attn.o_proj.weight"] = (f"{a}o_proj.weight", None)
            if spec.out_bias:
                rules[f"{b}attn.o_proj.bias"] = (f"{a}o_proj.bias", None)
            if spec.qk_norm:
                rules[f"{b}attn.q_norm.weight"] = (f"{a}q_norm.weight", None)
                rules[f"{b}attn.k_norm.weight"] = (f"{a}k_norm.weight", None)
        if spec.experts and i >= spec.dense_layers:
            rules |= _experts_rules(spec, b, m)
            continue
        if spec.ffn != "gelu":
            rules |= gate_up(spec, b, m)
        else:
            rules[f"{b}ffn.up_proj.weight"] = (f"{m}up_proj.weight", None)
            if spec.ffn_bias:
                rules[f"{b}ffn.up_proj.bias"] = (f"{m}up_proj.bias", None)
        rules[f"{b}ffn.down_proj.weight"] = (f"{m}down_proj.weight", None)
        if spec.ffn_bias:
            rules[f"{b}ffn.down_proj.bias"] = (f"{m}down_proj.bias", None)
    return rules


def _experts_rules(spec: ModelSpec, b: str, m: str) -> Rules:
    """The router and the experts' fused 3-D tensors (transformers 5.x), shared experts."""
    e = spec.expert_hidden
    rules = {
        f"{b}ffn.router.weight": (f"{m}gate.weight", None),
        f"{b}ffn.experts.gate": (f"{m}experts.gate_up_proj", _part([e, e], 0, dim=1)),
        f"{b}ffn.experts.up": (f"{m}experts.gate_up_proj", _part([e, e], 1, dim=1)),
        f"{b}ffn.experts.down": (f"{m}experts.down_proj", None),
    }
    if spec.router_bias:
        rules[f"{b}ffn.router.correction_bias"] = (f"{m}gate.e_score_correction_bias", None)
    if spec.shared_experts:
        for name in ("gate_proj", "up_proj", "down_proj"):
            rules[f"{b}ffn.shared.{name}.weight"] = (f"{m}shared_experts.{name}.weight", None)
    return rules


def _phi3_weights(spec: ModelSpec) -> Rules:
    """Llama's names with q/k/v fused in qkv_proj and gate/up fused in gate_up_proj."""
    return _llama_weights(spec, qkv=_fused_qkv, gate_up=_fused_gate_up)


# ---- toy sizes ------------------------------------------------------------------------------

_LLAMA_TOY = dict(
    vocab_size=128,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
)


# ---- the registry ---------------------------------------------------------------------------

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "gpt2",
            None,
            _gpt2,
            _gpt2_weights,
            toy=dict(vocab_size=128, n_positions=64, n_embd=64, n_layer=2, n_head=4),
        ),
        Family(
            "opt",
            "gpt2",
            _opt,
            _opt_weights,
            toy=dict(
                vocab_size=128,
                max_position_embeddings=64,
                hidden_size=64,
                ffn_dim=96,
                num_hidden_layers=2,
                num_attention_heads=4,
                word_embed_proj_dim=64,
            ),
        ),
        Family("llama", None, _llama, _llama_weights, toy=_LLAMA_TOY),
        Family(
            "mistral", "llama", _mistral, _llama_weights, toy=_LLAMA_TOY | dict(sliding_window=4)
        ),
        Family(
            "mixtral",
            "mistral",
            _mixtral,
            _llama_weights,
            toy=_LLAMA_TOY | dict(num_local_experts=4, num_experts_per_tok=2),
        ),
        Family("qwen2", "llama", _qwen2, _llama_weights, toy=_LLAMA_TOY),
        Family("qwen3", "llama", _qwen3, _llama_weights, toy=_LLAMA_TOY),
        Family(
            "qwen3_moe",
            "qwen3",
            _qwen3_moe,
            _llama_weights,
            toy=_LLAMA_TOY | dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32),
        ),
        Family(
            "gemma2",
            "llama",
            _gemma2,
            _llama_weights,
            toy=_LLAMA_TOY
            | dict(
                sliding_window=4,
                query_pre_attn_scalar=16,
                layer_types=["sliding_attention", "full_attention"],
            ),
        ),
        Family(
            "phi3",
            "mistral",
            _phi3,
            _phi3_weights,
            toy=_LLAMA_TOY | dict(sliding_window=4, num_key_value_heads=4),
        ),
        Family(
            "olmo", "llama", _olmo, _llama_weights, toy=_LLAMA_TOY | dict(num_key_value_heads=4)
        ),
        Family("olmo2", "llama", _olmo2, _llama_weights, toy=_LLAMA_TOY),
        Family(
            "deepseek_v3",
            "llama",
            _deepseek_v3,
            _llama_weights,
            toy={k: v for k, v in _LLAMA_TOY.items() if k != "head_dim"}
            | dict(  # from MLA sizes
                num_hidden_layers=3,
                num_key_value_heads=4,
                n_routed_experts=8,
                num_experts_per_tok=2,
                n_group=2,
                topk_group=1,
                first_k_dense_replace=1,
                moe_intermediate_size=32,
                q_lora_rank=24,
                kv_lora_rank=32,
                qk_nope_head_dim=16,
                qk_rope_head_dim=8,
                v_head_dim=16,
            ),
        ),
    )
}
