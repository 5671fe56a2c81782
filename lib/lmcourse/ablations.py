"""Undo one design decision of a trained model, keeping every weight it has.

Each function returns a NEW `DecoderLM` (the argument is left untouched) that differs from
its input in exactly one place: the spec (via `dataclasses.replace`), a block option, or a
reshaped copy of some weights. The lessons measure what each change costs.
"""

from __future__ import annotations

import dataclasses

from .blocks.ffn import ACTIVATIONS
from .blocks.model import DecoderLM


def _rebuild(model: DecoderLM, state: dict | None = None, spec=None, **options) -> DecoderLM:
    """A DecoderLM with `spec` (default: the model's) and `options`, loaded from `state`."""
    kwargs = {"kv_grouping": model.kv_grouping, "ffn_gate": model.ffn_gate} | options
    new = DecoderLM(spec or model.spec, **kwargs).to(model.embed.weight.dtype)
    new.load_state_dict(model.state_dict() if state is None else state)  # strict: every tensor
    return new.train(model.training)


def expand_kv_heads(model: DecoderLM) -> DecoderLM:
    """Grouped-query attention -> full multi-head attention, exactly.

    Each key-value head is copied once for every query head of its group, so query head i
    reads a private copy of the key-value head it used to share: same logits, more parameters.
    """
    spec = model.spec
    if spec.kv_lora_rank:
        raise ValueError("expand_kv_heads needs grouped-query attention; this model uses latent "
                         "attention (kv_lora_rank > 0)")
    group = spec.heads // spec.kv_heads
    state = model.state_dict()
    for name, tensor in state.items():
        if ".attn.k_proj." in name or ".attn.v_proj." in name:
            heads = tensor.view(spec.kv_heads, spec.head_dim, *tensor.shape[1:])
            if model.kv_grouping == "interleave":  # heads 0,0,0,1,1,1,...
                heads = heads.repeat_interleave(group, dim=0)
            else:  # 'tile': heads 0,1,...,0,1,...
                heads = heads.repeat(group, *[1] * (heads.dim() - 1))
            state[name] = heads.reshape(spec.heads * spec.head_dim, *tensor.shape[1:])
    return _rebuild(model, state, dataclasses.replace(spec, kv_heads=spec.heads))


def mean_pool_kv_heads(model: DecoderLM, kv_heads: int) -> DecoderLM:
    """Fewer key-value heads by averaging, the GQA paper's way to convert a checkpoint.

    Each new key (value) head is the mean of a group of kv_heads_old // kv_heads consecutive
    old ones. Pooling copies back (after `expand_kv_heads`) is exact; pooling distinct heads
    is an approximation that the paper repairs with some further training.
    """
    spec = model.spec
    if spec.kv_lora_rank:
        raise ValueError("mean_pool_kv_heads needs grouped-query attention; this model uses "
                         "latent attention (kv_lora_rank > 0)")
    if isinstance(kv_heads, bool) or not isinstance(kv_heads, int) or kv_heads < 1 \
            or spec.kv_heads % kv_heads:
        valid = [n for n in range(1, spec.kv_heads + 1) if spec.kv_heads % n == 0]
        raise ValueError(f"kv_heads must divide the model's {spec.kv_heads} key-value heads "
                         f"(valid: {valid}), got {kv_heads!r}")
    group = spec.kv_heads // kv_heads
    state = model.state_dict()
    for name, tensor in state.items():
        if ".attn.k_proj." in name or ".attn.v_proj." in name:
            heads = tensor.view(kv_heads, group, spec.head_dim, *tensor.shape[1:])
            mean = heads.double().mean(1).to(tensor.dtype)  # float64: copies average exactly
            state[name] = mean.reshape(kv_heads * spec.head_dim, *tensor.shape[1:])
    return _rebuild(model, state, dataclasses.replace(spec, kv_heads=kv_heads))


def tile_kv_heads(model: DecoderLM) -> DecoderLM:
    """The silent porting bug: query head i reads kv head i % kv_heads instead of i // group."""
    return _rebuild(model, kv_grouping="tile")


def with_rope_base(model: DecoderLM, base: float) -> DecoderLM:
    """The same weights with another rotary base (rope_theta)."""
    if not model.spec.rope_theta:
        raise ValueError("with_rope_base needs rotary positions; this model has a learned table")
    if not base > 0:
        raise ValueError(f"base must be > 0, got {base!r}")
    return _rebuild(model, spec=dataclasses.replace(model.spec, rope_theta=float(base)))


def rope_pairs_side_by_side(model: DecoderLM) -> DecoderLM:
    """The silent porting bug: rotate pairs (0,1), (2,3), ... where the weights expect halves."""
    if not model.spec.rope_theta:
        raise ValueError("rope_pairs_side_by_side needs rotary positions; this model has a "
                         "learned table")
    if model.spec.rope_interleave:
        raise ValueError("this model already rotates side-by-side pairs (rope_interleave=True)")
    return _rebuild(model, spec=dataclasses.replace(model.spec, rope_interleave=True))


def with_norm(model: DecoderLM, kind: str) -> DecoderLM:
    """Swap the block and final norms: 'layer' (bias-free LayerNorm) or 'rms', same scale."""
    spec = model.spec
    if kind not in ("layer", "rms"):
        raise ValueError(f"kind must be 'layer' or 'rms', got {kind!r}")
    if kind == "rms" and (spec.norm_bias or not spec.norm_affine):
        raise ValueError("with_norm(kind='rms') needs a norm with a scale and no shift; this "
                         "model's LayerNorm has a bias or no scale")
    state = model.state_dict()
    if spec.norm_offset:  # stored as (scale - offset): fold the offset into the weight
        for name in state:
            if _is_block_norm(name):
                state[name] = state[name] + spec.norm_offset
    new_spec = dataclasses.replace(spec, norm=kind, norm_bias=False, norm_affine=True,
                                   norm_offset=0.0)
    return _rebuild(model, state, new_spec)


def _is_block_norm(name: str) -> bool:
    """Weights of the norms `with_norm` swaps (not the QK or latent norms inside attention)."""
    return name == "norm.weight" or (name.startswith("blocks.") and ".attn." not in name
                                     and "_norm.weight" in name)


def with_activation(model: DecoderLM, name: str) -> DecoderLM:
    """The same feed-forward weights with another activation (e.g. GELU where SiLU was trained)."""
    if name not in ACTIVATIONS:
        raise ValueError(f"name must be one of {sorted(ACTIVATIONS)}, got {name!r}")
    return _rebuild(model, spec=dataclasses.replace(model.spec, act=name))


def without_gate(model: DecoderLM) -> DecoderLM:
    """Drop the gate: each gated feed-forward becomes down(up(x)), with no activation at all."""
    if model.spec.ffn not in ("swiglu", "geglu"):
        raise ValueError(f"without_gate needs a gated feed-forward ('swiglu' or 'geglu'), "
                         f"got ffn={model.spec.ffn!r}")
    return _rebuild(model, ffn_gate=False)


__all__ = ["expand_kv_heads", "tile_kv_heads", "with_rope_base", "rope_pairs_side_by_side",
           "with_norm", "with_activation", "without_gate"]
