"""flax.linen, as tracelens models it: a shim of flax 0.12.8's linen API in plain Python on top
of jax. Names not listed here are unknown to tracelens (opaque), never missing.

Coverage (see docs/ARCHITECTURE.md, "Library shims"): Module with @compact and setup, init,
init_with_output, apply (variable collections, mutable, rngs), param/variable/sow/make_rng;
Dense, DenseGeneral, Conv, Embed, LayerNorm, BatchNorm, Dropout, Sequential,
MultiHeadDotProductAttention/SelfAttention (with the decoding cache) and the masks; pool, avg_pool,
max_pool; the lifted scan, vmap, remat/checkpoint and jit (transforms.py) and `broadcast`; the
recurrent cells LSTMCell, OptimizedLSTMCell, GRUCell, SimpleCell and RNN; the activations;
initializers.
"""

from flax.core.frozen_dict import FrozenDict
from flax.linen import initializers
from flax.linen.activation import *  # relu, gelu, softmax, ... as jax.nn names them
from flax.linen.attention import (
    MultiHeadAttention,
    MultiHeadDotProductAttention,
    SelfAttention,
    combine_masks,
    dot_product_attention,
    dot_product_attention_weights,
    make_attention_mask,
    make_causal_mask,
)
from flax.linen.combinators import Sequential
from flax.linen.linear import Conv, Dense, DenseGeneral, Embed
from flax.linen.module import DenyList, Module, Variable, compact, merge_param, nowrap
from flax.linen.normalization import BatchNorm, LayerNorm
from flax.linen.partitioning import with_logical_partitioning, with_partitioning
from flax.linen.pooling import avg_pool, max_pool, pool
from flax.linen.recurrent import GRUCell, LSTMCell, OptimizedLSTMCell, RNN, RNNCellBase, SimpleCell
from flax.linen.stochastic import Dropout
from flax.linen.transforms import broadcast, checkpoint, jit, remat, scan, vmap
