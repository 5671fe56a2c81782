"""LM10-L1, count the parameters: the slips of its parts (grading/slips/__init__.py)."""


def _gpt2_block():
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


def _attention():
    def per_query(w, d, heads, kv_heads, head_dim):
        assert kv_heads != heads
        return 4 * d * heads * head_dim

    def queries_d(w, d, heads, kv_heads, head_dim):
        assert heads * head_dim != d
        return 2 * d * d + 2 * d * kv_heads * head_dim

    def head_dim_from_d(w, d, heads, kv_heads, head_dim):
        assert d // heads != head_dim
        return 2 * d * heads * (d // heads) + 2 * d * kv_heads * (d // heads)

    return {
        "keys and values given a column per query head: they have kv_heads x head_dim?": per_query,
        "keys and values as d x d matrices: they have kv_heads x head_dim columns?": (
            lambda w, d, heads, kv_heads, head_dim: 2 * d * heads * head_dim + 2 * d * d
        ),
        "only one of the key and value projections counted?": (
            lambda w, d, heads, kv_heads, head_dim: w - d * kv_heads * head_dim
        ),
        "queries and output as d x d: they have heads x head_dim columns, and heads x head_dim "
        "need not be d?": queries_d,
        "head_dim taken as d // heads: the test gives head_dim, and heads x head_dim need not "
        "be d?": head_dim_from_d,
    }


def _count():
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

    def kv_bias_as_queries(w, config):
        heads, kv = config["heads"], config.get("kv_heads", config["heads"])
        assert config["bias"] and kv != heads
        return w + config["layers"] * 2 * (heads - kv) * (config["d"] // heads)

    return {
        "the output head counted although the config ties it to the token table?": tied_twice,
        "the output head left out although the config does not tie it?": untied_once,
        "the final norm left out?": final_norm,
        "kv_heads ignored: keys and values as wide as the queries?": kv_ignored,
        "key and value biases as wide as the queries: with fewer key-value heads they have "
        "kv_heads x head_dim entries each?": kv_bias_as_queries,
    }


PARTS = {
    "l1_test_gpt2_block": _gpt2_block(),
    "l1_test_gpt2_model": _gpt2_model(),
    "l1_test_attention": _attention(),
    "l1_test_count": _count(),
}
