"""LM10-L6, count what is stored and what is used: the slips of its parts
(grading/slips/__init__.py)."""

import math


def _ffn_width():
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


def _moe():
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

    def active_without_input_table(w, config):
        return w[0], w[1] - _moe_terms(config)["tables"]

    def active_without_tables(w, config):
        assert not config.tie_word_embeddings  # tied: one table, the slip above
        return w[0], w[1] - 2 * _moe_terms(config)["tables"]

    return {
        "the shared experts left out?": without("shared"),
        "the router (one d-vector per routed expert and layer) left out?": without("router"),
        "active counts every routed expert: a token uses num_experts_per_tok of them?": (
            all_active
        ),
        "the first dense layers counted as mixture layers?": dense_as_moe,
        "the tied output head counted as a second table?": tables_twice,
        "the input table left out of the active count: the lab counts both token tables in full?": (
            active_without_input_table
        ),
        "both token tables left out of the active count: the lab counts them in full?": (
            active_without_tables
        ),
    }


def _cache():
    def numbers(w, config, kv_bytes=2):
        assert kv_bytes > 1
        return w // kv_bytes

    def bytes_ignored(w, config, kv_bytes=2):
        assert kv_bytes != 2
        return w // kv_bytes * 2

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
        "kv_bytes ignored: 2 bytes a number whatever it is given?": bytes_ignored,
        "keys only: the cache holds the values too?": keys_only,
        "the latent cache without its rotary part (qk_rope_head_dim)?": latent_without_rope,
        "latent attention cached as full keys and values: it caches the latent vector?": (
            latent_as_heads
        ),
        "a cache per query head: only the key-value heads are cached?": query_heads,
    }


def _window():
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


PARTS = {
    "l6_test_ffn_width": _ffn_width(),
    "l6_test_moe": _moe(),
    "l6_test_cache": _cache(),
    "l6_test_window": _window(),
}
