"""Pure-PyTorch decoder blocks, written for reading next to transformers' modeling files."""

from .attention import Attention, attend, group_kv
from .block import Block
from .cache import KVCache, LayerCache
from .ffn import MLP, GatedMLP
from .masks import causal_mask, own_tokens_mask
from .mla import LatentAttention
from .model import DecoderLM
from .moe import Experts, MoE, Router
from .norms import LayerNorm, RMSNorm
from .positions import LearnedPositions
from .rope import RotaryEmbedding, apply_rotary, inverse_frequencies, llama3_scaled, rotate_half

__all__ = [
    "Attention",
    "Block",
    "DecoderLM",
    "Experts",
    "GatedMLP",
    "KVCache",
    "LatentAttention",
    "LayerCache",
    "LayerNorm",
    "LearnedPositions",
    "MLP",
    "MoE",
    "RMSNorm",
    "Router",
    "RotaryEmbedding",
    "apply_rotary",
    "attend",
    "causal_mask",
    "group_kv",
    "inverse_frequencies",
    "llama3_scaled",
    "own_tokens_mask",
    "rotate_half",
]
