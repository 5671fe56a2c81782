"""The common slips of the labs' answers, recognised from the wrong value they give.

A lab's test, when an answer is wrong, asks `hint(part, got, want, **inputs)`: each slip
catalogued for that part turns the right value and the test's inputs into the value the slip
would give (a count without the biases, a cache in numbers instead of bytes, a variance over
n - 1); if the student's value is one of them, the hint names that slip in one sentence,

    Likely slip: every bias left out (3d + d in attention, 4d + d in the MLP)?

and the test adds it to its failure message. A right value gets no hint, a wrong one that is
no catalogued slip the plain message. The sentences are fixed text, with nothing of a test's
inputs in them, so the grader keeps them in the feedback even when a hidden test found the slip
(grading/course_preprocessors.py: StripHiddenTests), and the autograde report counts them
(`named`).
"""

import math
import sys

PREFIX = "Likely slip: "


def _f64(t):
    return t.detach().double()


# ------------------------------------------------------------------------------- the slips
# Each rule: (want, **the test's inputs) -> the value the slip gives. A rule whose inputs do not
# apply raises (KeyError, TypeError, ZeroDivisionError...) and is skipped.


def _block():
    return {
        "every bias left out (3d + d in attention, 4d + d in the MLP)?": lambda w, d: w - 9 * d,
        "every bias counted twice?": lambda w, d: w + 9 * d,
        "both LayerNorms left out (a scale and a shift of width d each)?": lambda w, d: w - 4 * d,
        "one LayerNorm instead of two, or the LayerNorms without their shift?": (
            lambda w, d: w - 2 * d
        ),
        "the fused query, key and value bias (3d) left out?": lambda w, d: w - 3 * d,
        "an output bias (d, after attention or after the MLP) left out?": lambda w, d: w - d,
    }


def _gpt2_model():
    return {
        "the output head counted although it is tied to the token table?": (
            lambda w, d, layers, vocab, positions: w + vocab * d
        ),
        "the position table (positions x d) left out?": (
            lambda w, d, layers, vocab, positions: w - positions * d
        ),
        "the final LayerNorm (2d) left out?": lambda w, d, layers, vocab, positions: w - 2 * d,
        "a final LayerNorm per block, not one for the model?": (
            lambda w, d, layers, vocab, positions: w + 2 * d * (layers - 1)
        ),
    }


def _l1_attention():
    def per_query(w, d, heads, kv_heads, head_dim):
        assert kv_heads != heads
        return 4 * d * heads * head_dim

    return {
        "keys and values given a column per query head: they have kv_heads x head_dim?": per_query,
        "keys and values as d x d matrices: they have kv_heads x head_dim columns?": (
            lambda w, d, heads, kv_heads, head_dim: 2 * d * heads * head_dim + 2 * d * d
        ),
        "only one of the key and value projections counted?": (
            lambda w, d, heads, kv_heads, head_dim: w - d * kv_heads * head_dim
        ),
    }


