"""equinox.nn.Conv, Conv1d, Conv2d and Conv3d.

A shim of equinox 0.13.8 (equinox/nn/_conv.py) for tracelens, not equinox's code. Inputs are
unbatched, `(in_channels, *spatial)`, as in equinox; the convolution is
`lax.conv_general_dilated` of the input with a batch axis of one. Padding modes other than
"ZEROS" and "SAME_LOWER" padding give an unknown result.
"""

import math

import jax
import jax.numpy as jnp
from jax import lax

from equinox._module import Module, field
from equinox.nn._linear import default_floating_dtype, default_init
from equinox import _unknown


def _ntuple(value, n):
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"Length of {value} (length {len(value)}) is not equal to {n}")
        return tuple(value)
    return (value,) * n


def _padding_init(padding, n):
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int):
        return tuple([(padding, padding) for _ in range(n)])
    if len(padding) != n:
        raise ValueError(f"Length of {padding} (length {len(padding)}) is not equal to {n}")
    out = []
    for p in padding:
        out.append((p, p) if isinstance(p, int) else tuple(p))
    return tuple(out)


class Conv(Module):
    __tracelens_summary__ = "in_channels={in_channels}, out_channels={out_channels}, kernel_size={kernel_size}"

    num_spatial_dims: int = field(static=True)
    weight: jax.Array
    bias: object
    in_channels: int = field(static=True)
    out_channels: int = field(static=True)
    kernel_size: tuple = field(static=True)
    stride: tuple = field(static=True)
    padding: object = field(static=True)
    dilation: tuple = field(static=True)
    groups: int = field(static=True)
    use_bias: bool = field(static=True)
    padding_mode: str = field(static=True)

    def __init__(
        self,
        num_spatial_dims,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        use_bias=True,
        padding_mode="ZEROS",
        dtype=None,
        *,
        key,
    ):
        kernel_size = _ntuple(kernel_size, num_spatial_dims)
        stride = _ntuple(stride, num_spatial_dims)
        dilation = _ntuple(dilation, num_spatial_dims)
        if in_channels % groups != 0:
            raise ValueError(f"`in_channels` (={in_channels}) must be divisible by `groups` (={groups}).")
        dtype = default_floating_dtype() if dtype is None else dtype
        wkey, bkey = jax.random.split(key, 2)
        grouped_in_channels = in_channels // groups
        lim = 1 / math.sqrt(grouped_in_channels * math.prod(kernel_size))
        self.weight = default_init(wkey, (out_channels, grouped_in_channels) + kernel_size, dtype, lim)
        bshape = (out_channels,) + (1,) * num_spatial_dims
        self.bias = default_init(bkey, bshape, dtype, lim) if use_bias else None
        self.num_spatial_dims = num_spatial_dims
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = _padding_init(padding, num_spatial_dims)
        self.dilation = dilation
        self.groups = groups
        self.use_bias = use_bias
        self.padding_mode = padding_mode.upper()

    def __call__(self, x, *, key=None):
        unbatched_rank = self.num_spatial_dims + 1
        if x.ndim != unbatched_rank:
            raise ValueError(f"Input to `Conv` needs to have rank {unbatched_rank},", f" but input has shape {x.shape}.")
        if self.padding_mode != "ZEROS" or self.padding == "SAME_LOWER":
            return _unknown.result(self, x)
        x = jnp.expand_dims(x, axis=0)
        x = lax.conv_general_dilated(
            lhs=x,
            rhs=self.weight,
            window_strides=self.stride,
            padding=self.padding,
            rhs_dilation=self.dilation,
            feature_group_count=self.groups,
        )
        x = jnp.squeeze(x, axis=0)
        if self.use_bias:
            x = x + self.bias
        return x


class Conv1d(Conv):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, use_bias=True, padding_mode="ZEROS", dtype=None, *, key):
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, use_bias, padding_mode, dtype, key=key)


class Conv2d(Conv):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, use_bias=True, padding_mode="ZEROS", dtype=None, *, key):
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, use_bias, padding_mode, dtype, key=key)


class Conv3d(Conv):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, use_bias=True, padding_mode="ZEROS", dtype=None, *, key):
        super().__init__(3, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, use_bias, padding_mode, dtype, key=key)
