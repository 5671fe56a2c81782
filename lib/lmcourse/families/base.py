"""What a family entry holds (`Family`), and the pieces several families' readers and weight
rules share. Nothing here imports torch: the counter reads configs without building a model, and
the transforms of the weight rules only call tensor methods."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..spec import ModelSpec

if TYPE_CHECKING:
    import torch

Source = tuple[str, "Callable[[torch.Tensor], torch.Tensor] | None"]  # transformers name, transform
Rules = dict[str, Source]  # DecoderLM tensor name -> its transformers source


@dataclass(frozen=True, kw_only=True)
class Family:
    """Everything the library knows about one transformers `model_type`."""

    name: str  # transformers' model_type
    parent: Family | None  # the family this one changes; None: read in full
    changes: Callable[[object], dict]  # config -> the ModelSpec fields that differ from parent's
    weights: Callable[[ModelSpec], Rules] | None = None  # DecoderLM tensor rules; None: parent's
    toy: dict  # config fields of a toy-sized model that keeps every feature of the family
    published: dict[str, dict]  # course name -> config.json fields of a published checkpoint
    parity: dict[str, dict]  # case -> config fields of a random model checked against transformers

    def read(self, config) -> dict:
        """The ModelSpec fields (all but `family`) of a transformers config of this family: the
        parent's reading of it, then this family's changes."""
        fields = self.parent.read(config) if self.parent else {}
        return fields | self.changes(config)

    def weight_rules(self, spec: ModelSpec) -> Rules:
        """{DecoderLM tensor: (transformers tensor, transform)} for a model of this family."""
        if self.weights is not None:
            return self.weights(spec)
        return self.parent.weight_rules(spec)

    @property
    def summary(self) -> str:
        """What the family changes, in one line: the docstring of its `changes`."""
        return (self.changes.__doc__ or "").strip()


# ---- pieces the readers share ---------------------------------------------------------------


def rope_parameters(theta: float, **scaling) -> dict:
    """config.json's rotary fields as transformers 5.x keeps them: base and scaling together."""
    return {
        "rope_parameters": {
            "rope_type": scaling.pop("rope_type", "default"),
            "rope_theta": theta,
            **scaling,
        }
    }


def rope_fields(c) -> dict:
    """rope_theta and the remaining rope_parameters (transformers 5.x keeps them together)."""
    params = dict(c.rope_parameters or {})
    theta = float(params.pop("rope_theta"))
    params.pop("partial_rotary_factor", None)
    if params.get("rope_type", "default") == "default":
        params.pop("rope_type", None)
    scaling = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))
    return {"rope_theta": theta, "rope_scaling": scaling}


def implied_head_dim(c) -> int:
    """hidden_size // num_attention_heads, for configs that give no head_dim."""
    if c.hidden_size % c.num_attention_heads:
        raise ValueError(
            f"num_attention_heads={c.num_attention_heads} must divide "
            f"hidden_size={c.hidden_size} when head_dim is not given"
        )
    return c.hidden_size // c.num_attention_heads


def windows(c) -> dict:
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


def experts(c, hidden: int) -> dict:
    """Routed experts as Mixtral and the Qwen MoE models name them."""
    return dict(
        experts=c.num_local_experts, experts_per_token=c.num_experts_per_tok, expert_hidden=hidden
    )


# ---- pieces the weight rules share ----------------------------------------------------------


def transpose(w):
    return w.T


def part(sizes: list[int], j: int, dim: int = 0, transposed: bool = False):
    """The j-th of consecutive slices of `sizes` along `dim` (after an optional transpose)."""

    def cut(w):
        w = w.T if transposed else w
        if w.shape[dim] != sum(sizes):
            raise ValueError(
                f"dimension {dim} is {w.shape[dim]}, expected {sum(sizes)} = "
                f"{' + '.join(map(str, sizes))}"
            )
        return w.split(sizes, dim=dim)[j]

    return cut


def norm_rules(spec: ModelSpec, ours: str, theirs: str) -> Rules:
    """A norm's scale and shift, where the spec's norms have them."""
    rules = {}
    if spec.norm_affine:
        rules[f"{ours}.weight"] = (f"{theirs}.weight", None)
    if spec.norm_bias:
        rules[f"{ours}.bias"] = (f"{theirs}.bias", None)
    return rules


PARITY_VOCAB = 96  # the vocabulary of every parity case (its token ids are drawn below it)
