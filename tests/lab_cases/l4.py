"""Submissions of LM10-L4 (rotary positions) for the grading round trip."""

from . import fill, replaced, solution_answers

LAB = "LM10-L4"


def correct(nb):
    return fill(nb, solution_answers(LAB))


def alternatives(nb):
    """Correct answers written unlike the model solution: frequencies in log space, the angle
    table repeated rather than concatenated, the rotation written out on the two halves, the
    score through complex numbers, and the periods by a Python loop. Full marks."""
    return fill(
        nb,
        {
            "l4_angles": (
                "def inverse_frequencies(head_dim, base):\n"
                "    if head_dim <= 0 or head_dim % 2:\n"
                "        raise ValueError(f'head_dim must be even and positive, got {head_dim}')\n"
                "    i = torch.arange(head_dim // 2, dtype=torch.float32)\n"
                "    return torch.exp(-(2 * i / head_dim) * math.log(base))\n"
                "\n"
                "\n"
                "def rope_cos_sin(positions, head_dim, base):\n"
                "    angles = torch.outer(positions.float(), inverse_frequencies(head_dim, base))\n"
                "    angles = angles.repeat(1, 2)\n"
                "    return torch.cos(angles), torch.sin(angles)\n"
            ),
            "l4_rotate": (
                "def rotate_half(x):\n"
                "    first, second = x.chunk(2, dim=-1)\n"
                "    return torch.cat((-second, first), dim=-1)\n"
                "\n"
                "\n"
                "def apply_rope(x, cos, sin):\n"
                "    half = x.shape[-1] // 2\n"
                "    x1, x2 = x[..., :half], x[..., half:]\n"
                "    c, s = cos[..., :half], sin[..., :half]\n"
                "    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)\n"
            ),
            "l4_score": (
                "def rope_score(q, k, m, n, base):\n"
                "    half = q.shape[-1] // 2\n"
                "    theta = inverse_frequencies(q.shape[-1], base)\n"
                "    one = torch.ones(half)\n"
                "    qc = torch.complex(q[:half], q[half:]) * torch.polar(one, m * theta)\n"
                "    kc = torch.complex(k[:half], k[half:]) * torch.polar(one, n * theta)\n"
                "    return float((qc * kc.conj()).real.sum())\n"
            ),
            "l4_periods": (
                "def rotation_periods(head_dim, base):\n"
                "    return torch.tensor([2 * math.pi * base ** (2 * i / head_dim)\n"
                "                         for i in range(head_dim // 2)], dtype=torch.float64)\n"
                "\n"
                "\n"
                "_periods = rotation_periods(SMOLLM2_HEAD_DIM, SMOLLM2_BASE)\n"
                "smollm2_fastest = float(_periods[0])\n"
                "smollm2_slowest = float(_periods[-1])\n"
            ),
        },
    )


def mistake(nb):
    """rotate_half with its signs swapped: every pair turns the wrong way.

    The tables (Part 1) and the periods (Part 4) are right; the rotation no longer matches
    transformers (Part 2). The score, which uses the rotation, is judged on what is its own
    (the score your functions make) and keeps its points: 7 of 10 points.
    """
    answers = solution_answers(LAB)
    answers["l4_rotate"] = """
def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([x[..., half:], -x[..., :half]], dim=-1)


def apply_rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin
"""
    return fill(nb, answers)


def hardcoded(nb):
    """Answers wired to the visible examples: the visible inverse frequencies typed in, a
    rotation for 16-wide heads, a score for SmolLM2's base and width only, SmolLM2's periods
    whatever the arguments."""
    return fill(
        nb,
        {
            "l4_angles": (
                "def inverse_frequencies(head_dim, base):\n"
                "    return torch.tensor([1.0, 0.1, 0.01, 0.001])\n"
                "\n"
                "\n"
                "def rope_cos_sin(positions, head_dim, base):\n"
                "    angles = positions.float()[:, None] * torch.tensor([1.0, 0.1, 0.01, 0.001])\n"
                "    angles = torch.cat([angles, angles], dim=-1)\n"
                "    return angles.cos(), angles.sin()\n"
            ),
            "l4_rotate": (
                "def rotate_half(x):\n"
                "    half = 2 if x.shape[-1] == 4 else 8\n"
                "    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)\n"
                "\n"
                "\n"
                "def apply_rope(x, cos, sin):\n"
                "    return x * cos + torch.cat([-x[..., 8:], x[..., :8]], dim=-1) * sin\n"
            ),
            "l4_score": (
                "def rope_score(q, k, m, n, base):\n"
                "    theta = 1.0 / 100000.0 ** (torch.arange(0, 64, 2) / 64)\n"
                "    def turn(x, p):\n"
                "        c, s = (p * theta).cos(), (p * theta).sin()\n"
                "        a, b = x[:32], x[32:]\n"
                "        return torch.cat([a * c - b * s, b * c + a * s])\n"
                "    return (turn(q, m) @ turn(k, n)).item()\n"
            ),
            "l4_periods": (
                "def rotation_periods(head_dim, base):\n"
                "    exponents = torch.arange(0, 64, 2, dtype=torch.float64) / 64\n"
                "    return 2 * math.pi * 100000.0 ** exponents\n"
                "\n"
                "\n"
                "smollm2_fastest = 6.283185307179586\n"
                "smollm2_slowest = 438_460.0\n"
            ),
        },
    )


