"""Submissions of LM10-L5 (port a Llama block) for the grading round trip."""

from . import fill, replaced, solution_answers

LAB = "LM10-L5"


def correct(nb):
    return fill(nb, solution_answers(LAB))


def alternatives(nb):
    """Correct answers written unlike the model solution: heads repeated with
    repeat_interleave, the rotation through complex numbers, RMSNorm divided by a square
    root, attention through PyTorch's scaled_dot_product_attention, the embedding and the head
    through F.embedding and F.linear, read with get_input_embeddings, get_output_embeddings
    and dtype, the layers with get_decoder (transformers' getters, answered in the room too).
    Full marks."""
    answers = solution_answers(LAB)
    answers["l5_expand_kv"] = """
def expand_kv(kv, n_rep):
    return kv.repeat_interleave(n_rep, dim=1)
"""
    answers["l5_rope"] = """
def apply_rope(x, positions, base):
    half = x.shape[-1] // 2
    theta = base ** (-torch.arange(half, dtype=torch.float32) * 2 / x.shape[-1])
    turn = torch.polar(torch.ones(len(positions), half), positions.float()[:, None] * theta)
    z = torch.complex(x[..., :half], x[..., half:]) * turn  # pair i: (x_i, x_{i + half})
    return torch.cat([z.real, z.imag], dim=-1)
"""
    block = replaced(
        answers["l5_block"],
        "return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))",
        "return self.weight * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)",
    )
    answers["l5_block"] = replaced(
        block,
        """        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # [b, H, t, t]
        future = torch.ones(t, t, dtype=torch.bool).triu(1)
        weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(b, t, self.heads * self.head_dim)""",
        """        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out = out.transpose(1, 2).reshape(b, t, self.heads * self.head_dim)""",
    )
    logits = replaced(
        answers["l5_logits"],
        "x = model.model.embed_tokens.weight[input_ids]",
        # transformers' getters and dtype: in the room too (the fifty-sixth hub tester)
        "x = F.embedding(input_ids, model.get_input_embeddings().weight).to(model.dtype)",
    )
    logits = replaced(
        logits,
        "return final_norm(x) @ model.lm_head.weight.T",
        "return F.linear(final_norm(x), model.get_output_embeddings().weight)",
    )
    # transformers' get_decoder(): in the room too (the sixty-third hub tester)
    answers["l5_logits"] = replaced(
        logits, "for layer in model.model.layers:", "for layer in model.get_decoder().layers:"
    )
    return fill(nb, answers)


def mistake(nb):
    """The silent bug the lab is about: key-value heads tiled instead of interleaved.

    Everything loads and runs. Part 1 scores 0; the rotation is right, and the block and the
    logits, which go through expand_kv, are judged on what is their own (run again with the
    heads repeated in place) and keep their points: 8 of 10.
    """
    answers = solution_answers(LAB)
    answers["l5_expand_kv"] = """
def expand_kv(kv, n_rep):
    return kv.repeat(1, n_rep, 1, 1)
"""
    return fill(nb, answers)


def hardcoded(nb):
    """A port wired to the first model (6 heads, 2 key-value heads, head width 8, base 10,000):
    it passes every visible test and fails on the hidden second model."""
    answers = solution_answers(LAB)
    answers["l5_expand_kv"] = "def expand_kv(kv, n_rep):\n    return kv[:, [0, 0, 0, 1, 1, 1]]\n"
    answers["l5_rope"] = (
        "def apply_rope(x, positions, base):\n"
        "    angles = positions.float()[:, None] * torch.tensor([1.0, 0.1, 0.01, 0.001])\n"
        "    cos, sin = angles.cos().repeat(1, 2), angles.sin().repeat(1, 2)\n"
        "    return x * cos + torch.cat([-x[..., 4:], x[..., :4]], dim=-1) * sin\n"
    )
    block = answers["l5_block"]
    for general, wired in (
        ("d, hd = config.hidden_size, self.head_dim", "d, hd = 48, 8"),
        ("nn.Linear(d, self.heads * hd,", "nn.Linear(d, 48,"),
        ("nn.Linear(d, self.kv_heads * hd,", "nn.Linear(d, 16,"),
        ("nn.Linear(self.heads * hd, d,", "nn.Linear(48, d,"),
        ("view(b, t, self.heads, self.head_dim)", "view(b, t, 6, 8)"),
        ("view(b, t, self.kv_heads, self.head_dim)", "view(b, t, 2, 8)"),
        ("positions, self.base)", "positions, 10000.0)"),
        ("self.heads // self.kv_heads)", "3)"),
        ("math.sqrt(self.head_dim)", "math.sqrt(8)"),
        ("reshape(b, t, self.heads * self.head_dim)", "reshape(b, t, 48)"),
    ):
        if general not in block:
            raise ValueError(f"the solution of l5_block no longer contains {general!r}")
        block = block.replace(general, wired)
    answers["l5_block"] = block
    return fill(nb, answers)


