"""flax.nnx's layers as tracelens models them (flax 0.12.8): the same Params, shapes, dtypes,
initialisers and order of operations, so a layer fed the wrong width fails where flax does."""

import jax
import jax.numpy as jnp
from jax import lax

from flax.nnx import initializers
from flax.nnx._graph import Module
from flax.nnx._rnglib import RngStream, Rngs
from flax.nnx._variables import BatchStat, Param

default_kernel_init = initializers.lecun_normal()
default_bias_init = initializers.zeros_init()
default_embed_init = initializers.variance_scaling(1.0, "fan_in", "normal", out_axis=0)


def _kind(dtype):
    return jnp.zeros((), dtype).dtype.kind


def _canonicalize_dtype(args, dtype=None, inexact=True):
    if dtype is None:
        dtype = jnp.result_type(*[jnp.asarray(x) for x in args if x is not None])
        if inexact and _kind(dtype) not in "fc":
            dtype = jnp.promote_types(jnp.float32, dtype)
    if inexact and _kind(dtype) not in "fc":
        raise ValueError(f"Dtype must be inexact: {dtype}")
    return dtype


def promote_dtype(args, *, dtype=None, inexact=True):
    dtype = _canonicalize_dtype(args, dtype=dtype, inexact=inexact)
    return tuple([jnp.asarray(x, dtype) if x is not None else None for x in args])


class Linear(Module):
    __tracelens_summary__ = "in_features={in_features}, out_features={out_features}"

    def __init__(
        self,
        in_features,
        out_features,
        *,
        use_bias=True,
        dtype=None,
        param_dtype=jnp.float32,
        precision=None,
        kernel_init=default_kernel_init,
        bias_init=default_bias_init,
        rngs,
        **kwargs,
    ):
        self.kernel = Param(kernel_init(rngs.params(), (in_features, out_features), param_dtype))
        if use_bias:
            self.bias = Param(bias_init(rngs.params(), (out_features,), param_dtype))
        else:
            self.bias = None
        self.in_features = in_features
        self.out_features = out_features
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision

    def __call__(self, inputs, out_sharding=None):
        kernel = self.kernel[...]
        bias = self.bias[...] if self.bias is not None else None
        inputs, kernel, bias = promote_dtype((inputs, kernel, bias), dtype=self.dtype)
        y = lax.dot_general(inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())), precision=self.precision)
        if bias is not None:
            y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        return y


class Embed(Module):
    __tracelens_summary__ = "num_embeddings={num_embeddings}, features={features}"

    def __init__(self, num_embeddings, features, *, dtype=None, param_dtype=jnp.float32, embedding_init=default_embed_init, rngs, **kwargs):
        self.embedding = Param(embedding_init(rngs.params(), (num_embeddings, features), param_dtype))
        self.num_embeddings = num_embeddings
        self.features = features
        self.dtype = dtype or self.embedding.dtype
        self.param_dtype = param_dtype

    def __call__(self, inputs, out_sharding=None):
        if _kind(inputs.dtype) not in "iu":
            raise ValueError("Input type must be an integer or unsigned integer.")
        (embedding,) = promote_dtype((self.embedding[...],), dtype=self.dtype, inexact=False)
        if self.num_embeddings == 1:
            return jnp.broadcast_to(embedding, inputs.shape + (self.features,))
        return jnp.take(embedding, inputs, axis=0)

    def attend(self, query, out_sharding=None):
        query, embedding = promote_dtype((query, self.embedding[...]), dtype=self.dtype)
        return jnp.dot(query, embedding.T)


def _canonicalize_axes(rank, axes):
    if not isinstance(axes, (tuple, list)):
        axes = (axes,)
    return tuple(sorted(set([rank + a if a < 0 else a for a in axes])))


def _compute_stats(x, axes, dtype, use_fast_variance=True):
    if dtype is None:
        dtype = jnp.result_type(x)
    dtype = jnp.promote_types(dtype, jnp.float32)
    x = jnp.asarray(x, dtype)
    axes = _canonicalize_axes(x.ndim, axes)
    if use_fast_variance:
        mu = x.mean(axes)
        mu2 = lax.square(x).mean(axes)
        var = jnp.maximum(0.0, mu2 - lax.square(mu))
    else:
        mu = x.mean(axes)
        var = lax.square(x - jnp.expand_dims(mu, axes)).mean(axes)
    return mu, var