def refpatch(nb):
    """Tables in the interleaved layout (wrong for Llama weights), and reference_cos_sin, the
    setup cell's reference, redefined to agree. The grader defines the reference again before
    each test: Part 1 fails as it would without the redefinition; the score, built on it, is
    judged on what is its own and keeps its points."""
    answers = solution_answers(LAB)
    right = "angles = torch.cat([angles, angles], dim=-1)"
    assert right in answers["l4_angles"], "the solution changed: update this case"
    answers["l4_angles"] = (
        answers["l4_angles"].replace(right, "angles = angles.repeat_interleave(2, dim=-1)")
        + """


def reference_cos_sin(positions, head_dim, base):
    return rope_cos_sin(positions, head_dim, base)
"""
    )
    return fill(nb, answers)


expected = {
    "mistake": {
        "l4_test_angles": 3.0,
        "l4_test_rotate": 0.0,
        "l4_test_score": 2.0,
        "l4_test_periods": 2.0,
    },
    "refpatch": {
        "l4_test_angles": 0.0,
        "l4_test_rotate": 3.0,
        "l4_test_score": 2.0,
        "l4_test_periods": 2.0,
    },
}


def delegate(nb):
    """The angles and the rotation handed to transformers (the setup's reference_cos_sin and a
    LlamaRotaryEmbedding's inverse frequencies; apply_rotary_pos_emb): Parts 1 and 2 score 0.
    The score and the periods, written without those functions, keep their points."""
    answers = solution_answers(LAB)
    answers["l4_angles"] = """
def inverse_frequencies(head_dim, base):
    config = LlamaConfig(hidden_size=head_dim, num_attention_heads=1, head_dim=head_dim,
                         rope_parameters={"rope_type": "default", "rope_theta": float(base)})
    return LlamaRotaryEmbedding(config).inv_freq


def rope_cos_sin(positions, head_dim, base):
    return reference_cos_sin(positions, head_dim, base)
"""
    answers["l4_rotate"] = """
def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rope(x, cos, sin):
    return apply_rotary_pos_emb(x, x, cos, sin, unsqueeze_dim=0)[0]
"""
    answers["l4_score"] = """
def rope_score(q, k, m, n, base):
    half = q.shape[-1] // 2
    theta = base ** (-torch.arange(0, 2 * half, 2, dtype=torch.float32) / (2 * half))
    one = torch.ones(half)
    qc = torch.complex(q[:half], q[half:]) * torch.polar(one, m * theta)
    kc = torch.complex(k[:half], k[half:]) * torch.polar(one, n * theta)
    return float((qc * kc.conj()).real.sum())
"""
    answers["l4_periods"] = """
def rotation_periods(head_dim, base):
    return torch.tensor([2 * math.pi * base ** (2 * i / head_dim) for i in range(head_dim // 2)],
                        dtype=torch.float64)


_periods = rotation_periods(SMOLLM2_HEAD_DIM, SMOLLM2_BASE)
smollm2_fastest = float(_periods[0])
smollm2_slowest = float(_periods[-1])
"""
    return fill(nb, answers)


expected["delegate"] = {
    "l4_test_angles": 0.0,
    "l4_test_rotate": 0.0,
    "l4_test_score": 2.0,
    "l4_test_periods": 2.0,
}


def mistakes(nb):
    """One catalogued slip per part with a catalogue: pair i given the exponent i/d, the
    rotation turned the wrong way, the periods without 2 pi (written on their own, so the
    frequency slip stays Part 1's). Those parts score 0 and their feedback names the slip;
    the score, built on the wrong parts, is judged on what is its own and keeps its points."""
    answers = solution_answers(LAB)
    answers["l4_angles"] = replaced(
        answers["l4_angles"],
        "torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim",
        "torch.arange(0, head_dim // 2, dtype=torch.float32) / head_dim",
    )
    answers["l4_rotate"] = replaced(
        answers["l4_rotate"], "x * cos + rotate_half(x) * sin", "x * cos - rotate_half(x) * sin"
    )
    answers["l4_periods"] = replaced(
        answers["l4_periods"],
        "return 2 * math.pi / inverse_frequencies(head_dim, base).double()",
        "return base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)",
    )
    return fill(nb, answers)


