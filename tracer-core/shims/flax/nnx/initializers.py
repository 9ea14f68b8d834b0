"""flax.nnx.initializers (jax.nn.initializers) as tracelens models them: same shapes, dtypes and
order of random draws as JAX 0.10.2."""

import math

import jax
import jax.numpy as jnp


def zeros_init():
    def init(key, shape, dtype=jnp.float32):
        return jnp.zeros(shape, dtype)

    return init


def ones_init():
    def init(key, shape, dtype=jnp.float32):
        return jnp.ones(shape, dtype)

    return init


zeros = zeros_init()
ones = ones_init()


def constant(value, dtype=jnp.float32):
    def init(key, shape, dtype=dtype):
        return jnp.full(shape, value, dtype=dtype)

    return init


def normal(stddev=1e-2, dtype=jnp.float32):
    def init(key, shape, dtype=dtype):
        return jax.random.normal(key, shape, dtype) * stddev

    return init


def uniform(scale=1e-2, dtype=jnp.float32):
    def init(key, shape, dtype=dtype):
        return jax.random.uniform(key, shape, dtype) * scale

    return init


def truncated_normal(stddev=1e-2, dtype=jnp.float32, lower=-2.0, upper=2.0):
    def init(key, shape, dtype=dtype):
        return jax.random.truncated_normal(key, lower, upper, shape, dtype) * stddev

    return init


def _fans(shape, in_axis, out_axis):
    if len(shape) <= 1:
        raise ValueError(
            f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor with default in_axis. "
            "Must be at least 2D or specify in_axis explicitly."
        )
    in_size = shape[in_axis]
    out_size = shape[out_axis]
    receptive = 1
    for i in range(len(shape)):
        if i != in_axis % len(shape) and i != out_axis % len(shape):
            receptive = receptive * shape[i]
    return in_size * receptive, out_size * receptive


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, dtype=jnp.float32):
    def init(key, shape, dtype=dtype):
        shape = tuple(shape)
        fan_in, fan_out = _fans(shape, in_axis, out_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        else:
            denominator = (fan_in + fan_out) / 2
        variance = jnp.array(scale / denominator, dtype=dtype)
        if distribution == "truncated_normal":
            stddev = jnp.sqrt(variance) / jnp.array(0.87962566103423978, dtype)
            return jax.random.truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return jax.random.normal(key, shape, dtype) * jnp.sqrt(variance)
        return jax.random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)

    return init


def lecun_normal(in_axis=-2, out_axis=-1, dtype=jnp.float32):
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, dtype=jnp.float32):
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, dtype=jnp.float32):
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, dtype)


def glorot_uniform(in_axis=-2, out_axis=-1, dtype=jnp.float32):
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, dtype=jnp.float32):
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, dtype)


def he_uniform(in_axis=-2, out_axis=-1, dtype=jnp.float32):
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, dtype)


xavier_normal = glorot_normal
xavier_uniform = glorot_uniform
kaiming_normal = he_normal
kaiming_uniform = he_uniform
