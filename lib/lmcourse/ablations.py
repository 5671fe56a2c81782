"""Undo one design decision of a trained model, keeping every weight it has.

Each function returns a NEW `DecoderLM` (the argument is left untouched) that differs from
its input in exactly one place: the spec (via `dataclasses.replace`), a module of each block
swapped for one that computes something else from the same weights (`TiledAttention`,
`UngatedMLP`), or a reshaped copy of some weights. The lessons measure what each change costs.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from . import evaluate
from .blocks.attention import Attention, group_kv
from .blocks.ffn import ACTIVATIONS, GatedMLP
from .blocks.model import DecoderLM
from .spec import divisors


class TiledAttention(Attention):
    """The silent porting bug: query head i reads key-value head i % kv_heads, not i // group
    (the key-value heads tiled, `x.repeat(...)`, where they should be interleaved)."""

    def attend_heads(self, q, k, v, mask):
        k = group_kv(k, self.group, "tile")  # [batch, heads, S, head_dim]: heads 0,1,..,0,1,..
        v = group_kv(v, self.group, "tile")
        return super().attend_heads(q, k, v, mask)


class UngatedMLP(nn.Module):
    """A gated feed-forward with its gate taken out: down(up(x)), no activation at all, a
    linear map. It keeps the gate's matrix, unused, so that it loads the model's weights."""

    def __init__(self, d: int, hidden: int, bias: bool = False):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=bias)  # never used
        self.up_proj = nn.Linear(d, hidden, bias=bias)
        self.down_proj = nn.Linear(hidden, d, bias=bias)

    def forward(self, x):  # [..., d] -> [..., hidden] -> [..., d]
        return self.down_proj(self.up_proj(x))


def _rebuild(
    model: DecoderLM, state: dict | None = None, spec=None, tile: bool = False, ungate: bool = False
) -> DecoderLM:
    """A DecoderLM with `spec` (default: the model's), loaded from `state` (default: the
    model's weights). Modules an earlier ablation swapped in stay swapped; `tile` and `ungate`
    swap in a `TiledAttention` for each `Attention` and an `UngatedMLP` for each `GatedMLP`."""
    spec = spec or model.spec
    new = DecoderLM(spec)
    for layer, (old, block) in enumerate(zip(model.blocks, new.blocks, strict=True)):
        if isinstance(block.attn, Attention) and (tile or isinstance(old.attn, TiledAttention)):
            block.attn = TiledAttention(spec, layer)
        if isinstance(block.ffn, GatedMLP) and (ungate or isinstance(old.ffn, UngatedMLP)):
            block.ffn = UngatedMLP(spec.d, spec.hidden, spec.ffn_bias)
    new = new.to(model.embed.weight.dtype)
    new.load_state_dict(model.state_dict() if state is None else state)  # strict: every tensor
    return new.train(model.training)


def _tiled(model: DecoderLM) -> bool:
    """Whether the model's key-value heads are tiled (`tile_kv_heads`)."""
    return any(isinstance(block.attn, TiledAttention) for block in model.blocks)


def expand_kv_heads(model: DecoderLM) -> DecoderLM:
    """Grouped-query attention -> full multi-head attention, exactly.

    Each key-value head is copied once for every query head of its group, so query head i
    reads a private copy of the key-value head it used to share: same logits, more parameters.
    """
    spec = model.spec
    if spec.kv_lora_rank:
        raise ValueError(
            "expand_kv_heads needs grouped-query attention; this model uses latent "
            "attention (kv_lora_rank > 0)"
        )
    group = spec.heads // spec.kv_heads
    state = model.state_dict()
    for name, tensor in state.items():
        if ".attn.k_proj." in name or ".attn.v_proj." in name:
            heads = tensor.view(spec.kv_heads, spec.head_dim, *tensor.shape[1:])
            if not _tiled(model):  # heads 0,0,0,1,1,1,...
                heads = heads.repeat_interleave(group, dim=0)
            else:  # tiled: heads 0,1,...,0,1,...
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
        raise ValueError(
            "mean_pool_kv_heads needs grouped-query attention; this model uses "
            "latent attention (kv_lora_rank > 0)"
        )
    valid = divisors(spec.kv_heads)
    if isinstance(kv_heads, bool) or not isinstance(kv_heads, int) or kv_heads not in valid:
        raise ValueError(
            f"kv_heads must divide the model's {spec.kv_heads} key-value heads "
            f"(valid: {valid}), got {kv_heads!r}"
        )
    group = spec.kv_heads // kv_heads
    state = model.state_dict()
    for name, tensor in state.items():
        if ".attn.k_proj." in name or ".attn.v_proj." in name:
            heads = tensor.view(kv_heads, group, spec.head_dim, *tensor.shape[1:])
            mean = heads.double().mean(1).to(tensor.dtype)  # float64: copies average exactly
            state[name] = mean.reshape(kv_heads * spec.head_dim, *tensor.shape[1:])
    return _rebuild(model, state, dataclasses.replace(spec, kv_heads=kv_heads))


def tile_kv_heads(model: DecoderLM) -> DecoderLM:
    """The silent porting bug: query head i reads kv head i % kv_heads instead of i // group
    (every `Attention` swapped for a `TiledAttention`)."""
    return _rebuild(model, tile=True)


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
        raise ValueError(
            "rope_pairs_side_by_side needs rotary positions; this model has a learned table"
        )
    if model.spec.rope_layout == "pairs":
        raise ValueError("this model already rotates side-by-side pairs (rope_layout='pairs')")
    return _rebuild(model, spec=dataclasses.replace(model.spec, rope_layout="pairs"))


def with_norm(model: DecoderLM, kind: str) -> DecoderLM:
    """Swap the block and final norms: 'layer' (bias-free LayerNorm) or 'rms', same scale."""
    spec = model.spec
    if kind not in ("layer", "rms"):
        raise ValueError(f"kind must be 'layer' or 'rms', got {kind!r}")
    if kind == "rms" and (spec.norm_bias or not spec.norm_affine):
        raise ValueError(
            "with_norm(kind='rms') needs a norm with a scale and no shift; this "
            "model's LayerNorm has a bias or no scale"
        )
    state = model.state_dict()
    if spec.norm_offset:  # stored as (scale - offset): fold the offset into the weight
        for name in state:
            if _is_block_norm(name):
                state[name] = state[name] + spec.norm_offset
    new_spec = dataclasses.replace(
        spec, norm=kind, norm_bias=False, norm_affine=True, norm_offset=0.0
    )
    return _rebuild(model, state, new_spec)


def _is_block_norm(name: str) -> bool:
    """Weights of the norms `with_norm` swaps (not the QK or latent norms inside attention)."""
    return name == "norm.weight" or (
        name.startswith("blocks.") and ".attn." not in name and "_norm.weight" in name
    )


def with_activation(model: DecoderLM, name: str) -> DecoderLM:
    """The same feed-forward weights with another activation (e.g. GELU where SiLU was trained)."""
    if name not in ACTIVATIONS:
        raise ValueError(f"name must be one of {sorted(ACTIVATIONS)}, got {name!r}")
    return _rebuild(model, spec=dataclasses.replace(model.spec, act=name))


def without_gate(model: DecoderLM) -> DecoderLM:
    """Drop the gate: each gated feed-forward becomes down(up(x)), with no activation at all
    (every dense `GatedMLP` swapped for an `UngatedMLP`)."""
    if model.spec.ffn not in ("swiglu", "geglu"):
        raise ValueError(
            f"without_gate needs a gated feed-forward ('swiglu' or 'geglu'), "
            f"got ffn={model.spec.ffn!r}"
        )
    return _rebuild(model, ungate=True)


# ---- Every change undone at once (lesson LM10-T6) ---------------------------------------------

# What the essay "From GPT-2 to Llama: four changes and the reason for each" reports for the same
# changes, as it states them. It measured SmolLM2-135M (the course uses the 4-bit instruction-tuned
# release) on a text of its own: these figures are citations, not measurements of this library.
ESSAY = {
    "as trained": "3.12 (1,024 tokens); 3.381 (512 tokens)",
    "positions + 500": "3.381, unchanged (512 tokens)",
    "positions + 5,000": "3.381, unchanged (512 tokens)",
    "every position 0": "6.28",
    "rotation base 10,000": "+3%",
    "LayerNorm, no bias": "3.175 (+1.6%)",
    "GELU instead of SiLU": "3.79 (+21%)",
    "gate removed": "17.7",
    "kv heads tiled": "past 11",
    "rotation pairs as neighbours": "7.24",
    "kv heads expanded (exact)": "identical logits",
}


@dataclasses.dataclass(frozen=True)
class Result:
    """One row of `run_all`: a variant of the model and its loss on the same tokens."""

    change: str  # what was undone (a key of ESSAY)
    loss: float  # mean next-token cross-entropy, nats
    params: int  # parameters of the variant
    max_logit_diff: float | None = None  # only for the exact change: max |logits - original|


def _shifted(shift: int):
    def positions(ids: torch.Tensor) -> torch.Tensor:  # [batch, T] -> [batch, T]
        return torch.arange(ids.shape[1]).expand_as(ids) + shift

    return positions


# change -> (how to build the variant, how to renumber the positions or None)
_VARIANTS = {
    "as trained": (lambda m: m, None),
    "positions + 500": (lambda m: m, _shifted(500)),
    "positions + 5,000": (lambda m: m, _shifted(5000)),
    "every position 0": (lambda m: m, torch.zeros_like),
    "rotation base 10,000": (lambda m: with_rope_base(m, 10_000.0), None),
    "LayerNorm, no bias": (lambda m: with_norm(m, "layer"), None),
    "GELU instead of SiLU": (lambda m: with_activation(m, "gelu"), None),
    "gate removed": (without_gate, None),
    "kv heads tiled": (tile_kv_heads, None),
    "rotation pairs as neighbours": (rope_pairs_side_by_side, None),
    "kv heads expanded (exact)": (expand_kv_heads, None),
}


_EXACT = ("kv heads expanded (exact)",)  # changes that must leave the logits as they were


def run_all(model: DecoderLM, input_ids: torch.Tensor) -> list[Result]:
    """The loss of `model` on input_ids [batch, T] as trained, then with each change undone
    (one forward pass each).

    `model` must be a Llama-style DecoderLM (rotary positions, RMSNorm, a gated SiLU
    feed-forward, grouped key-value heads interleaved, rotary pairs in halves), e.g. SmolLM2.
    One variant is built at a time and dropped after its loss is taken, so memory holds at most
    two models. The exact change also reports how far its logits move from the original's.
    Raises ValueError if the model lacks one of the features undone.
    """
    evaluate.check_input_ids(input_ids)
    spec = model.spec
    wrong = [
        what
        for what, bad in (
            ("rotary positions", not spec.rope_theta or spec.positions),
            ("rotary pairs in halves (rope_layout='half')", spec.rope_layout != "half"),
            ("RMSNorm", spec.norm != "rms"),
            ("a gated SiLU feed-forward", spec.ffn != "swiglu" or spec.activation != "silu"),
            (
                "grouped key-value heads, interleaved",
                not spec.heads > spec.kv_heads or _tiled(model),
            ),
        )
        if bad
    ]
    if wrong:
        raise ValueError(
            f"run_all undoes the changes of a Llama-style model; this one lacks: {', '.join(wrong)}"
        )
    results, reference = [], None
    for change, (build, positions) in _VARIANTS.items():
        variant = build(model)
        with torch.inference_mode():
            logits = variant(
                input_ids, position_ids=None if positions is None else positions(input_ids)
            )  # [batch, T, vocab]
        if reference is None:  # the first row: the model as trained
            reference = logits
        diff = (logits - reference).abs().max().item() if change in _EXACT else None
        results.append(
            Result(
                change,
                evaluate.loss_of_logits(logits, input_ids),
                sum(p.numel() for p in variant.parameters()),
                diff,
            )
        )
        del variant, logits
    return results


def table_rows(results: list[Result]) -> list[dict]:
    """Rows for `lmcourse.count.table`: each change, its loss, its change against the first row
    (the model as trained), and the essay's figure for the same change."""
    if not results or not all(isinstance(r, Result) for r in results):
        raise ValueError("results must be the non-empty list that run_all returns")
    base = results[0].loss
    return [
        {
            "change undone": r.change,
            "loss": r.loss,
            # nats, rounded before formatting so that a change of 2e-6 never prints as -0.000
            "vs trained": "" if r is results[0] else f"{round(r.loss - base, 3) + 0.0:+.3f}",
            "the essay (SmolLM2-135M, its own text)": ESSAY.get(r.change, ""),
        }
        for r in results
    ]


__all__ = [
    "TiledAttention",
    "UngatedMLP",
    "expand_kv_heads",
    "mean_pool_kv_heads",
    "tile_kv_heads",
    "with_rope_base",
    "rope_pairs_side_by_side",
    "with_norm",
    "with_activation",
    "without_gate",
    "ESSAY",
    "Result",
    "run_all",
    "table_rows",
]
