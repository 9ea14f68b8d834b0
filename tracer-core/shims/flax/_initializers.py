"""jax.nn.initializers as flax.linen and flax.nnx both re-export them, plus zeros_init/ones_init.

A tracelens shim of flax 0.12.8 over jax 0.10.2's jax.nn.initializers (which tracelens does
not model natively): each initializer is `init(key, shape, dtype=float32)` and draws what jax
draws, with jax's scale factors, so parameter shapes, dtypes and spreads match.
"""

import jax
import jax.numpy as jnp


def shaped(init):
    """Marks `init(key, shape, dtype)` as making an array of exactly `shape`: linen's `param`
    then checks an existing parameter against that shape, as flax does with eval_shape."""
    init.makes_shape_argument = True
    return init


def keyless(init):
    """Marks an initializer whose values do not depend on its key (zeros, ones, constant): what
    it makes inside linen's `scan`/`vmap` does not depend on a split key, which flax checks."""
    init.ignores_key = True
    return init


def zeros(key, shape, dtype=jnp.float32):
    return jnp.zeros(shape, dtype)


keyless(shaped(zeros))


def ones(key, shape, dtype=jnp.float32):
    return jnp.ones(shape, dtype)


keyless(shaped(ones))


def zeros_init():
    return zeros


def ones_init():
    return ones


def constant(value, dtype=jnp.float32):
    def init(key, shape, dtype=dtype):
        return jnp.full(shape, value, dtype=dtype)

    return keyless(shaped(init))


def normal(stddev=1e-2, dtype=jnp.float32):
    def init(key, shape, dtype=dtype):
        return jax.random.normal(key, shape, dtype) * jnp.array(stddev, dtype)

    return shaped(init)


def uniform(scale=1e-2, dtype=jnp.float32):
    def init(key, shape, dtype=dtype):
        return jax.random.uniform(key, shape, dtype) * jnp.array(scale, dtype)

    return shaped(init)


def truncated_normal(stddev=1e-2, dtype=jnp.float32, lower=-2.0, upper=2.0):
    def init(key, shape, dtype=dtype):
        return jax.random.truncated_normal(key, lower, upper, shape, dtype) * jnp.array(stddev, dtype)

    return shaped(init)


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    ndim = len(shape)
    if ndim <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {ndim}-dimensional weights tensor. Must be at least 2D.")
    in_axes = [in_axis] if isinstance(in_axis, int) else list(in_axis)
    out_axes = [out_axis] if isinstance(out_axis, int) else list(out_axis)
    batch_axes = [batch_axis] if isinstance(batch_axis, int) else list(batch_axis)
    in_axes = [a % ndim for a in in_axes]
    out_axes = [a % ndim for a in out_axes]
    batch_axes = [a % ndim for a in batch_axes]
    in_size = 1
    for a in in_axes:
        in_size = in_size * shape[a]
    out_size = 1
    for a in out_axes:
        out_size = out_size * shape[a]
    receptive = 1
    for a in range(ndim):
        if a not in in_axes and a not in out_axes and a not in batch_axes:
            receptive = receptive * shape[a]
    return in_size * receptive, out_size * receptive


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(), dtype=jnp.float32):
    def init(key, shape, dtype=dtype):
        shape = tuple(shape)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        elif mode == "fan_avg":
            denominator = (fan_in + fan_out) / 2
        else:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        variance = jnp.array(scale / denominator, dtype=dtype)
        if distribution == "truncated_normal":
            stddev = jnp.sqrt(variance) / jnp.array(0.87962566103423978, dtype)
            return jax.random.truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return jax.random.normal(key, shape, dtype) * jnp.sqrt(variance)
        if distribution == "uniform":
            return jax.random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

    return shaped(init)


def orthogonal(scale=1.0, column_axis=-1, dtype=jnp.float32):
    """Matrices with orthonormal rows or columns (whichever side is smaller), as
    jax.random.orthogonal draws them: the Q of a QR of normal draws, signs fixed by R."""

    def init(key, shape, dtype=dtype):
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if 0 in shape:
            return jnp.zeros(shape, dtype)
        n_cols = shape[column_axis]
        n_rows = 1
        for d in shape:
            n_rows = n_rows * d
        n_rows = n_rows // n_cols
        z = jax.random.normal(key, (max(n_rows, n_cols), min(n_rows, n_cols)), dtype)
        q, r = jnp.linalg.qr(z)
        q = q * jnp.sign(jnp.diagonal(r))
        if n_rows < n_cols:
            q = q.T
        axis = column_axis % len(shape)
        q = jnp.reshape(q, tuple([shape[i] for i in range(len(shape)) if i != axis]) + (n_cols,))
        return jnp.array(scale, dtype) * jnp.moveaxis(q, -1, column_axis)

    return shaped(init)


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=jnp.float32):
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=jnp.float32):
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=jnp.float32):
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=jnp.float32):
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=jnp.float32):
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=jnp.float32):
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal
