"""`ModelSpec`: one frozen description of a decoder-only architecture.

Everything the course computes (parameter counts, cache bytes, FLOPs) and builds
(`DecoderLM`) starts from a `ModelSpec`. It is built from a seed-style dict
(`ModelSpec.from_dict`) or from a transformers config (`ModelSpec.from_transformers`),
and validated on construction: a bad value raises `ValueError` naming the field and
saying what would be valid.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Field list (shared contract between spec.py, count.py and blocks/):
#
# identity
#   family           str    'gpt2', 'llama', 'mistral', 'mixtral', 'qwen2', 'qwen3', 'qwen3_moe',
#                           'gemma2', 'phi3', 'olmo', 'deepseek_v3', or 'custom' (seed-style dicts)
# sizes
#   d                int    model width (hidden_size)
#   layers           int    number of decoder blocks
#   vocab            int    vocabulary size
#   heads            int    query heads
#   kv_heads         int    key-value heads (== heads: MHA, 1: MQA, in between: GQA)
#   head_dim         int    width of one head (d // heads unless the family says otherwise)
# feed-forward
#   ffn              str    'gelu' (two matrices) | 'swiglu' | 'geglu' (three matrices, gated)
#   hidden           int    feed-forward width (intermediate_size)
#   act              str    activation name as transformers spells it ('gelu_new', 'silu',
#                           'gelu_pytorch_tanh', ...)
# biases
#   qkv_bias         bool   biases on the query, key and value projections
#   out_bias         bool   bias on the attention output projection
#   mlp_bias         bool   biases on the feed-forward projections
# normalisation
#   norm             str    'layer' (LayerNorm) | 'rms' (RMSNorm)
#   norm_affine      bool   the norm has a learned scale (False: OLMo's parameter-free LayerNorm)
#   norm_bias        bool   the norm has a learned shift (LayerNorm of GPT-2)
#   norms_per_block  int    2 (pre-norm) or 4 (Gemma 2's sandwich norms)
#   qk_norm          bool   RMSNorm on each query and key head (Qwen3)
#   norm_eps         float
#   norm_offset      float  scale applied as (offset + weight): 1.0 for Gemma 2, else 0.0
# embeddings and positions
#   tied             bool   output projection shares the token table
#   positions        int    rows of a learned position table (0: none, rotary instead)
#   rope_theta       float  rotary base (0.0 when positions are learned)
#   rope_scaling     tuple  sorted (key, value) pairs of transformers' rope_parameters beyond the
#                           base (for example llama3 factor/low_freq_factor/...), () when none
#   rotary_dim       int    dimensions of a head that are rotated (head_dim unless partial)
#   rope_interleave  bool   DeepSeek-V3's interleaved layout of the rotary dimensions
#   embed_scale      float  multiply token embeddings by this (Gemma 2: sqrt(d)), else 1.0
#   attn_scale       float  score scale, 1/sqrt(head_dim) unless the family says otherwise
#   attn_softcap     float  tanh soft-cap of attention scores (0.0: none)
#   final_softcap    float  tanh soft-cap of the logits (0.0: none)
# attention span
#   sliding_window   int    window of sliding-window layers (0: none)
#   layer_types      tuple  per layer 'full_attention' or 'sliding_attention'
# mixture of experts (experts == 0: dense)
#   experts          int    routed experts per MoE layer
#   experts_per_token int   top-k
#   expert_hidden    int    width of one routed expert
#   shared_experts   int    always-on experts (DeepSeek-V3), each expert_hidden wide
#   dense_layers     int    the first `dense_layers` blocks use a dense feed-forward of width `hidden`
#   norm_topk        bool   renormalise the top-k router weights to sum to 1
#   router_bias      bool   DeepSeek-V3's score-correction bias on the router
#   routed_scale     float  multiplier of the routed output (DeepSeek-V3: 2.5)
#   n_group, topk_group int DeepSeek-V3's group-limited routing (1, 1 otherwise)
# latent attention, MLA (kv_lora_rank == 0: ordinary attention)
#   q_lora_rank      int    0: queries projected directly
#   kv_lora_rank     int
#   qk_nope_head_dim int
#   qk_rope_head_dim int
#   v_head_dim       int


@dataclass(frozen=True)
class ModelSpec:
    d: int
    layers: int
    vocab: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: str
    hidden: int
    norm: str
    family: str = "custom"
    act: str = ""
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    norm_affine: bool = True
    norm_bias: bool = False
    norms_per_block: int = 2
    qk_norm: bool = False
    norm_eps: float = 1e-5
    norm_offset: float = 0.0
    tied: bool = False
    positions: int = 0
    rope_theta: float = 10000.0
    rope_scaling: tuple = ()
    rotary_dim: int = 0
    rope_interleave: bool = False
    embed_scale: float = 1.0
    attn_scale: float = 0.0
    attn_softcap: float = 0.0
    final_softcap: float = 0.0
    sliding_window: int = 0
    layer_types: tuple = field(default=())
    experts: int = 0
    experts_per_token: int = 0
    expert_hidden: int = 0
    shared_experts: int = 0
    dense_layers: int = 0
    norm_topk: bool = False
    router_bias: bool = False
    routed_scale: float = 1.0
    n_group: int = 1
    topk_group: int = 1
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
