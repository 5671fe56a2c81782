# ruff: noqa: E501 (the answers below are students' code, laid out as they wrote it)
"""A synthetic class for the similarity report (grading/instructor/similarity.py): honest students
who wrote their answers independently, and planted copies of some of them, disguised.

Honest answers: for every answer cell of L1, L2 and L6 five methods (the model solution, the
lab's `alternatives` case, and three more written here: closed forms, loops, helpers, dicts,
counters), each a correct answer. Honest student i = 5a + b (i < 25) uses method (b + p a) mod 5
for part p, so two honest students share the method of at most one part (the rows of an affine
plane over five elements meet at most once), and each writes it in their own style: their own
names, comments or none. Two honest students may therefore converge on one part, as real
students do on short formulas; the rest of their code is their own.

Copies, each of another honest student (the original), by kind of disguise (DISGUISES):
verbatim; renamed (every local name); reformatted and commented (the code re-laid out by
ast.unparse, two-space indents, a comment before every statement); reordered (functions of a
cell and independent statements of a function in another order); one function changed (renamed,
and the largest part rewritten with another method); all of these at once; padded (renamed, and
a statement that does nothing after every statement); and a copy of a copy (renamed, then that
copy reordered, reformatted and renamed again by a third student).
"""

import ast
import copy
import io
import re
import tokenize

import nbformat

from . import ROOT, answer_cells, fill, solution_answers
from .l1 import alternatives as l1_alternatives
from .l2 import alternatives as l2_alternatives
from .l6 import alternatives as l6_alternatives

STUB = re.compile(r"[ \t]*# YOUR CODE HERE\n[ \t]*raise NotImplementedError\(\)\n?")
METHODS = 5
HONEST = METHODS * METHODS  # the affine plane's points: 25 honest students at most

