"""flax.linen's Dense, DenseGeneral, Embed and Conv (flax/linen/linear.py), as a tracelens shim
of flax 0.12.8: same fields and defaults, same parameter names, shapes and dtypes, same
dot_general and conv_general_dilated."""

import jax.numpy as jnp
from jax import lax

from flax import _unknown
from flax.linen import initializers
from flax.linen.dtypes import promote_dtype
from flax.linen.module import Module, compact

default_kernel_init = initializers.lecun_normal()
default_embed_init = initializers.variance_scaling(1.0, "fan_in", "normal", out_axis=0)


class Dense(Module):
    features: int
    use_bias: bool = True
    dtype: object = None
    param_dtype: object = jnp.float32
    precision: object = None
    kernel_init: object = default_kernel_init
    bias_init: object = initializers.zeros_init()
    promote_dtype: object = promote_dtype
    dot_general: object = None
    dot_general_cls: object = None

    @compact
    def __call__(self, inputs):
        kernel = self.param("kernel", self.kernel_init, (jnp.shape(inputs)[-1], self.features), self.param_dtype)
        if self.use_bias:
            bias = self.param("bias", self.bias_init, (self.features,), self.param_dtype)
        else:
            bias = None
        inputs, kernel, bias = self.promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        y = _dot_general(self)(inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())), precision=self.precision)
        if bias is not None:
            y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        return y


class Embed(Module):
    num_embeddings: int
    features: int
    dtype: object = None
    param_dtype: object = jnp.float32
    embedding_init: object = default_embed_init
    promote_dtype: object = promote_dtype

    def setup(self):
        self.embedding = self.param("embedding", self.embedding_init, (self.num_embeddings, self.features), self.param_dtype)

    def __call__(self, inputs):
        if inputs.dtype.kind not in ("i", "u"):
            raise ValueError("Input type must be an integer or unsigned integer.")
        (embedding,) = self.promote_dtype(self.embedding, dtype=self.dtype, inexact=False)
        if self.num_embeddings == 1:
            return jnp.broadcast_to(embedding, inputs.shape + (self.features,))
        return jnp.take(embedding, inputs, axis=0)

    def attend(self, query):
        query, embedding = promote_dtype(query, self.embedding, dtype=self.dtype)
        return jnp.dot(query, embedding.T)


def _canonicalize_padding(padding, rank):
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int):
        return [(padding, padding)] * rank
    if isinstance(padding, (list, tuple)) and len(padding) == rank:
        pairs = []
        for p in padding:
            if isinstance(p, int):
                pairs.append((p, p))
            elif isinstance(p, tuple) and len(p) == 2:
                pairs.append(p)
            else:
                break
        if len(pairs) == rank:
            return pairs
    raise ValueError(
        f"Invalid padding format: {padding}, should be str, int, or a sequence of len {rank} "
        "where each element is an int or pair of ints."
    )


def _conv_dimension_numbers(ndim):
    # flax's ConvDimensionNumbers (channels last: lhs (0, ndim-1, 1, ...), rhs (ndim-1,
    # ndim-2, 0, ...)) written as the spec strings that give the same axes; a plain tuple of
    # axis tuples is not one JAX accepts, and a reproducer replays this call.
    spatial = "DHWABEFGJKLMPQRSTUVXYZ"[: ndim - 2]
    return ("N" + spatial + "C", spatial + "IO", "N" + spatial + "C")


