"""Greedy decoding laid out for one token at a time, close to the memory-bandwidth floor.

    from lmcourse.fastdecode import FastDecoder
    fast = FastDecoder(model)                 # model: a DecoderLM (any family the course ports)
    ids = fast.generate(input_ids, 64)        # the same tokens as model.generate(input_ids, 64)

`DecoderLM` is written to be read next to transformers' modelling files; it stays the
reference. Decoding one token is a different workload: every weight is read once to do a few
multiply-adds with it, so the step costs at least the time to stream the weights from memory
(`lmcourse.timing.floor_reader`). What the reference path adds on top of that floor, and what
this module removes:
  - three query/key/value products and two gate/up products per layer: each pair or triple of
    matrices is concatenated once, at construction, into one matrix read by one product;
  - the grouped-query reads: the G query heads that share a key-value head are stacked as G
    rows of one query against that head's cached keys (as the reference path's fused kernel
    does with `enable_gqa`), and soft-capped scores are grouped the same way, so no cached key
    or value is ever copied;
  - matrices stored the way the matrix-vector kernel streams them: fused weights are stored
    as [in, out] and multiplied as `x @ W`, and the output matrix, read by the reference path as
    the table [vocab, d] through `F.linear`, is copied into the same form [d, vocab];
  - products of the weights on one thread: torch's matrix-vector product ran on one thread
    on the CPUs measured (MKL's kernel: as fast on two threads as on one), so on a CPU each
    matrix is cut into as many blocks of columns as there are threads and multiplied by one
    batched product, which gives every thread its own block;
  - small operations, which cost more than their arithmetic when a step makes hundreds of
    them (`make bench` counts a step's operator calls on each path): RMSNorm as one call of
    `F.rms_norm` (the same numbers in float32); the query and key heads rotated by one product
    with a [head_dim, head_dim] matrix built once per step (`rotation_matrix`); the new key and
    value copied straight into their cache slot; each residual sum folded into its output
    projection (`torch.addmm`); the hidden state kept as [batch, d]; no calls to modules that
    do nothing;
  - and, opt-in (`FastDecoder(model, compiled=True)`), `torch.compile` of the whole step, which
    fuses the operations between the products into a few generated kernels per layer and
    turns each product of one sequence into a loop of its own that streams the weights on
    every thread, and the attention of the new token into two more; on CPUs where torch's
    matrix-vector kernel streams below the memory's speed, this comes closest to the floor.
    What torch.compile checks before each call is kept to what can change: not the decoder's
    own matrices (`FastDecoder._compiled_step`).
What a family does to its embeddings and logits, and which norms sit around each stage, the
fast path takes from the model itself (`DecoderLM.embed_tokens`, `DecoderLM.finish_logits`,
`Block.stages`), so those are written once (docs/ADDING_A_FAMILY.md, step 3, says what a new
block feature needs here).
The prompt itself (the prefill) runs through the reference path into the same `KVCache`, and
the modules without a fast form (latent attention, mixtures of experts, and what an ablation
swaps in, `lmcourse.ablations.TiledAttention` and `UngatedMLP`) are called as they are: every
family decodes, the common ones quickly. tests/lib/test_fastdecode.py checks the
tokens and logits against `DecoderLM` on every family of the parity tests.
"""

from __future__ import annotations

import contextlib
import types

import torch
import torch.nn.functional as F

from .blocks.attention import Attention
from .blocks.cache import KVCache
from .blocks.ffn import MLP, GatedMLP
from .blocks.model import DecoderLM
from .blocks.norms import RMSNorm
from .blocks.rope import apply_rotary
from .spec import check_int