# Three more methods per answer cell: the bodies that replace the release's stubs, in order.
MORE = {
    "LM10-L1": {
        "l1_gpt2_block": [
            [
                "    attn = 4 * d * d + 4 * d  # qkv + output, weights and biases\n"
                "    mlp = 8 * d * d + 5 * d\n"
                "    ln = 4 * d\n"
                "    return attn + mlp + ln\n"
            ],
            [
                "    weights = 12 * d ** 2\n"
                "    biases = 3 * d + d + 4 * d + d\n"
                "    layer_norms = 2 * (d + d)\n"
                "    return weights + biases + layer_norms\n"
            ],
            [
                "    total = 0\n"
                "    for n_in, n_out in [(d, 3 * d), (d, d), (d, 4 * d), (4 * d, d)]:\n"
                "        total += n_in * n_out  # weights\n"
                "        total += n_out  # biases\n"
                "    for _ in range(2):\n"
                "        total += 2 * d  # gain and shift of a LayerNorm\n"
                "    return total\n"
            ],
        ],
        "l1_gpt2_model": [
            ["    return gpt2_block(d) * layers + (vocab + positions) * d + 2 * d\n"],
            [
                "    embeddings = vocab * d\n"
                "    position_table = positions * d\n"
                "    blocks = [gpt2_block(d) for _ in range(layers)]\n"
                "    return embeddings + position_table + sum(blocks) + 2 * d\n"
            ],
            [
                "    per_block = gpt2_block(d)\n"
                "    final_layer_norm = d + d\n"
                "    count = d * (vocab + positions)\n"
                "    count += layers * per_block\n"
                "    count += final_layer_norm\n"
                "    return count\n"
            ],
        ],
        "l1_attention": [
            ["    return d * head_dim * (2 * heads + 2 * kv_heads)\n"],
            [
                "    q = d * heads * head_dim\n"
                "    k = d * kv_heads * head_dim\n"
                "    v = d * kv_heads * head_dim\n"
                "    o = heads * head_dim * d\n"
                "    return q + k + v + o\n"
            ],
            [
                '    shapes = {"q": (d, heads * head_dim), "k": (d, kv_heads * head_dim),\n'
                '              "v": (d, kv_heads * head_dim), "o": (heads * head_dim, d)}\n'
                "    return sum(rows * cols for rows, cols in shapes.values())\n"
            ],
        ],
        "l1_count": [
            [
                '    ffn_kind, norm_kind = config["ffn"], config["norm"]\n'
                '    if ffn_kind not in {"gelu", "swiglu"} or norm_kind not in {"layer", "rms"}:\n'
                '        raise ValueError(f"unsupported: ffn={ffn_kind!r}, norm={norm_kind!r}")\n'
                '    d = config["d"]\n'
                '    h = config["heads"]\n'
                '    kv = config.get("kv_heads") or h\n'
                "    hd = d // h\n"
                "    attn = d * hd * (2 * h + 2 * kv)\n"
                '    if config["bias"]:\n'
                "        attn += hd * (h + 2 * kv) + d\n"
                '    if ffn_kind == "gelu":\n'
                "        mlp = 8 * d * d + 5 * d\n"
                "    else:\n"
                '        mlp = 3 * d * config["hidden"]\n'
                '    per_norm = 2 * d if norm_kind == "layer" else d\n'
                '    emb = config["vocab"] * d\n'
                '    if not config["tied"]:\n'
                "        emb *= 2\n"
                '    emb += d * config.get("positions", 0)\n'
                '    return config["layers"] * (attn + mlp + 2 * per_norm) + emb + per_norm\n'
            ],
            [
                "    def linear(n_in, n_out, bias):\n"
                "        return n_in * n_out + (n_out if bias else 0)\n"
                "\n"
                "    def norm_size(width):\n"
                '        sizes = {"layer": 2 * width, "rms": width}\n'
                '        if config["norm"] not in sizes:\n'
                "            raise ValueError(\"norm must be 'layer' or 'rms'\")\n"
                '        return sizes[config["norm"]]\n'
                "\n"
                '    width, n_heads = config["d"], config["heads"]\n'
                '    n_kv = config.get("kv_heads", n_heads)\n'
                "    head = width // n_heads\n"
                '    b = config["bias"]\n'
                "    attention = (linear(width, n_heads * head, b) + 2 * linear(width, n_kv * head, b)\n"
                "                 + linear(n_heads * head, width, b))\n"
                '    if config["ffn"] == "gelu":\n'
                "        feed_forward = linear(width, 4 * width, True) + linear(4 * width, width, True)\n"
                '    elif config["ffn"] == "swiglu":\n'
                '        hidden = config["hidden"]\n'
                "        feed_forward = 2 * linear(width, hidden, False) + linear(hidden, width, False)\n"
                "    else:\n"
                "        raise ValueError(f\"unknown ffn: {config['ffn']}\")\n"
                "    block = attention + feed_forward + 2 * norm_size(width)\n"
                '    embedding = config["vocab"] * width * (1 if config["tied"] else 2)\n'
                '    positions = config.get("positions", 0) * width\n'
                '    return config["layers"] * block + embedding + positions + norm_size(width)\n'
            ],
            [
                "    c = dict(config)\n"
                '    c.setdefault("kv_heads", c["heads"])\n'
                '    c.setdefault("positions", 0)\n'
                "    ffn_params = {\n"
                '        "gelu": lambda d: 8 * d * d + 5 * d,\n'
                '        "swiglu": lambda d: 3 * d * c.get("hidden", 0),\n'
                "    }\n"
                '    norm_params = {"layer": lambda d: 2 * d, "rms": lambda d: d}\n'
                "    try:\n"
                '        ffn = ffn_params[c["ffn"]](c["d"])\n'
                '        norm = norm_params[c["norm"]](c["d"])\n'
                "    except KeyError as missing:\n"
                '        raise ValueError(f"unknown kind {missing}") from None\n'
                '    head_dim = c["d"] // c["heads"]\n'
                '    q_width, kv_width = c["heads"] * head_dim, c["kv_heads"] * head_dim\n'
                '    attention = 2 * c["d"] * q_width + 2 * c["d"] * kv_width\n'
                '    attention += (q_width + 2 * kv_width + c["d"]) * bool(c["bias"])\n'
                '    layers_total = c["layers"] * (attention + ffn + 2 * norm)\n'
                '    tables = c["vocab"] * c["d"] * (2 - bool(c["tied"])) + c["positions"] * c["d"]\n'
                "    return layers_total + tables + norm\n"
            ],
        ],
    },
    "LM10-L2": {
        "l2_attention": [
            ["    return 2 * d * d + 2 * kv_heads * (d // heads) * d\n"],
            [
                "    kv_width = kv_heads * (d // heads)\n"
                "    return d * d + d * kv_width + d * kv_width + d * d\n"
            ],
            [
                "    head_dim = d // heads\n"
                "    params = 0\n"
                "    for width in (heads, kv_heads, kv_heads, heads):  # q, k, v, o\n"
                "        params += d * width * head_dim\n"
                "    return params\n"
            ],
        ],
        "l2_cache": [
            [
                "    keys = layers * kv_heads * head_dim\n"
                "    values = keys\n"
                "    return (keys + values) * bytes_per_number\n"
            ],
            [
                "    numbers_per_layer = 2 * kv_heads * head_dim\n"
                "    total_numbers = numbers_per_layer * layers\n"
                "    return total_numbers * bytes_per_number\n"
            ],
            ["    return bytes_per_number * layers * 2 * head_dim * kv_heads\n"],
        ],
        "l2_flops": [
            [
                "    head_dim = d // heads\n"
                "    q_and_o = 2 * (2 * d * heads * head_dim)\n"
                "    k_and_v = 2 * (2 * d * kv_heads * head_dim)\n"
                "    attend = 2 * 2 * context * heads * head_dim\n"
                "    return layers * (q_and_o + k_and_v + attend)\n"
            ],
            [
                "    per_layer = 2 * attention_parameters(d, heads, kv_heads)  # 2 FLOPs a weight\n"
                "    per_layer += 4 * context * d  # scores, then the weighted sum\n"
                "    return per_layer * layers\n"
            ],
            [
                "    hd = d // heads\n"
                "    flops = 0\n"
                "    for _ in range(layers):\n"
                "        flops += 2 * d * (heads * hd)  # queries\n"
                "        flops += 2 * 2 * d * (kv_heads * hd)  # keys and values\n"
                "        flops += 2 * (heads * hd) * d  # output\n"
                "        flops += heads * 2 * hd * context * 2  # q.k and weights.v\n"
                "    return flops\n"
            ],
        ],
        "l2_compare": [
            [
                "    result = {}\n"
                '    names = ["MHA", "GQA", "MQA"]\n'
                "    kvs = [heads, gqa_kv_heads, 1]\n"
                "    for name, kv in zip(names, kvs):\n"
                "        row = {}\n"
                '        row["parameters"] = attention_parameters(d, heads, kv) * layers\n'
                '        row["cache_bytes"] = cache_bytes_per_token(layers, kv, d // heads)\n'
                '        row["flops"] = attention_flops_per_token(d, heads, kv, layers, context)\n'
                "        result[name] = row\n"
                "    return result\n"
            ],
            [
                "    def summary(kv):\n"
                '        return {"parameters": layers * attention_parameters(d, heads, kv),\n'
                '                "cache_bytes": cache_bytes_per_token(layers, kv, d // heads),\n'
                '                "flops": attention_flops_per_token(d, heads, kv, layers, context)}\n'
                "\n"
                '    return {"MHA": summary(heads), "GQA": summary(gqa_kv_heads), "MQA": summary(1)}\n'
            ],
            [
                "    head_dim = d // heads\n"
                "    variants = dict(MHA=heads, GQA=gqa_kv_heads, MQA=1)\n"
                "    out = {}\n"
                "    for label in variants:\n"
                "        kv = variants[label]\n"
                "        params = attention_parameters(d, heads, kv)\n"
                "        out[label] = {\n"
                '            "flops": attention_flops_per_token(d, heads, kv, layers, context),\n'
                '            "parameters": params * layers,\n'
                '            "cache_bytes": cache_bytes_per_token(layers, kv, head_dim, 2),\n'
                "        }\n"
                "    return out\n"
            ],
        ],
        "l2_serving": [
            [
                "    left = gpu_bytes - weight_bytes\n"
                "    if left <= 0:\n"
                "        return 0\n"
                "    per_request = cache_bytes_per_token * tokens_per_request\n"
                "    return left // per_request\n"
            ],
            [
                "    import math\n"
                "\n"
                "    spare = max(0, gpu_bytes - weight_bytes)\n"
                "    return math.floor(spare / (cache_bytes_per_token * tokens_per_request))\n"
            ],
            [
                "    return max(0, (gpu_bytes - weight_bytes)\n"
                "               // (cache_bytes_per_token * tokens_per_request))\n"
            ],
        ],
    },
    "LM10-L6": {
        "l6_ffn_width": [
            [
                "    hidden = int(8 * d / 3)\n"
                "    if multiplier:\n"
                "        hidden = int(hidden * multiplier)\n"
                "    remainder = hidden % multiple_of\n"
                "    return hidden if remainder == 0 else hidden + multiple_of - remainder\n"
            ],
            [
                "    width = 2 * 4 * d // 3\n"
                "    if multiplier is not None:\n"
                "        width = int(width * multiplier)\n"
                "    return -(-width // multiple_of) * multiple_of  # ceiling division\n"
            ],
            [
                "    size = int(4 * d * 2 / 3)\n"
                "    size = int(size * (1 if multiplier is None else multiplier))\n"
                "    rounded = multiple_of\n"
                "    while rounded < size:\n"
                "        rounded += multiple_of\n"
                "    return rounded\n"
            ],
        ],
        "l6_moe": [
            [
                "    d = config.hidden_size\n"
                "    n_layers = config.num_hidden_layers\n"
                "    dense_layers = config.first_k_dense_replace\n"
                "    sparse_layers = n_layers - dense_layers\n"
                "    expert_size = 3 * d * config.moe_intermediate_size\n"
                "    attention_and_norms = n_layers * (attention_parameters(config) + 2 * d)\n"
                "    dense_ffn = dense_layers * 3 * d * config.intermediate_size\n"
                "    shared = sparse_layers * config.n_shared_experts * expert_size\n"
                "    gates = sparse_layers * d * config.n_routed_experts\n"
                "    embeddings = (2 - int(config.tie_word_embeddings)) * config.vocab_size * d\n"
                "    always = attention_and_norms + dense_ffn + shared + gates + embeddings + d\n"
                "    total = always + sparse_layers * config.n_routed_experts * expert_size\n"
                "    active = always + sparse_layers * config.num_experts_per_tok * expert_size\n"
                "    return total, active\n"
            ],
            [
                "    def swiglu(width, hidden):\n"
                "        return 3 * width * hidden\n"
                "\n"
                "    d = config.hidden_size\n"
                "    n_moe = config.num_hidden_layers - config.first_k_dense_replace\n"
                "    per_layer_common = attention_parameters(config) + 2 * d\n"
                "    stored = used = config.num_hidden_layers * per_layer_common\n"
                "    dense = config.first_k_dense_replace * swiglu(d, config.intermediate_size)\n"
                "    stored, used = stored + dense, used + dense\n"
                "    expert = swiglu(d, config.moe_intermediate_size)\n"
                "    per_moe_layer = config.n_routed_experts * d + config.n_shared_experts * expert\n"
                "    stored += n_moe * (per_moe_layer + config.n_routed_experts * expert)\n"
                "    used += n_moe * (per_moe_layer + config.num_experts_per_tok * expert)\n"
                "    table = config.vocab_size * d\n"
                "    head = 0 if config.tie_word_embeddings else table\n"
                "    stored += table + head + d\n"
                "    used += table + head + d\n"
                "    return stored, used\n"
            ],
            [
                "    c = config\n"
                "    h = c.hidden_size\n"
                "    counts = {\n"
                '        "embed": c.vocab_size * h,\n'
                '        "lm_head": 0 if c.tie_word_embeddings else c.vocab_size * h,\n'
                '        "final_norm": h,\n'
                "    }\n"
                '    counts["attention"] = c.num_hidden_layers * attention_parameters(c)\n'
                '    counts["norms"] = c.num_hidden_layers * 2 * h\n'
                '    counts["dense_mlp"] = c.first_k_dense_replace * 3 * h * c.intermediate_size\n'
                "    moe_layers = c.num_hidden_layers - c.first_k_dense_replace\n"
                "    one_expert = 3 * h * c.moe_intermediate_size\n"
                '    counts["router"] = moe_layers * c.n_routed_experts * h\n'
                '    counts["shared_experts"] = moe_layers * c.n_shared_experts * one_expert\n'
                '    counts["routed_experts"] = moe_layers * c.n_routed_experts * one_expert\n'
                "    total = sum(counts.values())\n"
                "    idle = moe_layers * (c.n_routed_experts - c.num_experts_per_tok) * one_expert\n"
                "    return total, total - idle\n"
            ],
        ],
        "l6_cache": [
            [
                '    if getattr(config, "head_dim", None) is not None:\n'
                "        return config.head_dim\n"
                "    return config.hidden_size // config.num_attention_heads\n",
                "    layers = config.num_hidden_layers\n"
                '    rank = getattr(config, "kv_lora_rank", None)\n'
                "    if rank:\n"
                "        return layers * (rank + config.qk_rope_head_dim) * kv_bytes\n"
                '    kv = getattr(config, "num_key_value_heads", None) or config.num_attention_heads\n'
                "    return layers * 2 * kv * head_width(config) * kv_bytes\n",
            ],
            [
                "    try:\n"
                "        width = config.head_dim\n"
                "    except AttributeError:\n"
                "        width = None\n"
                "    return width or config.hidden_size // config.num_attention_heads\n",
                '    if hasattr(config, "kv_lora_rank") and config.kv_lora_rank:\n'
                "        numbers = config.kv_lora_rank + config.qk_rope_head_dim  # latent + rope key\n"
                "    else:\n"
                "        n_kv = config.num_attention_heads\n"
                '        if getattr(config, "num_key_value_heads", None):\n'
                "            n_kv = config.num_key_value_heads\n"
                "        numbers = n_kv * head_width(config) * 2\n"
                "    bytes_per_layer = numbers * kv_bytes\n"
                "    return bytes_per_layer * config.num_hidden_layers\n",
            ],
            [
                '    if getattr(config, "head_dim", 0):\n'
                "        return config.head_dim\n"
                "    return config.hidden_size // config.num_attention_heads\n",
                '    kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads\n'
                "    keys = values = kv_heads * head_width(config)\n"
                "    per_token_per_layer = keys + values\n"
                '    if getattr(config, "kv_lora_rank", None):\n'
                "        per_token_per_layer = config.kv_lora_rank + config.qk_rope_head_dim\n"
                "    return per_token_per_layer * config.num_hidden_layers * kv_bytes\n",
            ],
        ],
        "l6_window": [
            [
                "    layers = config.num_hidden_layers\n"
                "    per_layer_per_token = cache_bytes_per_token(config, kv_bytes) // layers\n"
                '    window = getattr(config, "sliding_window", None)\n'
                '    types = getattr(config, "layer_types", None)\n'
                "    if types is None:\n"
                '        types = ["sliding_attention" if window else "full_attention"] * layers\n'
                "    total = 0\n"
                "    for t in types:\n"
                '        if t == "sliding_attention" and window:\n'
                "            total += min(tokens, window - 1) * per_layer_per_token\n"
                "        else:\n"
                "            total += tokens * per_layer_per_token\n"
                "    return total\n"
            ],
            [
                '    window = getattr(config, "sliding_window", None) or 0\n'
                '    kinds = getattr(config, "layer_types", None)\n'
                "    n = config.num_hidden_layers\n"
                "    if not window:\n"
                "        sliding = 0\n"
                "    elif kinds is None:\n"
                "        sliding = n\n"
                "    else:\n"
                '        sliding = sum(1 for k in kinds if k == "sliding_attention")\n'
                "    full = n - sliding\n"
                "    kept = min(tokens, window - 1) if window else tokens\n"
                "    per_token = cache_bytes_per_token(config, kv_bytes) // n\n"
                "    return per_token * (full * tokens + sliding * kept)\n"
            ],
            [
                "    from collections import Counter\n"
                "\n"
                "    per_layer = cache_bytes_per_token(config, kv_bytes) // config.num_hidden_layers\n"
                '    window = getattr(config, "sliding_window", None)\n'
                '    layer_types = getattr(config, "layer_types", None) or [\n'
                '        "sliding_attention" if window else "full_attention"\n'
                "    ] * config.num_hidden_layers\n"
                "    count = Counter(layer_types)\n"
                "    sliding_tokens = min(tokens, window - 1) if window else tokens\n"
                "    held = count['full_attention'] * tokens + count['sliding_attention'] * sliding_tokens\n"
                "    return per_layer * held\n"
            ],
        ],
    },
}
ALTERNATIVES = {
    "LM10-L1": l1_alternatives,
    "LM10-L2": l2_alternatives,
    "LM10-L6": l6_alternatives,
}
LABS = tuple(MORE)


