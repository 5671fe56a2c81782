"""A learned table of position vectors (GPT-2, OPT), the alternative to rotary positions.

    x = embed(ids) + table[position + offset]

OPT's table has two extra rows at the start (`offset=2`, a leftover of fairseq's padding
convention): position 0 reads row 2. GPT-2's offset is 0.
"""

from __future__ import annotations

import torch
from torch import nn


class LearnedPositions(nn.Embedding):
    def __init__(self, spec):
        super().__init__(spec.positions, spec.d)  # a table of spec.positions rows
        self.offset = spec.position_offset

    def forward(self, position_ids: torch.Tensor) -> torch.Tensor:  # [batch, T] -> [batch, T, dim]
        return super().forward(position_ids + self.offset)
