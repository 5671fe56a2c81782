"""LM10-L2, compare attention variants: the slips of its parts (grading/slips/__init__.py)."""


def _attention():
    def mha(w, d, heads, kv_heads):
        assert kv_heads != heads
        return 4 * d * d

    return {
        "keys and values as d x d whatever kv_heads: they have kv_heads x head_dim columns?": mha,
        "keys and values given kv_heads x d columns, not kv_heads x head_dim?": (
            lambda w, d, heads, kv_heads: 2 * d * d + 2 * d * kv_heads * d
        ),
    }


def _cache():
    def numbers(w, layers, kv_heads, head_dim, bytes_per_number=2):
        assert bytes_per_number > 1
        return w // bytes_per_number

    def one_layer(w, layers, kv_heads, head_dim, bytes_per_number=2):
        assert layers > 1
        return w // layers

    def two_bytes(w, layers, kv_heads, head_dim, bytes_per_number=2):
        assert bytes_per_number != 2
        return w // bytes_per_number * 2

    return {
        "numbers counted, not bytes: times bytes_per_number?": numbers,
        "bytes_per_number ignored: 2 bytes a number whatever it is given?": two_bytes,
        "keys only: the cache holds the values too?": lambda w, **inputs: w // 2,
        "one layer only: every layer keeps its own keys and values?": one_layer,
        "bits, not bytes?": lambda w, **inputs: w * 8,
    }


def _flops():
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


def _serving():
    def rounded_up(w, gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request):
        free = max(gpu_bytes - weight_bytes, 0)
        per = cache_bytes_per_token * tokens_per_request
        assert free % per
        return -(-free // per)

    def truncated(w, gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request):
        share = int((gpu_bytes - weight_bytes) / (cache_bytes_per_token * tokens_per_request))
        assert share < 0
        return share

    def floored(w, gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request):
        share = (gpu_bytes - weight_bytes) // (cache_bytes_per_token * tokens_per_request)
        assert share < 0
        return share

    return {
        "rounded up: only whole requests fit?": rounded_up,
        "a negative count when the weights alone do not fit (int() of a negative share): never "
        "below 0?": truncated,
        "a negative count when the weights alone do not fit (floor division of a negative free "
        "memory): never below 0?": floored,
        "the weights' memory not taken off the GPU's?": (
            lambda w, gpu_bytes, weight_bytes, cache_bytes_per_token, tokens_per_request: (
                gpu_bytes // (cache_bytes_per_token * tokens_per_request)
            )
        ),
    }


PARTS = {
    "l2_test_attention": _attention(),
    "l2_test_cache": _cache(),
    "l2_test_flops": _flops(),
    "l2_test_serving": _serving(),
}