def release(lab):
    return nbformat.read(ROOT / "labs" / lab / f"{lab}.ipynb", as_version=4)


def methods(lab):
    """{grade_id: [five sources]}: the model solution, the `alternatives` case, three more."""
    nb = release(lab)
    stubs = {g: c.source for g, c in answer_cells(nb).items() if c.cell_type == "code"}
    solution = solution_answers(lab)
    alternative = {g: c.source for g, c in answer_cells(ALTERNATIVES[lab](nb)).items()}
    found = {}
    for grade_id, stub in stubs.items():
        model = re.sub(r"[ \t]*### (BEGIN|END) SOLUTION\n", "", solution[grade_id])
        written = []
        for bodies in MORE[lab][grade_id]:
            pieces = STUB.split(stub)
            assert len(pieces) == len(bodies) + 1, (grade_id, len(pieces))
            text = pieces[0]
            for body, rest in zip(bodies, pieces[1:], strict=True):
                text += body + rest
            written.append(text)
        found[grade_id] = [model, alternative[grade_id], *written]
    return found


# ------------------------------------------------------------------------------ disguises


def local_names(source, keep):
    """Names a cell binds inside its functions (assignments, loops, nested functions and
    their parameters), not the lab's required functions (`keep`) nor their parameters."""
    tree = ast.parse(source)
    found = set()
    for top in tree.body:
        if not isinstance(top, ast.FunctionDef):
            continue
        for node in ast.walk(top):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found.add(node.id)
            elif isinstance(node, ast.FunctionDef | ast.Lambda) and node is not top:
                if isinstance(node, ast.FunctionDef):
                    found.add(node.name)
                found.update(a.arg for a in node.args.args)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                found.add(node.name)
    return found - set(keep) - {"_"}


