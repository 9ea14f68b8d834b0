"""flax.linen's pooling functions (flax/linen/pooling.py), as a tracelens shim of flax 0.12.8,
over strided slices (jax.lax.reduce_window is not modelled)."""

import jax.numpy as jnp
from jax import lax

from flax.linen import _windows


def _pool(inputs, window_shape, strides, padding, init, combine):
    window_shape = tuple(window_shape)
    n = len(window_shape)
    strides = tuple(strides) if strides is not None else (1,) * n
    unbatched = inputs.ndim == n + 1
    if unbatched:
        inputs = jnp.expand_dims(inputs, 0)
    dilation = (1,) * n
    pads = _windows.padding_pairs(padding, inputs.shape[1:-1], window_shape, strides, dilation)
    x = _windows.pad_spatial(inputs, pads, init)
    out = _windows.out_sizes(x.shape[1:-1], window_shape, strides, dilation)
    y = None
    for position in _windows.positions(window_shape):
        patch = _windows.window_slice(x, position, out, strides, dilation)
        y = patch if y is None else combine(y, patch)
    if unbatched:
        y = jnp.squeeze(y, axis=0)
    return y


def max_pool(inputs, window_shape, strides=None, padding="VALID"):
    return _pool(inputs, window_shape, strides, padding, -jnp.inf, lax.max)


def avg_pool(inputs, window_shape, strides=None, padding="VALID", count_include_pad=True):
    y = _pool(inputs, window_shape, strides, padding, 0.0, lax.add)
    if count_include_pad:
        size = 1
        for k in window_shape:
            size = size * k
        return y / size
    ones = jnp.ones(inputs.shape[:-1] + (1,), inputs.dtype)
    counts = _pool(ones, window_shape, strides, padding, 0.0, lax.add)
    return y / counts
