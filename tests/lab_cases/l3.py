"""Submissions of LM10-L3 (RMSNorm's non-zero mean) for the grading round trip."""

from . import fill, replaced, solution_answers

LAB = "LM10-L3"


# torch.var divides by n - 1 by default; torch.nn.LayerNorm divides by n
UNBIASED_LAYER_NORM = """
def layer_norm(x, weight=None, bias=None, eps=1e-5):
    y = (x - x.mean(dim=-1, keepdim=True)) / torch.sqrt(x.var(dim=-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y
"""


def correct(nb):
    return fill(nb, solution_answers(LAB))


def alternatives(nb):
    """Correct answers written unlike the model solution: the one-pass variance E[x^2] - E[x]^2,
    a sum and rsqrt for the root mean square (after a torch.manual_seed, which torch._dynamo,
    imported in the sandbox, wraps in its own code: it once cost the part), the mean fraction
    from sums, and the norm inputs concatenated along the batch dimension instead of stacked.
    Full marks."""
    return fill(
        nb,
        {
            "l3_layer_norm": (
                "def layer_norm(x, weight=None, bias=None, eps=1e-5):\n"
                "    mean = x.mean(dim=-1, keepdim=True)\n"
                "    var = (x * x).mean(dim=-1, keepdim=True) - mean * mean  # one pass\n"
                "    y = (x - mean) * torch.rsqrt(var + eps)\n"
                "    if weight is not None:\n"
                "        y = y * weight\n"
                "    return y if bias is None else y + bias\n"
            ),
            "l3_rms_norm": (
                "def rms_norm(x, weight=None, eps=1e-6):\n"
                "    torch.manual_seed(0)\n"
                "    n = x.shape[-1]\n"
                "    y = x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) / n + eps)\n"
                "    return y if weight is None else weight * y\n"
            ),
            "l3_mean_fraction": (
                "def mean_fraction(y):\n"
                "    n = y.shape[-1]\n"
                "    return (y.sum(dim=-1) / n) / torch.sqrt((y * y).sum(dim=-1) / n)\n"
            ),
            "l3_norm_inputs": (
                "def norm_inputs(hidden_states):\n"
                "    # every entry but the last, which transformers gives after the final norm\n"
                "    return torch.cat([h for h in hidden_states[:-1]], dim=0)\n"
            ),
        },
    )


def mistake(nb):
    """LayerNorm with the unbiased variance (torch.var's default divides by n - 1).

    Its output still has mean zero, so Parts 3 and 4 pass; torch.nn.LayerNorm divides by n,
    so the LayerNorm test (3 of 10 autograded points) fails on its visible inputs.
    """
    answers = solution_answers(LAB)
    answers["l3_layer_norm"] = UNBIASED_LAYER_NORM
    return fill(nb, answers)


def hardcoded(nb):
    """Answers fitted to the visible examples: the visible epsilons typed in, a mean over the
    whole (1-D) tensor, and the norm inputs of the notebook's own token slice whatever the
    input."""
    return fill(
        nb,
        {
            "l3_layer_norm": (
                "def layer_norm(x, weight=None, bias=None, eps=1e-5):\n"
                "    mean = x.mean(dim=-1, keepdim=True)\n"
                "    y = (x - mean) / torch.sqrt("
                "(x - mean).pow(2).mean(dim=-1, keepdim=True) + 1e-5)\n"
                "    return y if weight is None else y * weight + bias\n"
            ),
            "l3_rms_norm": (
                "def rms_norm(x, weight=None, eps=1e-6):\n"
                "    y = x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6)\n"
                "    return y if weight is None else y * weight\n"
            ),
            "l3_mean_fraction": (
                "def mean_fraction(y):\n    return y.mean() / y.pow(2).mean().sqrt()\n"
            ),
            "l3_norm_inputs": (
                "_fixed = torch.stack(hidden_states[:30])[:, 0]\n"
                "\n"
                "\n"
                "def norm_inputs(hidden_states):\n"
                "    return _fixed\n"
            ),
        },
    )