class _Weights:
    """One nn.Linear, or several with the same input side by side (their outputs concatenated),
    stored for a decoding step's product x [batch, in] -> x @ W.T + b [batch, out] in one of
    three ways (`storage`):

    - "columns": W.T [in, out], multiplied as x @ W.T, the form in which torch's
      matrix-vector kernel read the weights faster than in nn.Linear's where the course
      measured it (T5 times both);
    - "blocks": the same columns cut into `parts` blocks, stored [parts, in, out / parts] (zero
      columns pad the last) and multiplied by one batched product. torch's matrix-vector
      product ran on one thread on the CPUs measured; a batched product shares its batch out
      among the threads, so on a CPU with `parts` threads each thread streams its own block;
    - "rows": W [out, in] as nn.Linear stores it, for a compiled step: one sequence's product
      written as an elementwise product and a sum over the input, (x * W).sum(-1), which
      inductor fuses into one generated loop that streams the weights on every thread, faster
      on some CPUs than the matrix-vector kernel; several sequences take `F.linear`.
    """

    def __init__(self, *linears, storage: str = "columns", parts: int = 1):
        weight = torch.cat([linear.weight for linear in linears], dim=0)  # [out, in]
        biases = [linear.bias for linear in linears]
        self.bias = None if biases[0] is None else torch.cat(biases).contiguous()
        self.storage, self.width = storage, weight.shape[0]
        if storage == "rows":
            self.weight = weight.contiguous()
        elif storage == "columns":
            self.weight = weight.t().contiguous()
        else:  # "blocks"
            block = -(-self.width // parts)  # columns per block, rounded up
            weight = F.pad(weight.t(), (0, parts * block - self.width))  # [in, parts * block]
            self.weight = weight.view(-1, parts, block).transpose(0, 1).contiguous()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.storage == "columns":
            return x @ self.weight if self.bias is None else torch.addmm(self.bias, x, self.weight)
        if self.storage == "rows" and x.shape[0] == 1:  # one sequence: a loop of its own
            y = (x * self.weight).sum(-1).view(1, -1)
        elif self.storage == "rows":
            y = F.linear(x, self.weight)
        else:
            parts = self.weight.shape[0]
            y = torch.bmm(x.expand(parts, *x.shape), self.weight)  # [parts, batch, block]
            y = y.transpose(0, 1).reshape(x.shape[0], -1)  # a view for one sequence
            if y.shape[1] != self.width:  # the last block's padding
                y = y[:, : self.width]
        return y if self.bias is None else y + self.bias

    def add_to(self, x: torch.Tensor, h: torch.Tensor, post_norm, block) -> torch.Tensor:
        """block.join(x, post_norm(h @ W.T + b)) -> [batch, d]: the stage's output joins the
        residual stream as the block joins it. Stored as "columns", without a bias, a post norm
        or a residual scale (most families), the product and the sum are one `torch.addmm`."""
        plain = self.bias is None and post_norm is None and block.residual_scale == 1.0
        if self.storage == "columns" and plain:
            return torch.addmm(x, h, self.weight)
        y = self(h)
        return block.join(x, post_norm(y) if post_norm else y)


def _norm(module):
    """A norm as one call: torch's `F.rms_norm` where it computes the same numbers (float32,
    the scale stored as itself), the module otherwise; None for a norm that is not there."""
    if isinstance(module, torch.nn.Identity):
        return None
    weight = getattr(module, "weight", None)
    if isinstance(module, RMSNorm) and not module.offset and weight.dtype == torch.float32:
        return lambda x: F.rms_norm(x, weight.shape, weight, module.eps)
    return module


def rotation_matrix(
    cos: torch.Tensor, sin: torch.Tensor, head_dim: int, rope_layout: str
) -> torch.Tensor:
    """The rotary embedding of one position as a [head_dim, head_dim] matrix R: x @ R ==
    apply_rotary(x, cos, sin, rope_layout) for every head vector x.

    The rotation is linear in x, so row j of R is the rotation of the j-th unit vector: the
    reference function, applied once per step to the identity, builds R for either pair
    layout and for partial rotary (the identity on the dimensions that do not turn). Every
    layer then rotates all its query and key heads with one product instead of the six
    elementwise operations of `apply_rotary` (a product, a split, a negation, a concatenation,
    a product and a sum).
    """
    eye = torch.eye(head_dim, dtype=cos.dtype, device=cos.device).view(1, 1, head_dim, head_dim)
    return apply_rotary(eye, cos[:1], sin[:1], rope_layout)[0, 0]


class _FastAttention:
    """One `Attention` block's decoding step: one fused projection, one product for the
    rotation, keys and values written straight into the cache, no grouped copy.

    In a compiled step (matrices stored as "rows") the attention of the new token is written
    out as its two reductions, the scores over head_dim and the weighted values over the
    positions, which inductor fuses into loops of its own. torch.compile would otherwise call
    the CPU's flash-attention kernel, which is made for many queries and was the slower of the
    two with one query per head on the CPUs measured. The scores differ from the kernel's by
    rounding only (`make bench` prints how far each fast path's logits are from the
    reference's)."""

    def __init__(self, attn: Attention, plan: dict):
        self.attn = attn
        self.reduced = plan["storage"] == "rows"  # a compiled step
        # the score scale as a tensor of its own: a Python float multiplied into a tensor
        # becomes an input that torch.compile wraps in a new tensor at every call
        weight = attn.q_proj.weight
        self.attn_scale_tensor = torch.tensor(
            attn.attn_scale, dtype=weight.dtype, device=weight.device
        )
        self.qkv = _Weights(attn.q_proj, attn.k_proj, attn.v_proj, **plan)
        self.out = _Weights(attn.o_proj, **plan)

    def __call__(self, x, rotation, pos, cache, start):  # x [batch, d] -> heads [batch, H * D]
        a = self.attn
        B, H, K, G, D = x.shape[0], a.heads, a.kv_heads, a.group, a.head_dim
        qkv = self.qkv(x)
        if a.clip:
            qkv = qkv.clamp(-a.clip, a.clip)
        # the query and key heads as rows of one matrix [batch * (H + K), head_dim]: a 2-D
        # product, which stays on one thread; the same product on 4-D heads becomes a batched
        # one (`bmm`) split across threads, which waits on every other busy core
        qk, v = qkv.split(((H + K) * D, K * D), dim=-1)
        if a.qk_norm_kind == "all_heads":  # OLMo 2: one norm across query heads, one across keys
            q, k = qk.split((H * D, K * D), dim=-1)
            qk = torch.cat((a.q_norm(q), a.k_norm(k)), dim=-1)
        qk = qk.reshape(B * (H + K), D)  # a view for one sequence, a copy for several
        if a.qk_norm_kind == "per_head":  # each head normalised on its own
            q, k = qk.view(B, H + K, D).split((H, K), dim=1)
            qk = torch.cat((a.q_norm(q), a.k_norm(k)), dim=1).view(B * (H + K), D)
        if a.rotates:  # every query and key head rotated by one product
            qk = qk @ rotation
        q, k = qk.view(B, H + K, 1, D).split((H, K), dim=1)
        v = v.view(B, K, 1, D)
        if cache.window or start >= cache.keys.shape[2]:  # a ring of slots, or an error to raise
            keys, values, _ = cache.update(k, v, pos, start)
        else:
            # Position `start` is slot `start`: the new key and value are copied into place and
            # the filled slots read as views, without `LayerCache.update`'s generic bookkeeping.
            cache.keys.index_copy_(2, pos, k)
            cache.values.index_copy_(2, pos, v)
            keys, values = cache.keys[:, :, : start + 1], cache.values[:, :, : start + 1]
        # Query head h reads key-value head h // G: stack the G query heads of each key-value
        # head as G rows of one [G, S] score matrix.
        q = q.view(B, K, G, D)
        if a.softcap:
            scores = (q @ keys.transpose(-2, -1)) * a.attn_scale
            scores = a.softcap * torch.tanh(scores / a.softcap)
            probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
            y = probs @ values  # [batch, K, G, D]
        elif self.reduced:  # compiled: two reductions over head_dim and over the positions
            scores = (q.unsqueeze(-2) * keys.unsqueeze(2)).sum(-1)  # [batch, K, G, S]
            scores = scores * self.attn_scale_tensor
            probs = torch.softmax(scores, dim=-1)
            y = (probs.unsqueeze(-1) * values.unsqueeze(2)).sum(-2)  # [batch, K, G, D]
        else:
            y = F.scaled_dot_product_attention(q, keys, values, scale=a.attn_scale)
        return y.reshape(B, H * D)


class _FastMLP:
    """A feed-forward block's step: gate and up as one product for the gated kinds."""

    def __init__(self, ffn, plan: dict):
        self.ffn = ffn
        self.gated = isinstance(ffn, GatedMLP)
        ups = (ffn.gate_proj, ffn.up_proj) if self.gated else (ffn.up_proj,)
        self.up = _Weights(*ups, **plan)
        self.out = _Weights(ffn.down_proj, **plan)

    def __call__(self, x):  # x [batch, d] -> hidden [batch, hidden], before the down projection
        h = self.up(x)
        if self.gated:
            gate, up = h.chunk(2, dim=-1)
            return self.ffn.act(gate) * up
        return self.ffn.act(h)


@contextlib.contextmanager
def _outside_inference_mode():
    """Gradients off and inference mode off, even inside a caller's `torch.inference_mode`:
    the context of a compiled step, as torch.compile cannot trace inference tensors."""
    with torch.inference_mode(False), torch.no_grad():
        yield


class FastDecoder:
    """Greedy decoding of a `DecoderLM` with the reference model's numbers, one token per step.

    The decoder holds its own fused copies of the attention and feed-forward matrices and of
    the output matrix (as many bytes again as those weights): build it once per model, and
    rebuild it if the model's weights change.

    parts: the blocks of columns each matrix is cut into, so that every thread streams its own
    (`_Weights`, "blocks"). Default: torch's thread count when the weights are on a CPU, 1 on a
    GPU, whose products use the whole device already. The tokens are the same for any value;
    only the speed changes, and a decoder cut for more threads than it runs on is slower.

    compiled=True hands the step to `torch.compile` (inductor), which fuses the small
    operations between the matrix products into a few generated C++ kernels, and the product
    of one sequence with each matrix into a loop of its own (`_Weights`, "rows"; `parts` does
    not apply). The first step compiles, which takes far longer than a step (`make bench`
    prints how long); later lengths reuse it (dynamic shapes). A compiled step runs under
    `torch.no_grad`, not `torch.inference_mode`: its cache must be made outside inference mode
    (`generate` does so).
    """

    def __init__(self, model: DecoderLM, compiled: bool = False, parts: int | None = None):
        if not isinstance(model, DecoderLM):
            raise ValueError(f"FastDecoder needs a lmcourse DecoderLM, got {type(model).__name__}")
        if parts is None:
            on_cpu = model.head.weight.device.type == "cpu"
            parts = torch.get_num_threads() if on_cpu and not compiled else 1
        check_int("parts", parts, low=1, hint=" (blocks of columns per matrix)")
        if compiled and parts > 1:
            raise ValueError(
                f"parts={parts} applies to the eager step; a compiled step multiplies by rows "
                "on every thread (leave parts out, or set compiled=False)"
            )
        self.parts = parts
        # how every fused matrix is stored (`_Weights`)
        if compiled:
            plan = {"storage": "rows"}
        else:
            plan = {"storage": "blocks", "parts": parts} if parts > 1 else {"storage": "columns"}
        self.model = model
        # A fast form only for a module of exactly the type it rewrites: any other, a subclass
        # such as an ablation's TiledAttention included, may compute otherwise and runs as it is.
        with torch.no_grad():
            self.attention = [
                _FastAttention(b.attn, plan) if type(b.attn) is Attention else b.attn
                for b in model.blocks
            ]
            self.ffn = [
                _FastMLP(b.ffn, plan) if type(b.ffn) in (MLP, GatedMLP) else b.ffn
                for b in model.blocks
            ]
            # the output matrix too, the largest of a small model (for tied embeddings, a copy
            # of the table, stored as the plan says)
            self.head = _Weights(model.head, **plan)
        # per block: (norm before attention, after it, before the feed-forward, after it),
        # from the block's own list of stages (Block.stages)
        self.norms = [
            tuple(_norm(n) for (before, _, after) in b.stages() for n in (before, after))
            for b in model.blocks
        ]
        self.final_norm = _norm(model.norm)
        rotating = [
            a.attn for a in self.attention if isinstance(a, _FastAttention) and a.attn.rotates
        ]
        self.rope_layout = rotating[0].rope_layout if rotating else None
        self.head_dim = rotating[0].head_dim if rotating else None
        self.compiled = compiled
        self._decode = self._compiled_step() if compiled else self._step
        self._no_grad = _outside_inference_mode if compiled else torch.inference_mode

    def _own_tensors(self) -> list[torch.Tensor]:
        """The tensors this decoder made for itself: the fused copies of the model's matrices
        (and their biases) and each fast attention block's score scale."""
        attention = [a for a in self.attention if isinstance(a, _FastAttention)]
        fused = [self.head] + [part for a in attention for part in (a.qkv, a.out)]
        fused += [part for f in self.ffn if isinstance(f, _FastMLP) for part in (f.up, f.out)]
        own = [t for w in fused for t in (w.weight, w.bias) if t is not None]
        return own + [a.attn_scale_tensor for a in attention]

    def _compiled_step(self):
        """`_step` compiled for this decoder alone, without guards on its own matrices.

        Before every call of a compiled function, torch.compile checks its guards: the type,
        dtype, shape and strides of every tensor the step reads, and more. This decoder's fused
        tensors are its own, made once in __init__ and never replaced, so the guards on them,
        one check per tensor before every step (`make bench` prints how many), check what
        cannot change, and `guard_filter_fn` drops them; every other
        guard (the cache, the token, the model's own tensors and settings) stays. Nothing in
        the course changes those tensors in place; code that did (`resize_`, `requires_grad_`,
        a new dtype through `.data`) would need a new decoder. torch.compile keeps compiled graphs
        on a function's code object, which every decoder's `_step` shares: so that a graph
        compiled without those guards never runs for another decoder, whose matrices may differ,
        each decoder compiles its own copy of the code.
        """
        own = {id(t) for t in self._own_tensors()}
        self._unguarded = []  # the guards dropped, per compiled graph (for the tests)

        def keep(entries):
            kept = [
                not (e.guard_type == "TENSOR_MATCH" and e.has_value and id(e.value) in own)
                for e in entries
            ]
            self._unguarded.append(kept.count(False))
            return kept

        step = FastDecoder._step
        self._step_code = step.__code__.replace()  # a new code object: a cache of its own
        mine = types.FunctionType(
            self._step_code, step.__globals__, step.__name__, step.__defaults__
        )
        return torch.compile(
            types.MethodType(mine, self), dynamic=True, options={"guard_filter_fn": keep}
        )

    def step(self, token: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """token [batch, 1] continues the cached sequences -> logits [batch, 1, vocab]."""
        if token.dim() != 2 or token.shape[1] != 1:
            raise ValueError(
                f"step takes one token per sequence, [batch, 1]; got shape "
                f"{tuple(token.shape)} (run longer inputs through prefill)"
            )
        if self.compiled and cache.layers[0].keys.is_inference():
            # torch.compile cannot trace tensors made in inference mode
            raise ValueError(
                "a compiled FastDecoder needs a cache made outside torch.inference_mode"
            )
        with self._no_grad():
            if self.compiled:
                # The compiled step's guards check the token's dispatch keys and strides: a
                # token made in inference mode, or a column of a longer tensor (as generate's
                # are), would each compile the step again. A contiguous copy made here, outside
                # inference mode, is the same kind of tensor at every step, whoever made it.
                token = token.clone(memory_format=torch.contiguous_format)
            return self._decode(token, cache)

    def _step(self, token: torch.Tensor, cache: KVCache) -> torch.Tensor:
        m, start, B = self.model, cache.length, token.shape[0]
        pos = torch.tensor([start], device=token.device)
        x = m.embed_tokens(token, pos.expand(B, 1)).view(B, -1)  # [batch, d] throughout
        cos = sin = rotation = None
        if m.pos_embed is None:
            cos, sin = m.rotary(pos.expand(B, 1), x.dtype)
            if self.rope_layout is not None:  # one matrix for this position, for every layer
                rotation = rotation_matrix(cos, sin, self.head_dim, self.rope_layout)
        layers = zip(m.blocks, self.norms, self.attention, self.ffn, cache.layers, strict=True)
        for block, norms, attn, ffn, layer in layers:
            attn_norm, attn_post, ffn_norm, ffn_post = norms
            x_attn = attn_norm(x) if attn_norm else x  # OLMo 2 has no norm before a stage
            if isinstance(attn, _FastAttention):
                h = attn(x_attn, rotation, pos, layer, start)
                x = attn.out.add_to(x, h, attn_post, block)
            else:  # a block without a fast form, called as it is on [batch, 1, d]
                y = attn(x_attn.unsqueeze(1), cos, sin, pos, layer, start).squeeze(1)
                x = block.join(x, attn_post(y) if attn_post else y)
            x_ffn = ffn_norm(x) if ffn_norm else x
            if isinstance(ffn, _FastMLP):
                x = ffn.out.add_to(x, ffn(x_ffn), ffn_post, block)
            else:
                y = ffn(x_ffn.unsqueeze(1)).squeeze(1)
                x = block.join(x, ffn_post(y) if ffn_post else y)
        cache.length += 1
        return m.finish_logits(self.head(self.final_norm(x))).unsqueeze(1)

    def prefill(self, input_ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """The prompt through the reference path into `cache` -> logits of its last position."""
        with self._no_grad():
            return self.model.logits(self.model.hidden_states(input_ids, cache=cache)[:, -1:])

    def generate(self, input_ids: torch.Tensor, max_new_tokens: int) -> torch.Tensor:
        """Greedy decoding: input_ids [batch, T] -> [batch, T + max_new_tokens], the tokens
        `DecoderLM.generate` gives."""
        if input_ids.dim() != 2:
            raise ValueError(
                f"input_ids must be [batch, tokens], got shape {tuple(input_ids.shape)}"
            )
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        B, T = input_ids.shape
        with self._no_grad():
            ids = torch.empty(B, T + max_new_tokens, dtype=input_ids.dtype, device=input_ids.device)
            ids[:, :T] = input_ids
            cache = self.model.new_cache(B, T + max_new_tokens)
            logits = self.prefill(input_ids, cache)
            for t in range(T, T + max_new_tokens):
                ids[:, t] = logits[:, -1].argmax(-1)
                if t + 1 < T + max_new_tokens:
                    logits = self.step(ids[:, t : t + 1], cache)
        return ids