expected["mistakes"] = {
    "l4_test_angles": 0.0,
    "l4_test_rotate": 0.0,
    "l4_test_score": 2.0,
    "l4_test_periods": 0.0,
}
slips = {
    "l4_test_angles": "pair i given the exponent i/d: it is 2i/d?",
    "l4_test_rotate": "rotated the wrong way: rotate_half sends the halves (x1, x2) to (-x2, x1)?",
    "l4_test_periods": "the periods without the factor 2 pi: a full turn is 2 pi radians?",
}


def cascade(nb):
    """A slip in Part 1 (pair i given the exponent i/d) under the solution's score and periods,
    which call Part 1's functions: Part 1 loses its points and its feedback names the slip; the
    score and the periods are judged on what is their own (the score your rotation makes, the
    periods of your frequencies) and keep theirs."""
    answers = solution_answers(LAB)
    answers["l4_angles"] = replaced(
        answers["l4_angles"],
        "torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim",
        "torch.arange(0, head_dim // 2, dtype=torch.float32) / head_dim",
    )
    return fill(nb, answers)


def combinations(nb):
    """Tables built for positions 0 .. T-1 whatever `positions` holds: right on the visible
    positions (0 to 5), wrong on the hidden ones out of order. Only Part 1 loses its points
    (the score, which calls it with [m, n], is judged on what is its own)."""
    answers = solution_answers(LAB)
    answers["l4_angles"] = replaced(
        answers["l4_angles"],
        "angles = positions.float()[:, None]",
        "angles = torch.arange(len(positions)).float()[:, None]",
    )
    return fill(nb, answers)


def numpy(nb):
    """The score as a numpy float (float(...) left out after .numpy()): the prompt asks for a
    Python float and the visible check says so before hand-in. Only the score loses its points,
    with a message naming the type."""
    answers = solution_answers(LAB)
    answers["l4_score"] = replaced(
        answers["l4_score"], "return (q_rot @ k_rot).item()", "return (q_rot @ k_rot).numpy()[()]"
    )
    return fill(nb, answers)


expected["cascade"] = {
    "l4_test_angles": 0.0,
    "l4_test_rotate": 3.0,
    "l4_test_score": 2.0,
    "l4_test_periods": 2.0,
}
expected["combinations"] = {
    "l4_test_angles": 0.0,
    "l4_test_rotate": 3.0,
    "l4_test_score": 2.0,
    "l4_test_periods": 2.0,
}
expected["numpy"] = {
    "l4_test_angles": 3.0,
    "l4_test_rotate": 3.0,
    "l4_test_score": 0.0,
    "l4_test_periods": 2.0,
}
named = {"cascade": {"l4_test_angles": slips["l4_test_angles"]}}


def swapped_tables(nb):
    """rope_cos_sin returns its tables the other way round (sin, cos): Part 1 loses its points
    and its feedback names the slip; the score, built on it, is judged on what is its own and
    keeps its points."""
    answers = solution_answers(LAB)
    answers["l4_angles"] = replaced(
        answers["l4_angles"],
        "return angles.cos(), angles.sin()",
        "return angles.sin(), angles.cos()",
    )
    return fill(nb, answers)


def periods_tensor(nb):
    """smollm2_fastest left as a 0-d tensor where the prompt asks for a Python float: the
    visible check says so before hand-in, and only Part 4 loses its points."""
    answers = solution_answers(LAB)
    answers["l4_periods"] = replaced(
        answers["l4_periods"],
        "smollm2_fastest = smollm2_periods.min().item()",
        "smollm2_fastest = smollm2_periods.min()",
    )
    return fill(nb, answers)


more = ("swapped_tables", "periods_tensor")
FULL = {"l4_test_angles": 3.0, "l4_test_rotate": 3.0, "l4_test_score": 2.0, "l4_test_periods": 2.0}
expected["swapped_tables"] = dict(FULL, l4_test_angles=0.0)
expected["periods_tensor"] = dict(FULL, l4_test_periods=0.0)
named["swapped_tables"] = {
    "l4_test_angles": "cos and sin swapped: rope_cos_sin returns the cosines first?"
}
said = {"periods_tensor": {"l4_test_periods": "smollm2_fastest must give exactly type float"}}
