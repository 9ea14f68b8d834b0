"""flax's pooling functions (nnx.avg_pool, nnx.max_pool, nnx.min_pool), written as flax writes
them on lax.reduce_window. tracelens does not model reduce_window yet, so their results are
unknown; defining them keeps a module that holds one (`partial(nnx.avg_pool, ...)`) known."""

import jax.numpy as jnp
from jax import lax


def pool(inputs, init, reduce_fn, window_shape, strides, padding):
    window_shape = tuple(window_shape)
    strides = tuple(strides) if strides is not None else (1,) * len(window_shape)
    dims = (1,) + window_shape + (1,)
    strides = (1,) + strides + (1,)
    single = inputs.ndim == len(window_shape) + 1
    if single:
        inputs = inputs[None]
    y = lax.reduce_window(inputs, init, reduce_fn, dims, strides, padding)
    if single:
        y = jnp.squeeze(y, axis=0)
    return y


def avg_pool(inputs, window_shape, strides=None, padding="VALID", count_include_pad=True):
    size = 1
    for w in window_shape:
        size = size * w
    return pool(inputs, 0.0, lax.add, window_shape, strides, padding) / size


def max_pool(inputs, window_shape, strides=None, padding="VALID"):
    return pool(inputs, -jnp.inf, lax.max, window_shape, strides, padding)


def min_pool(inputs, window_shape, strides=None, padding="VALID"):
    return pool(inputs, jnp.inf, lax.min, window_shape, strides, padding)
