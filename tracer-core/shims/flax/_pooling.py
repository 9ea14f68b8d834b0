"""flax's pooling functions (flax/linen/pooling.py, re-exported by flax.nnx), as a tracelens
shim of flax 0.12.8: `pool`, `avg_pool`, `max_pool`, `min_pool` over any number of batch axes.

jax.lax.reduce_window is not modelled by tracelens; a window operation here is the sum (or max,
or min) over the window positions of strided slices of the padded input, which has the same
shape, dtype and values (up to summation order). A padding given as a string other than
'SAME' or 'VALID' gives an unknown result."""

import jax.numpy as jnp
from jax import lax

from flax import _unknown


def padding_pairs(padding, in_shape, window, strides, dilation):
    """flax's / lax.padtype_to_pads: (low, high) padding per spatial axis."""
    n = len(window)
    if isinstance(padding, str):
        if padding == "VALID":
            return [(0, 0)] * n
        if padding == "SAME":
            pads = []
            for size, k, s, d in zip(in_shape, window, strides, dilation):
                effective = (k - 1) * d + 1
                out = -(-size // s)
                total = max((out - 1) * s + effective - size, 0)
                pads.append((total // 2, total - total // 2))
            return pads
        return None
    if isinstance(padding, int):
        return [(padding, padding)] * n
    pairs = []
    for p in padding:
        if isinstance(p, int):
            pairs.append((p, p))
        else:
            pairs.append((p[0], p[1]))
    return pairs


def positions(window):
    """Every kernel position, in row-major order: [(0, 0), (0, 1), ...]."""
    out = [()]
    for k in window:
        out = [p + (i,) for p in out for i in range(k)]
    return out


def pad_spatial(x, pads, value):
    config = [(0, 0, 0)] + [(lo, hi, 0) for lo, hi in pads] + [(0, 0, 0)]
    return lax.pad(x, lax.convert_element_type(value, x.dtype), config)


def out_sizes(padded_shape, window, strides, dilation):
    sizes = []
    for size, k, s, d in zip(padded_shape, window, strides, dilation):
        effective = (k - 1) * d + 1
        sizes.append(max((size - effective) // s + 1, 0))
    return sizes


def window_slice(x, position, out, strides, dilation):
    """x[:, p*d : p*d + (out-1)*s + 1 : s, ..., :] for one kernel position."""
    start = [0]
    limit = [x.shape[0]]
    step = [1]
    for p, o, s, d in zip(position, out, strides, dilation):
        start.append(p * d)
        limit.append(p * d + (o - 1) * s + 1 if o > 0 else p * d)
        step.append(s)
    start.append(0)
    limit.append(x.shape[-1])
    step.append(1)
    return lax.slice(x, start, limit, step)


def pool(inputs, init, reduce_fn, window_shape, strides, padding):
    window_shape = tuple(window_shape)
    n = len(window_shape)
    strides = tuple(strides) if strides else (1,) * n
    if len(window_shape) != len(strides):
        raise AssertionError(f"len({window_shape}) must equal len({strides})")
    num_batch_dims = inputs.ndim - (n + 1)
    batch_shape = inputs.shape[:num_batch_dims]
    if num_batch_dims != 1:
        inputs = jnp.reshape(inputs, (-1,) + inputs.shape[num_batch_dims:])
    dilation = (1,) * n
    pads = padding_pairs(padding, inputs.shape[1:-1], window_shape, strides, dilation)
    if pads is None:
        return _unknown.result(inputs)
    x = pad_spatial(inputs, pads, init)
    out = out_sizes(x.shape[1:-1], window_shape, strides, dilation)
    y = None
    for position in positions(window_shape):
        patch = window_slice(x, position, out, strides, dilation)
        y = patch if y is None else reduce_fn(y, patch)
    if num_batch_dims != 1:
        y = jnp.reshape(y, batch_shape + y.shape[1:])
    return y


def avg_pool(inputs, window_shape, strides=None, padding="VALID", count_include_pad=True):
    y = pool(inputs, 0.0, lax.add, window_shape, strides, padding)
    if count_include_pad:
        size = 1
        for k in window_shape:
            size = size * k
        return y / size
    div_shape = inputs.shape[:-1] + (1,)
    if len(div_shape) - 2 == len(window_shape):
        div_shape = (1,) + div_shape[1:]
    return y / pool(jnp.ones(div_shape), 0.0, lax.add, window_shape, strides, padding)


def max_pool(inputs, window_shape, strides=None, padding="VALID"):
    return pool(inputs, -jnp.inf, lax.max, window_shape, strides, padding)


def min_pool(inputs, window_shape, strides=None, padding="VALID"):
    return pool(inputs, jnp.inf, lax.min, window_shape, strides, padding)