def _l1_count():
    def tied_twice(w, config):
        assert config["tied"]
        return w + config["vocab"] * config["d"]

    def untied_once(w, config):
        assert not config["tied"]
        return w - config["vocab"] * config["d"]

    def final_norm(w, config):
        return w - (2 if config["norm"] == "layer" else 1) * config["d"]

    def kv_ignored(w, config):
        heads, kv = config["heads"], config.get("kv_heads", config["heads"])
        assert kv != heads
        return w + config["layers"] * 2 * config["d"] * (heads - kv) * (config["d"] // heads)

    return {
        "the output head counted although the config ties it to the token table?": tied_twice,
        "the output head left out although the config does not tie it?": untied_once,
        "the final norm left out?": final_norm,
        "kv_heads ignored: keys and values as wide as the queries?": kv_ignored,
    }


def _l2_attention():
    def mha(w, d, heads, kv_heads):
        assert kv_heads != heads
        return 4 * d * d

    return {
        "keys and values as d x d whatever kv_heads: they have kv_heads x head_dim columns?": mha,
        "keys and values given kv_heads x d columns, not kv_heads x head_dim?": (
            lambda w, d, heads, kv_heads: 2 * d * d + 2 * d * kv_heads * d
        ),
    }


def _l2_cache():
    def numbers(w, layers, kv_heads, head_dim, bytes_per_number=2):
        assert bytes_per_number > 1
        return w // bytes_per_number

    def one_layer(w, layers, kv_heads, head_dim, bytes_per_number=2):
        assert layers > 1
        return w // layers

    return {
        "numbers counted, not bytes: times bytes_per_number?": numbers,
        "keys only: the cache holds the values too?": lambda w, **inputs: w // 2,
        "one layer only: every layer keeps its own keys and values?": one_layer,
        "bits, not bytes?": lambda w, **inputs: w * 8,
    }


def _l2_flops():
    def scores_per_kv(w, d, heads, kv_heads, layers, context):
        assert kv_heads != heads
        hd = d // heads
        return w - layers * 4 * (heads - kv_heads) * hd * context

    def one_product(w, d, heads, kv_heads, layers, context):
        return w - layers * 2 * heads * (d // heads) * context

    def no_projections(w, d, heads, kv_heads, layers, context):
        return layers * 4 * heads * (d // heads) * context

    def one_layer(w, d, heads, kv_heads, layers, context):
        assert layers > 1
        return w // layers

    return {
        "a multiply-add counted as one FLOP: it is two?": lambda w, **inputs: w // 2,
        "scores counted per key-value head: every query head scores every position?": (
            scores_per_kv
        ),
        "one of the two products with the context (scores, weighted values) left out?": (
            one_product
        ),
        "the four projections left out?": no_projections,
        "one layer only?": one_layer,
    }


def _l2_serving():
    def rounded_up(w, gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request):
        free = max(gpu_bytes - weight_bytes, 0)
        per = cache_bytes_per_token * tokens_per_request
        assert free % per
        return -(-free // per)

    return {
        "rounded up: only whole requests fit?": rounded_up,
        "the weights' memory not taken off the GPU's?": (
            lambda w, gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request: (
                gpu_bytes // (cache_bytes_per_token * tokens_per_request)
            )
        ),
    }


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


def _l3_layer_norm():
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


def _l3_rms_norm():
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


def _l6_ffn_width():
    def rounded_down(w, d, multiple_of, multiplier=None):
        hidden = int(2 * (4 * d) / 3)
        if multiplier is not None:
            hidden = int(multiplier * hidden)
        return multiple_of * (hidden // multiple_of)

    def multiplier_last(w, d, multiple_of, multiplier=None):
        assert multiplier is not None
        hidden = int(2 * (4 * d) / 3)
        return int(multiplier * multiple_of * math.ceil(hidden / multiple_of))

    def no_two_thirds(w, d, multiple_of, multiplier=None):
        hidden = 4 * d if multiplier is None else int(multiplier * 4 * d)
        return multiple_of * math.ceil(hidden / multiple_of)

    return {
        "rounded down: the width rounds up to the next multiple?": rounded_down,
        "the multiplier applied after rounding: it comes before?": multiplier_last,
        "4d kept: SwiGLU takes two thirds of it?": no_two_thirds,
    }


def _moe_terms(config):
    d = config.hidden_size
    moe_layers = config.num_hidden_layers - config.first_k_dense_replace
    expert = 3 * d * config.moe_intermediate_size
    return {
        "shared": moe_layers * config.n_shared_experts * expert,
        "router": moe_layers * config.n_routed_experts * d,
        "dense_as_moe": config.first_k_dense_replace
        * (
            config.n_routed_experts * expert
            + config.n_shared_experts * expert
            + config.n_routed_experts * d
            - 3 * d * config.intermediate_size
        ),
        "tables": config.vocab_size * d,
    }


def _l6_moe():
    def without(term):
        def rule(w, config):
            t = _moe_terms(config)
            assert t[term]
            return w[0] - t[term], w[1] - t[term]

        return rule

    def all_active(w, config):
        return w[0], w[0]

    def dense_as_moe(w, config):
        t = _moe_terms(config)
        assert t["dense_as_moe"]
        return w[0] + t["dense_as_moe"], None

    def tables_twice(w, config):
        assert config.tie_word_embeddings
        t = _moe_terms(config)
        return w[0] + t["tables"], w[1] + t["tables"]

    return {
        "the shared experts left out?": without("shared"),
        "the router (one d-vector per routed expert and layer) left out?": without("router"),
        "active counts every routed expert: a token uses num_experts_per_tok of them?": (
            all_active
        ),
        "the first dense layers counted as mixture layers?": dense_as_moe,
        "the tied output head counted as a second table?": tables_twice,
    }


def _l6_cache():
    def numbers(w, config, kv_bytes=2):
        assert kv_bytes > 1
        return w // kv_bytes

    def keys_only(w, config, kv_bytes=2):
        assert not getattr(config, "kv_lora_rank", None)
        return w // 2

    def latent_without_rope(w, config, kv_bytes=2):
        assert getattr(config, "kv_lora_rank", None)
        return w - config.num_hidden_layers * config.qk_rope_head_dim * kv_bytes

    def latent_as_heads(w, config, kv_bytes=2):
        assert getattr(config, "kv_lora_rank", None)
        heads = config.num_key_value_heads or config.num_attention_heads
        width = config.qk_nope_head_dim + config.qk_rope_head_dim
        return config.num_hidden_layers * heads * (width + config.v_head_dim) * kv_bytes

    def query_heads(w, config, kv_bytes=2):
        assert not getattr(config, "kv_lora_rank", None)
        kv = config.num_key_value_heads or config.num_attention_heads
        assert kv != config.num_attention_heads
        return w // kv * config.num_attention_heads

    return {
        "numbers counted, not bytes: times kv_bytes?": numbers,
        "keys only: the cache holds the values too?": keys_only,
        "the latent cache without its rotary part (qk_rope_head_dim)?": latent_without_rope,
        "latent attention cached as full keys and values: it caches the latent vector?": (
            latent_as_heads
        ),
        "a cache per query head: only the key-value heads are cached?": query_heads,
    }


def _l6_window():
    def _kinds(config):
        kinds = getattr(config, "layer_types", None)
        window = getattr(config, "sliding_window", None)
        return kinds or ["sliding_attention" if window else "full_attention"] * (
            config.num_hidden_layers
        )

    def held(config, tokens, keep):
        window = getattr(config, "sliding_window", None)
        return sum(
            keep(tokens, window) if kind == "sliding_attention" and window else tokens
            for kind in _kinds(config)
        )

    def per_layer(w, config, tokens):
        total = held(config, tokens, lambda t, win: min(t, win - 1))
        assert total
        return w // total

    def whole_window(w, config, tokens, kv_bytes=2):
        assert getattr(config, "sliding_window", None)
        return held(config, tokens, lambda t, win: min(t, win)) * per_layer(w, config, tokens)

    def every_layer_slides(w, config, tokens, kv_bytes=2):
        window = getattr(config, "sliding_window", None)
        assert window and "full_attention" in _kinds(config)
        return config.num_hidden_layers * min(tokens, window - 1) * per_layer(w, config, tokens)

    def no_window(w, config, tokens, kv_bytes=2):
        assert getattr(config, "sliding_window", None)
        return config.num_hidden_layers * tokens * per_layer(w, config, tokens)

    return {
        "a window of sliding_window tokens kept: the current token is one of them, so "
        "sliding_window - 1 earlier ones are kept?": whole_window,
        "every layer made to slide: layer_types says which do?": every_layer_slides,
        "the window ignored: sliding layers keep only the last tokens?": no_window,
    }


def _halves(x):
    half = x.shape[-1] // 2
    return x[..., :half], x[..., half:]


def _rotary_tables(positions, head_dim, base):
    import torch

    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = positions.double()[:, None] * theta[None, :]  # [T, d/2]
    return angles.cos(), angles.sin()


def _rotated(x, cos, sin, sign=1.0):
    """x rotated pair by pair in the rotate-half layout (cos, sin [..., d])."""
    import torch

    x1, x2 = _halves(_f64(x))
    return _f64(x) * _f64(cos) + sign * torch.cat([-x2, x1], dim=-1) * _f64(sin)


def _side_by_side(x, positions, base):
    """x rotated with pairs (2i, 2i + 1), the layout of Meta's own checkpoints."""
    import torch

    cos, sin = _rotary_tables(positions, x.shape[-1], base)
    even, odd = _f64(x)[..., 0::2], _f64(x)[..., 1::2]
    return torch.stack([even * cos - odd * sin, odd * cos + even * sin], dim=-1).flatten(-2)


def _l4_angles():
    import torch

    def exponent_i(w, head_dim, base):
        return base ** (-torch.arange(head_dim // 2, dtype=torch.float64) / head_dim)

    def reversed_order(w, head_dim, base):
        return _f64(w).flip(-1)

    def interleaved(w, table):
        first, _ = _halves(_f64(w))
        return first.repeat_interleave(2, dim=-1)

    return {
        "pair i given the exponent i/d: it is 2i/d?": (exponent_i),
        "the frequencies in reverse order: pair 0 turns fastest, at one radian per position?": (
            reversed_order
        ),
        "each angle repeated side by side (a, a, b, b, ...): the rotate-half layout repeats the "
        "d/2 angles as [angles, angles]?": interleaved,
    }


def _l4_rotate():
    return {
        "rotated the wrong way: rotate_half sends the halves (x1, x2) to (-x2, x1)?": (
            lambda w, x, cos, sin: _rotated(x, cos, sin, sign=-1.0)
        ),
        "the sin term left out?": lambda w, x, cos, sin: _f64(x) * _f64(cos),
    }


def _l4_periods():
    return {
        "the periods without the factor 2 pi: a full turn is 2 pi radians?": (
            lambda w, **inputs: _f64(w) / (2 * math.pi)
        ),
        "the inverse frequencies returned: a period is 2 pi / theta?": (
            lambda w, **inputs: 2 * math.pi / _f64(w)
        ),
    }


def _l5_expand_kv():
    return {
        "the stack of key-value heads tiled (0, 1, 0, 1, ...): query head h reads head "
        "h // n_rep, each head repeated in place?": lambda w, kv, n_rep: kv.repeat(1, n_rep, 1, 1),
    }


def _l5_rope():
    def other_way(w, x, positions, base):
        import torch

        cos, sin = _rotary_tables(positions, x.shape[-1], base)
        return _rotated(x, torch.cat([cos, cos], -1), torch.cat([sin, sin], -1), sign=-1.0)

    return {
        "pairs side by side (2i, 2i + 1): Llama's weights pair coordinate i with i + head_dim/2?": (
            lambda w, x, positions, base: _side_by_side(x, positions, base)
        ),
        "rotated the wrong way: the second half enters with a minus sign, (-x2, x1)?": other_way,
    }


CATALOGUE = {
    "l1_test_gpt2_block": _block(),
    "l1_test_gpt2_model": _gpt2_model(),
    "l1_test_attention": _l1_attention(),
    "l1_test_count": _l1_count(),
    "l2_test_attention": _l2_attention(),
    "l2_test_cache": _l2_cache(),
    "l2_test_flops": _l2_flops(),
    "l2_test_serving": _l2_serving(),
    "l3_test_layer_norm": _l3_layer_norm(),
    "l3_test_rms_norm": _l3_rms_norm(),
    "l4_test_angles": _l4_angles(),
    "l4_test_rotate": _l4_rotate(),
    "l4_test_periods": _l4_periods(),
    "l5_test_expand_kv": _l5_expand_kv(),
    "l5_test_rope": _l5_rope(),
    "l6_test_ffn_width": _l6_ffn_width(),
    "l6_test_moe": _l6_moe(),
    "l6_test_cache": _l6_cache(),
    "l6_test_window": _l6_window(),
}


# ----------------------------------------------------------------------------- recognition


def _same(got, value):
    """Whether `got` is the slip's `value`: integers exactly, tensors to float32 rounding,
    tuples entry by entry (None in a slip's tuple: any)."""
    if value is None:  # a slip that says nothing about this entry
        return True
    if type(value) is tuple:
        return (
            type(got) is tuple
            and len(got) == len(value)
            and all(_same(g, v) for g, v in zip(got, value, strict=True))
        )
    if type(value) is int:
        return type(got) is int and got == value
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if not isinstance(got, torch.Tensor) or got.shape != value.shape:
            return False
        if not got.is_floating_point():
            return False
        err = (_f64(got) - value.double()).abs().max().item()
        return err <= 1e-4 * (1.0 + value.double().abs().max().item())
    return False


def _apart(got, value, want):
    """Whether the slip's value is told apart from the right one at `got`: other numbers, or
    tensors that `got` is far closer to than to the right value."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        slip = (_f64(got) - value.double()).abs().max().item()
        right = (_f64(got) - _f64(want)).abs().max().item()
        return 4 * slip < right
    return not _same(want, value)


def hint(part, got, want, **inputs):
    """A line "\nLikely slip: <sentence>" for each slip of `part` whose value is `got`, given the
    right value `want` and the test's inputs; "" for the right value or an unknown mistake. A
    slip is named only where its value is told apart from the right one."""
    if part not in CATALOGUE:
        raise KeyError(f"no slips catalogued for {part!r}; parts: {sorted(CATALOGUE)}")
    if type(got) is type(want) and type(want) in (int, tuple) and got == want:
        return ""
    found = []
    for sentence, rule in CATALOGUE[part].items():
        try:
            value = rule(want, **inputs)
        except (AssertionError, ArithmeticError, AttributeError, KeyError, TypeError):
            continue  # the slip does not apply to these inputs
        if _same(got, value) and _apart(got, value, want):
            found.append(f"\n{PREFIX}{sentence}")  # two slips may give the same value
    return "".join(found)


def sentences(part):
    """Every sentence catalogued for `part` (none for a part without a catalogue)."""
    return set(CATALOGUE.get(part, {}))


def named(text, part=None):
    """The catalogued sentences an output's `text` names (of `part`, or of any part), in
    order, each once."""
    known = sentences(part) if part else {s for p in CATALOGUE for s in CATALOGUE[p]}
    found = []
    for line in str(text).split("\n"):
        line = line.strip()
        sentence = line[len(PREFIX) :]
        if line.startswith(PREFIX) and sentence in known and sentence not in found:
            found.append(sentence)
    return found
