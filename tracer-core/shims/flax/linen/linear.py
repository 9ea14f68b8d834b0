"""flax.linen's Dense and Embed (flax/linen/linear.py), as a tracelens shim of flax 0.12.8:
same fields and defaults, same parameter names, shapes and dtypes, same dot_general."""

import jax.numpy as jnp
from jax import lax

from flax import _unknown
from flax.linen import _windows, initializers
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

    @compact
    def __call__(self, inputs):
        kernel = self.param("kernel", self.kernel_init, (jnp.shape(inputs)[-1], self.features), self.param_dtype)
        if self.use_bias:
            bias = self.param("bias", self.bias_init, (self.features,), self.param_dtype)
        else:
            bias = None
        inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        y = lax.dot_general(inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())), precision=self.precision)
        if bias is not None:
            y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        return y


class Embed(Module):
    num_embeddings: int
    features: int
    dtype: object = None
    param_dtype: object = jnp.float32
    embedding_init: object = default_embed_init

    def setup(self):
        self.embedding = self.param("embedding", self.embedding_init, (self.num_embeddings, self.features), self.param_dtype)

    def __call__(self, inputs):
        if inputs.dtype.kind not in ("i", "u"):
            raise ValueError("Input type must be an integer or unsigned integer.")
        (embedding,) = promote_dtype(self.embedding, dtype=self.dtype, inexact=False)
        if self.num_embeddings == 1:
            return jnp.broadcast_to(embedding, inputs.shape + (self.features,))
        return jnp.take(embedding, inputs, axis=0)

    def attend(self, query):
        query, embedding = promote_dtype(query, self.embedding, dtype=self.dtype)
        return jnp.dot(query, embedding.T)


def _tuple(value, n):
    if isinstance(value, int):
        return (value,) * n
    if value is None:
        return (1,) * n
    return tuple(value)


class Conv(Module):
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

    @compact
    def __call__(self, inputs):
        if isinstance(self.kernel_size, int):
            raise TypeError(
                "Expected Conv kernel_size to be a tuple/list of integers (eg.: [3, 3]) but got "
                f"{self.kernel_size}."
            )
        kernel_size = tuple(self.kernel_size)
        n = len(kernel_size)
        num_batch_dimensions = inputs.ndim - (n + 1)
        if num_batch_dimensions == 0:
            inputs = jnp.expand_dims(inputs, 0)
        batch_shape = inputs.shape[: inputs.ndim - (n + 1)]
        if len(batch_shape) != 1:
            inputs = jnp.reshape(inputs, (-1,) + inputs.shape[inputs.ndim - (n + 1) :])
        strides = _tuple(self.strides, n)
        dilation = _tuple(self.kernel_dilation, n)
        in_features = jnp.shape(inputs)[-1]
        if in_features % self.feature_group_count != 0:
            raise ValueError(
                f"Input 1 must be divisible by feature_group_count {self.feature_group_count}, got {in_features}."
            )
        kernel_shape = kernel_size + (in_features // self.feature_group_count, self.features)
        kernel = self.param("kernel", self.kernel_init, kernel_shape, self.param_dtype)
        bias = self.param("bias", self.bias_init, (self.features,), self.param_dtype) if self.use_bias else None
        inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        pads = _windows.padding_pairs(self.padding, inputs.shape[1:-1], kernel_size, strides, dilation)
        if pads is None or self.feature_group_count != 1 or _tuple(self.input_dilation, n) != (1,) * n or self.mask is not None:
            # Circular padding, grouped or input-dilated convolutions: not modelled here.
            y = _unknown.result(inputs, kernel)
        else:
            x = _windows.pad_spatial(inputs, pads, 0)
            out = _windows.out_sizes(x.shape[1:-1], kernel_size, strides, dilation)
            y = None
            for position in _windows.positions(kernel_size):
                patch = _windows.window_slice(x, position, out, strides, dilation)
                term = lax.dot_general(patch, kernel[position], (((patch.ndim - 1,), (0,)), ((), ())), precision=self.precision)
                y = term if y is None else y + term
        if bias is not None:
            y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        if num_batch_dimensions == 0:
            y = jnp.squeeze(y, axis=0)
        elif num_batch_dimensions != 1:
            y = jnp.reshape(y, batch_shape + y.shape[1:])
        return y


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
        inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        contract_ind = tuple(range(n_axis))
        out = lax.dot_general(inputs, kernel, ((axis, contract_ind), ((), ())), precision=self.precision)
        if bias is not None:
            expanded = tuple(1 for ax in range(inputs.ndim) if ax not in axis)
            out += jnp.reshape(bias, expanded + features)
        return out