def refpatch(nb):
    """Attention scores divided by the head width instead of its square root, and layer_io,
    the setup cell's reference for the block test, redefined to return the port's own output.
    The grader defines the reference again before each test: the block test fails; the logits,
    compared with the model itself, are judged on how they put the student's own blocks
    together (the slip is the block's) and keep their points."""
    answers = solution_answers(LAB)
    block = answers["l5_block"]
    right = "/ math.sqrt(self.head_dim)"
    assert block.count(right) == 1, "the solution's score scale moved; update this case"
    answers["l5_block"] = (
        block.replace(right, "/ self.head_dim")
        + """


@torch.no_grad()
def layer_io(model, input_ids, layer):
    seen = {}

    def hook(module, args, output):
        seen["x"] = args[0]

    handle = model.model.layers[layer].register_forward_hook(hook)
    model(input_ids, use_cache=False)
    handle.remove()
    return seen["x"], port_layer(model.model.layers[layer], model.config)(seen["x"])
"""
    )
    return fill(nb, answers)


expected = {
    "mistake": {
        "l5_test_expand_kv": 0.0,
        "l5_test_rope": 2.0,
        "l5_test_block": 3.0,
        "l5_test_logits": 3.0,
    },
    "refpatch": {
        "l5_test_expand_kv": 2.0,
        "l5_test_rope": 2.0,
        "l5_test_block": 0.0,
        "l5_test_logits": 3.0,
    },
}


def delegate(nb):
    """Key-value heads expanded by transformers' repeat_kv and the block's RMSNorm by PyTorch's
    rms_norm: Part 1 scores 0, and so do the block and the logits, which call both. The
    rotation, written by hand, keeps its points."""
    answers = solution_answers(LAB)
    answers["l5_expand_kv"] = """
def expand_kv(kv, n_rep):
    return repeat_kv(kv, n_rep)
"""
    answers["l5_block"] = replaced(
        answers["l5_block"],
        "return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))",
        "return F.rms_norm(x, x.shape[-1:], self.weight, self.eps)",
    )
    return fill(nb, answers)


expected["delegate"] = {
    "l5_test_expand_kv": 0.0,
    "l5_test_rope": 2.0,
    "l5_test_block": 0.0,
    "l5_test_logits": 0.0,
}


def mistakes(nb):
    """The two silent bugs of the lab, each a catalogued slip: the key-value heads tiled, the
    rotation pairs side by side. Parts 1 and 2 score 0 and their feedback names the slip; the
    block and the logits, built on them, are judged on what is their own and keep their
    points."""
    answers = solution_answers(LAB)
    answers["l5_expand_kv"] = """
def expand_kv(kv, n_rep):
    return kv.repeat(1, n_rep, 1, 1)
"""
    answers["l5_rope"] = """
def apply_rope(x, positions, base):
    hd = x.shape[-1]
    inv_freq = 1.0 / base ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    angles = positions.float()[:, None] * inv_freq[None, :]
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, odd * cos + even * sin], dim=-1).flatten(-2)
"""
    return fill(nb, answers)


expected["mistakes"] = {
    "l5_test_expand_kv": 0.0,
    "l5_test_rope": 0.0,
    "l5_test_block": 3.0,
    "l5_test_logits": 3.0,
}
slips = {
    "l5_test_expand_kv": (
        "the stack of key-value heads tiled (0, 1, 0, 1, ...): query head h reads head "
        "h // n_rep, each head repeated in place?"
    ),
    "l5_test_rope": (
        "pairs side by side (2i, 2i + 1): Llama's weights pair coordinate i with i + head_dim/2?"
    ),
}


SIDE_BY_SIDE = """
def apply_rope(x, positions, base):
    hd = x.shape[-1]
    inv_freq = 1.0 / base ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    angles = positions.float()[:, None] * inv_freq[None, :]
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, odd * cos + even * sin], dim=-1).flatten(-2)
"""


def cascade(nb):
    """A slip in Part 2 (rotation pairs side by side) under the solution's block and logits,
    which rotate with it: Part 2 loses its points and its feedback names the slip; the block
    and the logits are judged on what is their own (run again with pairs side by side on
    weights permuted to match) and keep theirs."""
    answers = solution_answers(LAB)
    answers["l5_rope"] = SIDE_BY_SIDE
    return fill(nb, answers)


def combinations(nb):
    """A rotation that ignores `positions` and turns token t by t: right for positions
    0 .. T-1, which the visible test and the block use; only a hidden input with other
    positions finds it. Only Part 2 loses its points."""
    answers = solution_answers(LAB)
    answers["l5_rope"] = replaced(
        answers["l5_rope"],
        "angles = positions.float()[:, None]",
        "angles = torch.arange(x.shape[-2]).float()[:, None]",
    )
    return fill(nb, answers)