def refpatch(nb):
    """The mistake's LayerNorm (unbiased variance), and `nn`, which the setup cell imports and
    the LayerNorm test compares against, rebound to a namespace whose LayerNorm is that same
    wrong one. The grader imports `nn` again before each test: the LayerNorm test fails as it
    does for the mistake alone."""
    answers = solution_answers(LAB)
    answers["l3_layer_norm"] = (
        UNBIASED_LAYER_NORM
        + """

class _AgreeingLayerNorm(torch.nn.LayerNorm):
    def forward(self, x):
        return layer_norm(x, self.weight, self.bias, self.eps)


class nn:
    LayerNorm = _AgreeingLayerNorm
    RMSNorm = torch.nn.RMSNorm
"""
    )
    return fill(nb, answers)


expected = {
    "alternatives": {
        "l3_test_layer_norm": 3.0,
        "l3_test_rms_norm": 3.0,
        "l3_test_mean_fraction": 2.0,
        "l3_test_norm_inputs": 2.0,
    },
    "mistake": {
        "l3_test_layer_norm": 0.0,
        "l3_test_rms_norm": 3.0,
        "l3_test_mean_fraction": 2.0,
        "l3_test_norm_inputs": 2.0,
    },
    "refpatch": {
        "l3_test_layer_norm": 0.0,
        "l3_test_rms_norm": 3.0,
        "l3_test_mean_fraction": 2.0,
        "l3_test_norm_inputs": 2.0,
    },
}


def delegate(nb):
    """Both norms handed to PyTorch's (functional layer_norm; an nn.RMSNorm module, which calls
    the functional rms_norm): Parts 1 and 2 score 0. Parts 3 and 4, written by hand, keep their
    points (their tests do not declare the norms off limits)."""
    answers = solution_answers(LAB)
    answers["l3_layer_norm"] = """
def layer_norm(x, weight=None, bias=None, eps=1e-5):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps)
"""
    answers["l3_rms_norm"] = """
def rms_norm(x, weight=None, eps=1e-6):
    y = nn.RMSNorm(x.shape[-1], eps=eps, elementwise_affine=False)(x)
    return y if weight is None else y * weight
"""
    return fill(nb, answers)


expected["delegate"] = {
    "l3_test_layer_norm": 0.0,
    "l3_test_rms_norm": 0.0,
    "l3_test_mean_fraction": 2.0,
    "l3_test_norm_inputs": 2.0,
}


def mistakes(nb):
    """One catalogued slip per norm: LayerNorm with eps outside the square root (only a hidden
    test, with a large eps, sees it: the feedback names the slip under the neutral message),
    RMSNorm dividing the squares by n - 1 (the visible tests see it). Both parts score 0;
    Parts 3 and 4, whose tests use torch's norms, keep their points."""
    answers = solution_answers(LAB)
    answers["l3_layer_norm"] = replaced(
        answers["l3_layer_norm"], "torch.sqrt(var + eps)", "(torch.sqrt(var) + eps)"
    )
    answers["l3_rms_norm"] = replaced(
        answers["l3_rms_norm"],
        "x.pow(2).mean(dim=-1, keepdim=True)",
        "x.pow(2).sum(dim=-1, keepdim=True) / (x.shape[-1] - 1)",
    )
    return fill(nb, answers)


expected["mistakes"] = {
    "l3_test_layer_norm": 0.0,
    "l3_test_rms_norm": 0.0,
    "l3_test_mean_fraction": 2.0,
    "l3_test_norm_inputs": 2.0,
}
slips_only_hidden_tests_find = {"l3_test_layer_norm"}  # Validate passes it; the feedback names it
slips = {
    "l3_test_layer_norm": "eps added outside the square root: it goes inside, sqrt(var + eps)?",
    "l3_test_rms_norm": "the squares divided by n - 1: the mean divides by n?",
}


