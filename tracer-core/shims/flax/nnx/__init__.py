"""flax.nnx, as tracelens models it: a shim of flax 0.12.8's nnx surface in plain Python on top
of jax and the optax shim. Names not listed here are unknown to tracelens (opaque), never missing.

Coverage (see docs/ARCHITECTURE.md, "Library shims"): Module/Pytree objects holding Variables
(Param, BatchStat, Cache, Intermediate, the rng and optimizer states); Rngs and RngStream; the
layers Linear, LinearGeneral, Embed, Conv, LayerNorm, BatchNorm, Dropout, MultiHeadAttention
(with dropout, is_causal and the decoding cache); state, split, merge, update,
graphdef, clone, pure, List, Sequential; jit, grad, value_and_grad, DiffState,
cached_partial, remat; vmap, scan and split_rngs (integer or None axes, _lifted.py); Optimizer, ModelAndOptimizer; pool, avg_pool, max_pool, min_pool
(flax/_pooling.py); the activations of jax.nn.
"""

from flax.nnx import initializers
from flax.nnx._graph import (
    All,
    Any,
    Dict,
    GraphDef,
    List,
    Module,
    Not,
    Object,
    Pytree,
    State,
    as_pure,
    clone,
    graphdef,
    iter_graph,
    merge,
    pure,
    Sequential,
    split,
    state,
    update,
    variables,
)
from flax.nnx._attention import (
    LinearGeneral,
    combine_masks,
    MultiHeadAttention,
    dot_product_attention,
    make_attention_mask,
    make_causal_mask,
)
from flax.nnx._lifted import Carry, scan, split_rngs, vmap
from flax.nnx._layers import BatchNorm, Conv, Dropout, Embed, LayerNorm, Linear
from flax.nnx._optimizer import ModelAndOptimizer, Optimizer
from flax.nnx._pooling import avg_pool, max_pool, min_pool, pool
from flax.nnx._rnglib import RngStream, Rngs
from flax.nnx._transforms import DiffState, cached_partial, grad, jit, remat, value_and_grad
from flax.nnx._variables import (
    BatchStat,
    Cache,
    Intermediate,
    OptArray,
    OptState,
    Param,
    Perturbation,
    RngCount,
    RngKey,
    RngState,
    Variable,
    data,
    static,
)
from jax.nn import (
    celu,
    elu,
    gelu,
    glu,
    hard_sigmoid,
    hard_swish,
    hard_tanh,
    leaky_relu,
    log_sigmoid,
    log_softmax,
    logsumexp,
    one_hot,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    soft_sign,
    softmax,
    softplus,
    standardize,
    swish,
)
from jax.numpy import tanh