def _normalize(x, mean, var, scale, bias, reduction_axes, feature_axes, dtype, epsilon):
    reduction_axes = _canonicalize_axes(x.ndim, reduction_axes)
    feature_axes = _canonicalize_axes(x.ndim, feature_axes)
    stats_shape = list(x.shape)
    for axis in reduction_axes:
        stats_shape[axis] = 1
    mean = mean.reshape(stats_shape)
    var = var.reshape(stats_shape)
    feature_shape = [1] * x.ndim
    for ax in feature_axes:
        feature_shape[ax] = x.shape[ax]
    y = x - mean
    mul = lax.rsqrt(var + epsilon)
    args = [x]
    if scale is not None:
        scale = scale.reshape(feature_shape)
        mul *= scale
        args.append(scale)
    y *= mul
    if bias is not None:
        bias = bias.reshape(feature_shape)
        y += bias
        args.append(bias)
    dtype = _canonicalize_dtype(args, dtype=dtype)
    return jnp.asarray(y, dtype)


class BatchNorm(Module):
    __tracelens_summary__ = "num_features={num_features}"

    def __init__(
        self,
        num_features,
        *,
        use_running_average=False,
        axis=-1,
        momentum=0.99,
        epsilon=1e-5,
        dtype=None,
        param_dtype=jnp.float32,
        use_bias=True,
        use_scale=True,
        bias_init=initializers.zeros_init(),
        scale_init=initializers.ones_init(),
        use_fast_variance=True,
        rngs,
        **kwargs,
    ):
        feature_shape = (num_features,)
        self.mean = BatchStat(jnp.zeros(feature_shape, jnp.float32))
        self.var = BatchStat(jnp.ones(feature_shape, jnp.float32))
        self.scale = Param(scale_init(rngs.params(), feature_shape, param_dtype)) if use_scale else None
        self.bias = Param(bias_init(rngs.params(), feature_shape, param_dtype)) if use_bias else None
        self.num_features = num_features
        self.use_running_average = use_running_average
        self.axis = axis
        self.momentum = momentum
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.use_fast_variance = use_fast_variance

    def __call__(self, x, use_running_average=None, *, mask=None):
        if use_running_average is None:
            use_running_average = self.use_running_average
        feature_axes = _canonicalize_axes(x.ndim, self.axis)
        reduction_axes = tuple([i for i in range(x.ndim) if i not in feature_axes])
        scale = self.scale[...] if self.scale is not None else None
        bias = self.bias[...] if self.bias is not None else None
        x, mean, var, scale, bias = promote_dtype((x, self.mean[...], self.var[...], scale, bias), dtype=self.dtype)
        if not use_running_average:
            mean, var = _compute_stats(x, reduction_axes, self.dtype, self.use_fast_variance)
            self.mean[...] = lax.stop_gradient(self.momentum * self.mean[...] + (1 - self.momentum) * mean)
            self.var[...] = lax.stop_gradient(self.momentum * self.var[...] + (1 - self.momentum) * var)
        return _normalize(x, mean, var, scale, bias, reduction_axes, feature_axes, self.dtype, self.epsilon)


class LayerNorm(Module):
    __tracelens_summary__ = "num_features={num_features}"

    def __init__(
        self,
        num_features,
        *,
        epsilon=1e-6,
        dtype=None,
        param_dtype=jnp.float32,
        use_bias=True,
        use_scale=True,
        bias_init=initializers.zeros_init(),
        scale_init=initializers.ones_init(),
        reduction_axes=-1,
        feature_axes=-1,
        use_fast_variance=True,
        rngs,
        **kwargs,
    ):
        feature_shape = (num_features,)
        self.scale = Param(scale_init(rngs.params(), feature_shape, param_dtype)) if use_scale else None
        self.bias = Param(bias_init(rngs.params(), feature_shape, param_dtype)) if use_bias else None
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.feature_axes = feature_axes
        self.use_fast_variance = use_fast_variance

    def __call__(self, x, *, mask=None):
        scale = self.scale[...] if self.scale is not None else None
        bias = self.bias[...] if self.bias is not None else None
        mean, var = _compute_stats(x, self.reduction_axes, self.dtype, self.use_fast_variance)
        return _normalize(x, mean, var, scale, bias, self.reduction_axes, self.feature_axes, self.dtype, self.epsilon)


