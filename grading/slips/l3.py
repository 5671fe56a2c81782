"""LM10-L3, normalisation: the slips of its parts (grading/slips/__init__.py)."""


def _f64(t):
    return t.detach().double()


def _normed(x, weight, bias, eps, unbiased=False, outside=False, centred=True):
    """x normalised over its last dimension in float64, as LayerNorm (centred) or RMSNorm,
    with a slip or two: the variance over n - 1, eps outside the square root."""
    x = _f64(x)
    mean = x.mean(-1, keepdim=True) if centred else 0.0
    if centred:
        var = x.var(-1, keepdim=True, unbiased=unbiased)
    else:
        var = x.pow(2).sum(-1, keepdim=True) / (x.shape[-1] - (1 if unbiased else 0))
    y = (x - mean) / (var.sqrt() + eps if outside else (var + eps).sqrt())
    if weight is not None:
        y = y * _f64(weight)
    if bias is not None:
        y = y + _f64(bias)
    return y


def _layer_norm():
    return {
        "the variance divided by n - 1: LayerNorm divides by n?": (
            lambda w, x, weight, bias, eps: _normed(x, weight, bias, eps, unbiased=True)
        ),
        "eps added outside the square root: it goes inside, sqrt(var + eps)?": (
            lambda w, x, weight, bias, eps: _normed(x, weight, bias, eps, outside=True)
        ),
        "the shift (bias) left out?": lambda w, x, weight, bias, eps: _normed(x, weight, None, eps),
        "the scale (weight) left out?": lambda w, x, weight, bias, eps: _normed(x, None, bias, eps),
    }


def _rms_norm():
    return {
        "the mean subtracted: RMSNorm divides x itself by its root mean square?": (
            lambda w, x, weight, eps: _normed(x, weight, None, eps)
        ),
        "eps added outside the square root: it goes inside, sqrt(mean(x^2) + eps)?": (
            lambda w, x, weight, eps: _normed(x, weight, None, eps, outside=True, centred=False)
        ),
        "the squares divided by n - 1: the mean divides by n?": (
            lambda w, x, weight, eps: _normed(x, weight, None, eps, unbiased=True, centred=False)
        ),
        "the scale (weight) left out?": lambda w, x, weight, eps: _normed(
            x, None, None, eps, centred=False
        ),
    }


def _norm_inputs():
    import torch

    def shifted(w, last):
        # hidden_states[1:] is the inputs of blocks 1 .. L-1 (w[1:]) and then the last entry,
        # which comes after the final norm: `last`, hidden_states[-1] ([1, T, width])
        return torch.cat([w[1:], last[0][None].to(w.dtype)])

    return {
        "hidden_states[1:] taken: entry i is the input of block i, and the last entry comes "
        "after the final norm?": shifted,
    }


NORM_INPUTS = _norm_inputs()

PARTS = {
    "l3_test_layer_norm": _layer_norm(),
    "l3_test_rms_norm": _rms_norm(),
    "l3_test_norm_inputs": NORM_INPUTS,
}