def cascade(nb):
    """A slip in Part 2 (the squares divided by n - 1) beside the solution's other answers:
    Part 2 loses its points and its feedback names the slip; Part 3 and Part 4, whose tests use
    torch's norms, keep theirs."""
    answers = solution_answers(LAB)
    answers["l3_rms_norm"] = replaced(
        answers["l3_rms_norm"],
        "x.pow(2).mean(dim=-1, keepdim=True)",
        "x.pow(2).sum(dim=-1, keepdim=True) / (x.shape[-1] - 1)",
    )
    return fill(nb, answers)


def combinations(nb):
    """LayerNorm that applies the weight and the bias only when both are given: right with
    both and with neither (every visible input), wrong with a weight alone or a bias alone,
    which only hidden inputs try. Only Part 1 loses its points."""
    answers = solution_answers(LAB)
    answers["l3_layer_norm"] = replaced(
        answers["l3_layer_norm"],
        "    if weight is not None:\n        y = y * weight\n    if bias is not None:\n"
        "        y = y + bias\n",
        "    if weight is not None and bias is not None:\n        y = y * weight + bias\n",
    )
    return fill(nb, answers)


def numpy(nb):
    """Norms computed in float64 and returned so, and the fraction as a float64 tensor: nothing
    the prompt rules out. Full marks."""
    answers = solution_answers(LAB)
    answers["l3_mean_fraction"] = replaced(
        answers["l3_mean_fraction"],
        "return y.mean(dim=-1) / y.pow(2).mean(dim=-1).sqrt()",
        "y = y.double()\n    return y.mean(dim=-1) / y.pow(2).mean(dim=-1).sqrt()",
    )
    return fill(nb, answers)


expected["cascade"] = {
    "l3_test_layer_norm": 3.0,
    "l3_test_rms_norm": 0.0,
    "l3_test_mean_fraction": 2.0,
    "l3_test_norm_inputs": 2.0,
}
expected["combinations"] = {
    "l3_test_layer_norm": 0.0,
    "l3_test_rms_norm": 3.0,
    "l3_test_mean_fraction": 2.0,
    "l3_test_norm_inputs": 2.0,
}
expected["numpy"] = {
    "l3_test_layer_norm": 3.0,
    "l3_test_rms_norm": 3.0,
    "l3_test_mean_fraction": 2.0,
    "l3_test_norm_inputs": 2.0,
}
named = {"cascade": {"l3_test_rms_norm": slips["l3_test_rms_norm"]}}

more = ("skip_first",)
# graded in the sandbox only: in one process (tests/test_lab_inputs.py) the setup's model is
# there to use
sandboxed_only = ("outside_the_room",)


def skip_first(nb):
    """norm_inputs as hidden_states[1:], the slip the prompt warns about: Part 4 loses its
    points and its feedback names the slip; the other parts keep theirs."""
    answers = solution_answers(LAB)
    answers["l3_norm_inputs"] = """
def norm_inputs(hidden_states):
    return torch.stack(hidden_states[1:])[:, 0]
"""
    return fill(nb, answers)


def outside_the_room(nb):
    """norm_inputs that runs the setup's model, which the room does not hold: Part 4 loses its
    points, and its feedback says that `model` is not in the room while graded, not a bare
    NameError."""
    answers = solution_answers(LAB)
    answers["l3_norm_inputs"] = """
def norm_inputs(hidden_states):
    with torch.no_grad():
        states = model(input_ids, output_hidden_states=True).hidden_states
    return torch.stack(states[:-1])[:, 0]
"""
    return fill(nb, answers)


expected["skip_first"] = {
    "l3_test_layer_norm": 3.0,
    "l3_test_rms_norm": 3.0,
    "l3_test_mean_fraction": 2.0,
    "l3_test_norm_inputs": 0.0,
}
expected["outside_the_room"] = dict(expected["skip_first"])
named["skip_first"] = {
    "l3_test_norm_inputs": (
        "hidden_states[1:] taken: entry i is the input of block i, and the last entry comes "
        "after the final norm?"
    )
}
# what the error of a part says (case -> grade_id -> text)
said = {
    "outside_the_room": {
        "l3_test_norm_inputs": "model is not in the room while graded: the room holds only your "
        "own code and, of the setup, torch, nn, hidden_states"
    }
}