class Dropout(Module):
    __tracelens_summary__ = "rate={rate}"

    def __init__(self, rate, *, broadcast_dims=(), deterministic=False, rng_collection="dropout", rngs=None):
        self.rate = rate
        self.broadcast_dims = broadcast_dims
        self.deterministic = deterministic
        self.rng_collection = rng_collection
        if rngs is None:
            self.rngs = None
        elif isinstance(rngs, RngStream):
            self.rngs = rngs.fork()
        else:
            self.rngs = rngs[rng_collection].fork()

    def __call__(self, inputs, *, deterministic=None, rngs=None):
        if deterministic is None:
            deterministic = self.deterministic
        if (self.rate == 0.0) or deterministic:
            return inputs
        if self.rate == 1.0:
            return jnp.zeros_like(inputs)
        if rngs is None:
            rngs = self.rngs
        if rngs is None:
            raise ValueError(
                "`deterministic` is False, but no `rngs` argument was provided to Dropout\n"
                "          as either a __call__ argument or class attribute."
            )
        if isinstance(rngs, Rngs):
            key = rngs[self.rng_collection]()
        elif isinstance(rngs, RngStream):
            key = rngs()
        else:
            key = rngs
        keep_prob = 1.0 - self.rate
        broadcast_shape = list(inputs.shape)
        for dim in self.broadcast_dims:
            broadcast_shape[dim] = 1
        mask = jax.random.bernoulli(key, p=keep_prob, shape=broadcast_shape)
        mask = jnp.broadcast_to(mask, inputs.shape)
        return lax.select(mask, inputs / keep_prob, jnp.zeros_like(inputs))


class Conv(Module):
    __tracelens_summary__ = "in_features={in_features}, out_features={out_features}, kernel_size={kernel_size}"

    def __init__(
        self,
        in_features,
        out_features,
        kernel_size,
        strides=1,
        *,
        padding="SAME",
        input_dilation=1,
        kernel_dilation=1,
        feature_group_count=1,
        use_bias=True,
        dtype=None,
        param_dtype=jnp.float32,
        precision=None,
        kernel_init=default_kernel_init,
        bias_init=default_bias_init,
        rngs,
        **kwargs,
    ):
        if isinstance(kernel_size, int):
            kernel_size = (kernel_size,)
        else:
            kernel_size = tuple(kernel_size)
        self.kernel_shape = kernel_size + (in_features // feature_group_count, out_features)
        self.kernel = Param(kernel_init(rngs.params(), self.kernel_shape, param_dtype))
        self.bias = Param(bias_init(rngs.params(), (out_features,), param_dtype)) if use_bias else None
        self.in_features = in_features
        self.out_features = out_features
        self.kernel_size = kernel_size
        self.strides = strides
        self.padding = padding
        self.input_dilation = input_dilation
        self.kernel_dilation = kernel_dilation
        self.feature_group_count = feature_group_count
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision

    def __call__(self, inputs, out_sharding=None):
        kernel_size = self.kernel_size

        def maybe_broadcast(x):
            if x is None:
                x = 1
            if isinstance(x, int):
                return (x,) * len(kernel_size)
            return tuple(x)

        num_batch_dimensions = inputs.ndim - (len(kernel_size) + 1)
        input_batch_shape = None
        if num_batch_dimensions != 1:
            input_batch_shape = inputs.shape[:num_batch_dimensions]
            inputs = jnp.reshape(inputs, (-1,) + inputs.shape[num_batch_dimensions:])
        strides = maybe_broadcast(self.strides)
        input_dilation = maybe_broadcast(self.input_dilation)
        kernel_dilation = maybe_broadcast(self.kernel_dilation)
        padding = self.padding
        if isinstance(padding, int):
            padding = [(padding, padding)] * len(kernel_size)
        elif isinstance(padding, str):
            padding = padding.upper()
        else:
            padding = [(p, p) if isinstance(p, int) else tuple(p) for p in padding]
        spatial = "DHW"[3 - len(kernel_size) :]
        dimension_numbers = ("N" + spatial + "C", spatial + "IO", "N" + spatial + "C")
        kernel = self.kernel[...]
        bias = self.bias[...] if self.bias is not None else None
        inputs, kernel, bias = promote_dtype((inputs, kernel, bias), dtype=self.dtype)
        y = lax.conv_general_dilated(
            inputs,
            kernel,
            strides,
            padding,
            lhs_dilation=input_dilation,
            rhs_dilation=kernel_dilation,
            dimension_numbers=dimension_numbers,
            feature_group_count=self.feature_group_count,
            precision=self.precision,
        )
        if input_batch_shape is not None:
            y = jnp.reshape(y, input_batch_shape + y.shape[1:])
        if bias is not None:
            y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        return y
