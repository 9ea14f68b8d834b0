"""Windows over the spatial axes of an NHWC-style array, for Conv and the poolings.

jax.lax.conv_general_dilated and reduce_window are not modelled by tracelens; a window
operation is the sum (or max) over the kernel positions of strided slices of the padded
input, which has the same shape, dtype and values (up to summation order)."""

from jax import lax


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