def required(lab):
    nb = release(lab)
    names = set()
    for cell in answer_cells(nb).values():
        if cell.cell_type == "code":
            names |= {n.name for n in ast.parse(cell.source).body if isinstance(n, ast.FunctionDef)}
    return names


def rename(source, mapping):
    """`source` with every name token in `mapping` replaced (not attributes after a dot, not
    keyword arguments), layout and comments kept."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    lines = source.splitlines(keepends=True)
    inside = set()  # rows of the cell's functions: the starter code around them stays
    for top in ast.parse(source).body:
        if isinstance(top, ast.FunctionDef):
            inside.update(range(top.lineno, top.end_lineno + 1))
    edits = []
    for i, tok in enumerate(tokens):
        if tok.type != tokenize.NAME or tok.string not in mapping or tok.start[0] not in inside:
            continue
        before = tokens[i - 1].string if i else ""
        after = tokens[i + 1].string if i + 1 < len(tokens) else ""
        if before == "." or (after == "=" and before in ("(", ",")):
            continue
        edits.append((tok.start, tok.end, mapping[tok.string]))
    for (row, col), (_, end), new in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[end:]
    return "".join(lines)


def renamed(answers, lab, scheme):
    keep = required(lab)
    out = {}
    for grade_id, source in answers.items():
        names = sorted(local_names(source, keep))
        out[grade_id] = rename(source, {n: scheme(n, i) for i, n in enumerate(names)})
    return out


def copier_names(name, i):
    synonyms = {"d": "dim", "total": "result", "hidden": "inner", "window": "win", "kv": "n_kv"}
    return synonyms.get(name, f"my_{name}")


def reformatted(answers, lab=None):
    """Re-laid out (ast.unparse), two-space indents, a comment before every statement."""
    out = {}
    for grade_id, source in answers.items():
        lines = []
        for line in ast.unparse(ast.parse(source)).splitlines():
            body = line.lstrip(" ")
            depth = (len(line) - len(body)) // 4
            if body and not body.startswith(("else", "elif", "except", ")", "]", "}", "'''")):
                lines.append("  " * depth + "# next step")
            lines.append("  " * depth + body)
        out[grade_id] = "\n".join(lines) + "\n"
    return out


def _reads(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _writes(node):
    return {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def reordered(answers, lab=None):
    """Functions of a cell in reverse order; in each function, neighbouring statements that do
    not depend on each other swapped. Layout and comments of each statement kept."""
    out = {}
    for grade_id, source in answers.items():
        tree = ast.parse(source)
        lines = source.splitlines(keepends=True)

        def segment(node, lines=lines):
            start = (
                node.decorator_list[0].lineno
                if getattr(node, "decorator_list", [])
                else node.lineno
            )
            return "".join(lines[start - 1 : node.end_lineno])

        def body_text(func, lines=lines):
            stmts = list(func.body)
            if (
                stmts
                and isinstance(stmts[0], ast.Expr)
                and isinstance(stmts[0].value, ast.Constant)
            ):
                head, stmts = [stmts[0]], stmts[1:]
            else:
                head = []
            i = 0
            while i + 1 < len(stmts):
                a, b = stmts[i], stmts[i + 1]
                free = not (_writes(a) & (_reads(b) | _writes(b)) or _writes(b) & _reads(a))
                movable = not isinstance(a, ast.Return | ast.If | ast.For | ast.While | ast.Try)
                movable = movable and not isinstance(b, ast.Return | ast.If | ast.For | ast.While)
                if free and movable:
                    stmts[i], stmts[i + 1] = b, a
                    i += 2
                else:
                    i += 1
            first = func.body[0]
            header = "".join(lines[func.lineno - 1 : first.lineno - 1])
            return header + "".join(segment(s) for s in head + stmts)

        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        rest = [n for n in tree.body if not isinstance(n, ast.FunctionDef)]
        pieces = [body_text(f) for f in reversed(defs)] + [segment(n) for n in rest]
        out[grade_id] = "\n\n".join(p.rstrip("\n") + "\n" for p in pieces)
    return out


PADDING = ("_ = 1", "pass", "0", "len(())", "_unused = None")


def padded(answers, lab=None):
    """A statement that does nothing after every statement of every function (and of its
    loops' and branches' bodies), one of PADDING in turn (the forty-eighth hub tester's copy:
    each fingerprint of the original spans a seam the padding breaks)."""
    out = {}
    for grade_id, source in answers.items():
        lines = source.splitlines()
        body = [
            node
            for top in ast.walk(ast.parse(source))
            if isinstance(top, ast.FunctionDef)
            for node in top.body
        ]
        body += [
            node
            for outer in body
            for field in ("body", "orelse")
            for node in getattr(outer, field, [])
            if isinstance(outer, ast.For | ast.If | ast.While | ast.With)
        ]
        # from the bottom up; where statements end on the same line, the outermost's line goes
        # in first, so that the deeper one's, put in at the same place after it, comes first
        for i, node in enumerate(sorted(body, key=lambda n: (-n.end_lineno, n.col_offset))):
            indent = " " * node.col_offset
            lines.insert(node.end_lineno, indent + PADDING[i % len(PADDING)])
        out[grade_id] = "\n".join(lines) + "\n"
    return out


def _largest(answers):
    return max(answers, key=lambda g: (len(answers[g]), g))


def disguise(kind, original, lab, own_method=None):
    """The copy a student makes of `original` (grade_id -> source) with one kind of disguise;
    `own_method` (grade_id -> source) is what a copier who changes one function writes."""
    if kind == "verbatim":
        return dict(original)
    if kind == "renamed":
        return renamed(original, lab, copier_names)
    if kind == "reformatted":
        return reformatted(original)
    if kind == "reordered":
        return reordered(original)
    if kind == "one function changed":
        copy_ = renamed(original, lab, copier_names)
        part = _largest(original)
        copy_[part] = own_method[part]
        return copy_
    if kind == "all at once":
        return reformatted(reordered(renamed(original, lab, copier_names)))
    if kind == "padded":
        return padded(renamed(original, lab, copier_names))
    raise ValueError(f"unknown disguise {kind!r}")


DISGUISES = (
    "verbatim",
    "renamed",
    "reformatted",
    "reordered",
    "one function changed",
    "all at once",
    "padded",
    "copy of a copy",
)


class _Commuted(ast.NodeTransformer):
    """Swaps the operands of some sums and products, as one student writes `d * 4` where
    another writes `4 * d`: which ones depends on the student."""

    def __init__(self, seed):
        self.seed, self.seen = seed, 0

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Mult | ast.Add):
            self.seen += 1
            if (self.seen * 7 + self.seed * 3) % 5 < 2:
                node.left, node.right = node.right, node.left
        return node


def commuted(source, seed):
    """`source` with the one-line statements of its functions rewritten by _Commuted (the
    line's comment dropped); other lines as they are."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    simple = (ast.Assign, ast.AugAssign, ast.Return)
    for top in tree.body:
        if not isinstance(top, ast.FunctionDef):
            continue
        for node in ast.walk(top):
            if isinstance(node, simple) and node.lineno == node.end_lineno:
                line = lines[node.lineno - 1]
                indent = line[: len(line) - len(line.lstrip())]
                text = ast.unparse(_Commuted(seed + node.lineno).visit(copy.deepcopy(node)))
                lines[node.lineno - 1] = indent + text + "\n"
    return "".join(lines)


def honest_answers(lab, i, found=None):
    """Honest student i's answers: method (b + p a) mod 5 of part p (i = 5a + b), in their
    own style (their own names for their locals; some delete the comments)."""
    found = found or methods(lab)
    a, b = divmod(i, METHODS)
    answers = {g: found[g][(b + p * a) % METHODS] for p, g in enumerate(found)}
    styles = [
        lambda n, k: n,
        lambda n, k: f"{n}_{i}",
        lambda n, k: f"v{k}",
        lambda n, k: "".join(w[:1] for w in n.split("_")) + f"{k}",
        lambda n, k: n.upper() if len(n) < 3 else n + "_value",
    ]
    answers = renamed(answers, lab, styles[i % len(styles)])
    answers = {g: commuted(source, i) for g, source in answers.items()}
    if i % 3 == 2:
        answers = {g: re.sub(r"  # [^\n]*", "", s) for g, s in answers.items()}
    return answers


def build(lab, honest=HONEST, copies=2, kinds=DISGUISES):
    """The class: {student: answers (grade_id -> source)} and the planted pairs
    [(original, copier, kind)] and families {student: family of copies it belongs to}."""
    if honest > HONEST:
        raise ValueError(f"at most {HONEST} honest students, not {honest}")
    found = methods(lab)
    students = {f"honest-{i:02d}": honest_answers(lab, i, found) for i in range(honest)}
    planted, family = [], {}
    originals = iter(range(honest))
    for kind in kinds:
        for n in range(copies):
            origin = next(originals, None)
            if origin is None:
                raise ValueError(f"not enough honest students to copy from ({honest})")
            source = f"honest-{origin:02d}"
            tag = kind.replace(" ", "-")
            if kind == "copy of a copy":
                first, second = f"copy-{tag}-{n}-first", f"copy-{tag}-{n}-second"
                students[first] = renamed(students[source], lab, copier_names)
                students[second] = reformatted(
                    reordered(renamed(students[first], lab, lambda x, k: f"{x}_2"))
                )
                planted += [(source, first, "copy of a copy, each step")]
                planted += [(first, second, "copy of a copy, each step")]
                planted += [(source, second, "copy of a copy")]
                family.update({source: source, first: source, second: source})
                continue
            copier = f"copy-{tag}-{n}"
            own = honest_answers(lab, (origin + 7) % honest, found)
            if kind == "one function changed":
                part = _largest(students[source])
                a, b = divmod(origin, METHODS)
                p = list(found).index(part)
                other = (b + p * a + 1 + n) % METHODS
                own = dict(own, **{part: found[part][other]})
            students[copier] = disguise(kind, students[source], lab, own)
            planted.append((source, copier, kind))
            family.update({source: source, copier: source})
    return students, planted, family


def notebook(lab, answers, nb=None):
    """The released notebook with these answers."""
    return fill(copy.deepcopy(nb) if nb is not None else release(lab), answers)
