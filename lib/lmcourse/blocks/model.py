"""`DecoderLM`: token table, (learned positions), blocks, final norm, output head.

    logits = head(norm(blocks(embed(ids) * embed_scale [+ pos_embed(positions)]))) / divisor

Built from a `ModelSpec` only; a transformers model's weights come in through `lmcourse.bridge`.
"""

from __future__ import annotations

import torch
from torch import nn

from .block import Block
from .cache import KVCache
from .norms import make_norm
from .positions import LearnedPositions
from .rope import RotaryEmbedding


class DecoderLM(nn.Module):
    """A decoder-only language model."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        self.embed = nn.Embedding(spec.vocab, spec.d)
        self.pos_embed = LearnedPositions(spec) if spec.positions else None
        self.rotary = None if spec.positions else RotaryEmbedding(spec)
        self.blocks = nn.ModuleList(Block(spec, i) for i in range(spec.layers))
        self.norm = make_norm(spec)
        self.head = nn.Linear(spec.d, spec.vocab, bias=False)
        if spec.tied:
            self.head.weight = self.embed.weight
        self.reset_parameters()

    def reset_parameters(self, std: float = 0.02):
        """Matrices and tables ~ N(0, std); norms to a scale of one; biases to zero."""
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, 0.0, std)
            elif "norm" in name:
                scale = 1.0 - self.spec.norm_offset  # the stored weight of a unit scale
                nn.init.constant_(p, scale if name.endswith("weight") else 0.0)
            else:
                nn.init.zeros_(p)

    def new_cache(self, batch: int, max_tokens: int) -> KVCache:
        """An empty cache with room for `max_tokens` tokens per sequence."""
        p = self.embed.weight
        return KVCache(
            [block.attn.new_cache(batch, max_tokens, p.dtype, p.device) for block in self.blocks]
        )

    def hidden_states(self, input_ids, position_ids=None, cache: KVCache | None = None):
        """input_ids [batch, T] -> final-normed hidden states [batch, T, d].

        With a cache, the tokens continue the cached sequence and the cache is extended.
        `position_ids` [batch, T] (default: sequence positions) feed RoPE or the position table;
        the causal mask always follows the order of the tokens.
        """
        if input_ids.dim() != 2:
            raise ValueError(
                f"input_ids must be [batch, tokens], got shape {tuple(input_ids.shape)}"
            )
        B, T = input_ids.shape
        start = cache.length if cache is not None else 0
        qpos = torch.arange(start, start + T, device=input_ids.device)  # sequence positions
        if position_ids is None:
            position_ids = qpos.expand(B, T)
        x = self.embed_tokens(input_ids, position_ids)  # [batch, T, d]
        cos = sin = None
        if self.pos_embed is None:
            cos, sin = self.rotary(position_ids, x.dtype)  # [batch, 1, T, rotary_dim]
        for i, block in enumerate(self.blocks):
            layer_cache = cache.layers[i] if cache is not None else None
            x = block(x, cos, sin, qpos, layer_cache, start)
        if cache is not None:
            cache.length += T
        return self.norm(x)

    def embed_tokens(self, input_ids, position_ids):
        """input_ids [batch, T] -> the residual stream's first state [batch, T, d]: the token
        table, scaled, plus the position table where the model has one. FastDecoder calls it
        too, so what a family does to its embeddings is written here once."""
        x = self.embed(input_ids)
        if self.spec.embed_scale != 1.0:  # Gemma: sqrt(d), rounded to the model's dtype first
            x = x * torch.tensor(self.spec.embed_scale, dtype=x.dtype)  # as transformers rounds it
        if self.pos_embed is not None:
            x = x + self.pos_embed(position_ids)
        return x

    def forward(self, input_ids, position_ids=None, cache: KVCache | None = None):
        """input_ids [batch, T] -> logits [batch, T, vocab]."""
        return self.logits(self.hidden_states(input_ids, position_ids, cache))

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """Final-normed hidden states [..., d] -> logits [..., vocab]."""
        return self.finish_logits(self.head(h))

    def finish_logits(self, logits: torch.Tensor) -> torch.Tensor:
        """What a family does to the output head's products (FastDecoder calls it too)."""
        if self.spec.logit_divisor != 1.0:  # Granite divides them
            logits = logits / self.spec.logit_divisor
        cap = self.spec.final_softcap
        return cap * torch.tanh(logits / cap) if cap else logits  # Gemma 2 caps them

    @torch.inference_mode()
    def generate(self, input_ids, max_new_tokens: int, use_cache: bool = True) -> torch.Tensor:
        """Greedy decoding: input_ids [batch, T] -> [batch, T + max_new_tokens]."""
        B, T = input_ids.shape
        ids = torch.empty(B, T + max_new_tokens, dtype=input_ids.dtype, device=input_ids.device)
        ids[:, :T] = input_ids
        cache = self.new_cache(B, T + max_new_tokens) if use_cache else None
        step_input = input_ids
        for t in range(T, T + max_new_tokens):
            if not use_cache:
                step_input = ids[:, :t]  # the whole sequence, every step
            h = self.hidden_states(step_input, cache=cache)[:, -1:]  # only the last position
            ids[:, t] = self.logits(h)[:, -1].argmax(-1)
            step_input = ids[:, t : t + 1]
        return ids