def numpy(nb):
    """Sizes handled as numpy integers and logits returned in float64: nothing the prompt
    rules out. Full marks."""
    answers = solution_answers(LAB)
    answers["l5_expand_kv"] = """
import numpy as np


def expand_kv(kv, n_rep):
    b, kv_heads, t, hd = kv.shape
    heads = np.int64(kv_heads) * np.int64(n_rep)
    return kv[:, :, None].expand(b, kv_heads, int(n_rep), t, hd).reshape(b, int(heads), t, hd)
"""
    answers["l5_logits"] = replaced(
        answers["l5_logits"],
        "return final_norm(x) @ model.lm_head.weight.T  # [b, t, vocab]",
        "return (final_norm(x) @ model.lm_head.weight.T).double()  # [b, t, vocab]",
    )
    return fill(nb, answers)


expected["cascade"] = {
    "l5_test_expand_kv": 2.0,
    "l5_test_rope": 0.0,
    "l5_test_block": 3.0,
    "l5_test_logits": 3.0,
}
expected["combinations"] = {
    "l5_test_expand_kv": 2.0,
    "l5_test_rope": 0.0,
    "l5_test_block": 3.0,
    "l5_test_logits": 3.0,
}
expected["numpy"] = {
    "l5_test_expand_kv": 2.0,
    "l5_test_rope": 2.0,
    "l5_test_block": 3.0,
    "l5_test_logits": 3.0,
}
named = {"cascade": {"l5_test_rope": slips["l5_test_rope"]}}

BLOCK_SLIPS = {
    "no_mask": (
        'weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)',
        "weights = scores.softmax(dim=-1)",
        "no causal mask: a position attends only to itself and the positions before it?",
    ),
    "unscaled": (
        "scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)",
        "scores = q @ k.transpose(-2, -1)",
        "scores left unscaled: they are divided by sqrt(head_dim)?",
    ),
    "width_scale": (
        "scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1])",
        "scores scaled by 1/sqrt(hidden_size): the scale is 1/sqrt(head_dim)?",
    ),
}


def _block_slip(kind):
    def case(nb):
        answers = solution_answers(LAB)
        old, new, _ = BLOCK_SLIPS[kind]
        answers["l5_block"] = replaced(answers["l5_block"], old, new)
        return fill(nb, answers)

    case.__doc__ = (
        f"A slip of the block's attention ({kind}): the block loses its points and its "
        "feedback names the slip; the logits, which run through the block, are judged on how "
        "they put the student's own blocks together and keep theirs."
    )
    return case


block_no_mask = _block_slip("no_mask")
block_unscaled = _block_slip("unscaled")
block_width_scale = _block_slip("width_scale")


def block_eps_outside(nb):
    """RMSNorm with eps added outside the square root: the block loses its points; the logits,
    whose final norm is that RMSNorm, are judged on how they put the student's own blocks and
    norm together and keep theirs."""
    answers = solution_answers(LAB)
    answers["l5_block"] = replaced(
        answers["l5_block"],
        "return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))",
        "return self.weight * x / (x.pow(2).mean(-1, keepdim=True).sqrt() + self.eps)",
    )
    return fill(nb, answers)


def rope_swapped(nb):
    """cos and sin swapped in the rotation: Part 2 loses its points and names the slip; the
    block and the logits are judged with a right rotation and keep theirs."""
    answers = solution_answers(LAB)
    answers["l5_rope"] = replaced(
        answers["l5_rope"],
        "return x * cos + torch.cat([-x2, x1], dim=-1) * sin",
        "return x * sin + torch.cat([-x2, x1], dim=-1) * cos",
    )
    return fill(nb, answers)


def expand_kv_raises(nb):
    """Key-value heads repeated along the tokens (dim 2): a tensor of the wrong shape, so the
    block and the logits raise with it. Part 1 loses its points; the block and the logits are
    judged with the heads repeated in place and keep theirs."""
    answers = solution_answers(LAB)
    answers["l5_expand_kv"] = """
def expand_kv(kv, n_rep):
    return kv.repeat_interleave(n_rep, dim=2)
"""
    return fill(nb, answers)


more = (
    "block_no_mask",
    "block_unscaled",
    "block_width_scale",
    "block_eps_outside",
    "rope_swapped",
    "expand_kv_raises",
)
FULL = {"l5_test_expand_kv": 2.0, "l5_test_rope": 2.0, "l5_test_block": 3.0, "l5_test_logits": 3.0}
for _case in more[:4]:
    expected[_case] = dict(FULL, l5_test_block=0.0)
expected["rope_swapped"] = dict(FULL, l5_test_rope=0.0)
expected["expand_kv_raises"] = dict(FULL, l5_test_expand_kv=0.0)
for _kind in ("no_mask", "unscaled", "width_scale"):
    named[f"block_{_kind}"] = {"l5_test_block": BLOCK_SLIPS[_kind][2]}
named["rope_swapped"] = {
    "l5_test_rope": "cos and sin swapped: x is multiplied by cos, rotate_half(x) by sin?"
}