class Conv(Module):
    """flax.linen.Conv: `lax.conv_general_dilated` of channels-last inputs with any number of
    batch axes (flattened into one, as flax does). Unshared weights (ConvLocal) are not
    modelled."""

    features: int
    kernel_size: object
    strides: object = 1
    padding: object = "SAME"
    input_dilation: object = 1
    kernel_dilation: object = 1
    feature_group_count: int = 1
    use_bias: bool = True
    mask: object = None
    dtype: object = None
    param_dtype: object = jnp.float32
    precision: object = None
    kernel_init: object = default_kernel_init
    bias_init: object = initializers.zeros_init()
    promote_dtype: object = promote_dtype
    conv_general_dilated: object = None
    conv_general_dilated_cls: object = None

    @compact
    def __call__(self, inputs):
        if isinstance(self.kernel_size, int):
            kernel_size = (self.kernel_size,)
        else:
            kernel_size = tuple(self.kernel_size)
        n = len(kernel_size)

        def maybe_broadcast(x):
            if x is None:
                x = 1
            if isinstance(x, int):
                return (x,) * n
            return tuple(x)

        num_batch_dimensions = inputs.ndim - (n + 1)
        if num_batch_dimensions != 1:
            input_batch_shape = inputs.shape[:num_batch_dimensions]
            inputs = jnp.reshape(inputs, (-1,) + inputs.shape[num_batch_dimensions:])
        strides = maybe_broadcast(self.strides)
        input_dilation = maybe_broadcast(self.input_dilation)
        kernel_dilation = maybe_broadcast(self.kernel_dilation)
        padding = _canonicalize_padding(self.padding, n)
        if padding in ("CIRCULAR", "REFLECT"):
            dilated = [(k - 1) * d + 1 for k, d in zip(kernel_size, kernel_dilation)]
            pads = [(0, 0)] + [((k - 1) // 2, k // 2) for k in dilated] + [(0, 0)]
            inputs = jnp.pad(inputs, pads, mode={"CIRCULAR": "wrap", "REFLECT": "reflect"}[padding])
            padding = "VALID"
        elif padding == "CAUSAL":
            if n != 1:
                raise ValueError("Causal padding is only implemented for 1D convolutions.")
            inputs = jnp.pad(inputs, [(0, 0), (kernel_dilation[0] * (kernel_size[0] - 1), 0), (0, 0)])
            padding = "VALID"
        in_features = jnp.shape(inputs)[-1]
        kernel_shape = kernel_size + (in_features // self.feature_group_count, self.features)
        if self.mask is not None and self.mask.shape != kernel_shape:
            raise ValueError(
                f"Mask needs to have the same shape as weights. Shapes are: {self.mask.shape}, {kernel_shape}"
            )
        kernel = self.param("kernel", self.kernel_init, kernel_shape, self.param_dtype)
        if self.mask is not None:
            kernel *= self.mask
        bias = self.param("bias", self.bias_init, (self.features,), self.param_dtype) if self.use_bias else None
        inputs, kernel, bias = self.promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        if self.conv_general_dilated_cls is not None:
            conv = self.conv_general_dilated_cls()
        elif self.conv_general_dilated is not None:
            conv = self.conv_general_dilated
        else:
            conv = lax.conv_general_dilated
        y = conv(
            inputs,
            kernel,
            strides,
            padding,
            lhs_dilation=input_dilation,
            rhs_dilation=kernel_dilation,
            dimension_numbers=_conv_dimension_numbers(inputs.ndim),
            feature_group_count=self.feature_group_count,
            precision=self.precision,
        )
        if bias is not None:
            y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        if num_batch_dimensions != 1:
            y = jnp.reshape(y, input_batch_shape + y.shape[1:])
        return y


def _dot_general(module):
    """The `dot_general` a Dense or DenseGeneral calls: its class's instance, its function, or
    `lax.dot_general`, as flax chooses."""
    if module.dot_general_cls is not None:
        return module.dot_general_cls()
    if module.dot_general is not None:
        return module.dot_general
    return lax.dot_general


def _canonicalize_tuple(x):
    if isinstance(x, (list, tuple)):
        return tuple(x)
    return (x,)


class DenseGeneral(Module):
    features: object
    axis: object = -1
    batch_dims: object = ()
    use_bias: bool = True
    dtype: object = None
    param_dtype: object = jnp.float32
    kernel_init: object = default_kernel_init
    bias_init: object = initializers.zeros_init()
    precision: object = None
    promote_dtype: object = promote_dtype
    dot_general: object = None
    dot_general_cls: object = None

    @compact
    def __call__(self, inputs):
        features = _canonicalize_tuple(self.features)
        axis = tuple(sorted(a % inputs.ndim for a in _canonicalize_tuple(self.axis)))
        if _canonicalize_tuple(self.batch_dims):
            # batch_dims: not modelled, the result is unknown.
            return _unknown.result(inputs)
        n_axis = len(axis)
        n_features = len(features)
        kernel_init = self.kernel_init
        bias_init = self.bias_init

        def kernel_init_wrap(rng, shape, dtype=jnp.float32):
            fan_in = 1
            for size in shape[:n_axis]:
                fan_in = fan_in * size
            fan_out = 1
            for size in shape[n_axis:]:
                fan_out = fan_out * size
            return jnp.reshape(kernel_init(rng, (fan_in, fan_out), dtype), shape)

        initializers.shaped(kernel_init_wrap)

        kernel_shape = tuple(inputs.shape[ax] for ax in axis) + features
        kernel = self.param("kernel", kernel_init_wrap, kernel_shape, self.param_dtype)
        if self.use_bias:

            def bias_init_wrap(rng, shape, dtype=jnp.float32):
                size = 1
                for s in shape:
                    size = size * s
                return jnp.reshape(bias_init(rng, (size,), dtype), shape)

            initializers.shaped(bias_init_wrap)

            bias = self.param("bias", bias_init_wrap, features, self.param_dtype)
        else:
            bias = None
        inputs, kernel, bias = self.promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        contract_ind = tuple(range(n_axis))
        out = _dot_general(self)(inputs, kernel, ((axis, contract_ind), ((), ())), precision=self.precision)
        if bias is not None:
            expanded = tuple(1 for ax in range(inputs.ndim) if ax not in axis)
            out += jnp.reshape(bias, expanded + features)
        return out
