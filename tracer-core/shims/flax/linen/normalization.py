"""flax.linen's LayerNorm and BatchNorm (flax/linen/normalization.py), as a tracelens shim of
flax 0.12.8: statistics in float32, BatchNorm's running averages in `batch_stats`."""

import jax.numpy as jnp
from jax import lax

from flax.linen import initializers
from flax.linen.dtypes import canonicalize_dtype
from flax.linen.module import Module, compact, merge_param


def _axes(ndim, axes):
    if isinstance(axes, int):
        axes = (axes,)
    return tuple(sorted(a % ndim for a in axes))


def _compute_stats(x, axes, dtype):
    if dtype is None:
        dtype = jnp.result_type(x)
    dtype = jnp.promote_types(dtype, jnp.float32)
    x = jnp.asarray(x, dtype)
    mean = jnp.mean(x, axes)
    mean2 = jnp.mean(lax.square(x), axes)
    var = jnp.maximum(0.0, mean2 - lax.square(mean))
    return mean, var


def _normalize(module, x, mean, var, reduction_axes, feature_axes, dtype, param_dtype, epsilon, use_bias, use_scale, bias_init, scale_init):
    stats_shape = list(x.shape)
    for axis in reduction_axes:
        stats_shape[axis] = 1
    mean = mean.reshape(stats_shape)
    var = var.reshape(stats_shape)
    feature_shape = [1] * x.ndim
    reduced_feature_shape = []
    for ax in feature_axes:
        feature_shape[ax] = x.shape[ax]
        reduced_feature_shape.append(x.shape[ax])
    y = x - mean
    mul = lax.rsqrt(var + epsilon)
    args = [x]
    if use_scale:
        scale = module.param("scale", scale_init, tuple(reduced_feature_shape), param_dtype).reshape(feature_shape)
        mul *= scale
        args.append(scale)
    y *= mul
    if use_bias:
        bias = module.param("bias", bias_init, tuple(reduced_feature_shape), param_dtype).reshape(feature_shape)
        y += bias
        args.append(bias)
    dtype = canonicalize_dtype(*args, dtype=dtype)
    return jnp.asarray(y, dtype)


class LayerNorm(Module):
    epsilon: float = 1e-6
    dtype: object = None
    param_dtype: object = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: object = initializers.zeros
    scale_init: object = initializers.ones
    reduction_axes: object = -1
    feature_axes: object = -1
    axis_name: object = None
    axis_index_groups: object = None
    use_fast_variance: bool = True
    force_float32_reductions: bool = True

    @compact
    def __call__(self, x):
        reduction_axes = _axes(x.ndim, self.reduction_axes)
        feature_axes = _axes(x.ndim, self.feature_axes)
        mean, var = _compute_stats(x, reduction_axes, self.dtype)
        return _normalize(
            self, x, mean, var, reduction_axes, feature_axes, self.dtype, self.param_dtype, self.epsilon,
            self.use_bias, self.use_scale, self.bias_init, self.scale_init,
        )


class BatchNorm(Module):
    use_running_average: object = None
    axis: int = -1
    momentum: float = 0.99
    epsilon: float = 1e-5
    dtype: object = None
    param_dtype: object = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: object = initializers.zeros
    scale_init: object = initializers.ones
    axis_name: object = None
    axis_index_groups: object = None
    use_fast_variance: bool = True
    force_float32_reductions: bool = True

    @compact
    def __call__(self, x, use_running_average=None):
        use_running_average = merge_param("use_running_average", self.use_running_average, use_running_average)
        feature_axes = _axes(x.ndim, self.axis)
        reduction_axes = tuple(i for i in range(x.ndim) if i not in feature_axes)
        feature_shape = [x.shape[ax] for ax in feature_axes]
        ra_mean = self.variable("batch_stats", "mean", lambda s: jnp.zeros(s, jnp.float32), feature_shape)
        ra_var = self.variable("batch_stats", "var", lambda s: jnp.ones(s, jnp.float32), feature_shape)
        if use_running_average:
            mean = ra_mean.value
            var = ra_var.value
        else:
            mean, var = _compute_stats(x, reduction_axes, self.dtype)
            if not self.is_initializing():
                ra_mean.value = self.momentum * ra_mean.value + (1 - self.momentum) * mean
                ra_var.value = self.momentum * ra_var.value + (1 - self.momentum) * var
        return _normalize(
            self, x, mean, var, reduction_axes, feature_axes, self.dtype, self.param_dtype, self.epsilon,
            self.use_bias, self.use_scale, self.bias_init, self.scale_init,
        )
