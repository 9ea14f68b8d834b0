"""equinox.nn.Linear and Identity.

A shim of equinox 0.13.8 (equinox/nn/_linear.py) for tracelens, not equinox's code. Inputs
are unbatched, as in equinox: `Linear(784, 512)` takes a vector of 784 (use `jax.vmap` for a
batch), and applied to anything else it fails in `weight @ x` as equinox does.
"""

import math

import jax
import jax.numpy as jnp

from equinox._module import Module, field


def default_floating_dtype():
    # float32, or float64 under jax_enable_x64: the dtype jnp.zeros makes by default.
    return jnp.zeros(()).dtype


def default_init(key, shape, dtype, lim):
    return jax.random.uniform(key, shape, dtype, minval=-lim, maxval=lim)


class Linear(Module):
    __tracelens_summary__ = "in_features={in_features}, out_features={out_features}"

    weight: jax.Array
    bias: object
    in_features: object = field(static=True)
    out_features: object = field(static=True)
    use_bias: bool = field(static=True)

    def __init__(self, in_features, out_features, use_bias=True, dtype=None, *, key):
        dtype = default_floating_dtype() if dtype is None else dtype
        wkey, bkey = jax.random.split(key, 2)
        in_features_ = 1 if in_features == "scalar" else in_features
        out_features_ = 1 if out_features == "scalar" else out_features
        if in_features_ == 0:
            lim = 1.0
        else:
            lim = 1 / math.sqrt(in_features_)
        self.weight = default_init(wkey, (out_features_, in_features_), dtype, lim)
        self.bias = default_init(bkey, (out_features_,), dtype, lim) if use_bias else None
        self.in_features = in_features
        self.out_features = out_features
        self.use_bias = use_bias

    def __call__(self, x, *, key=None):
        if self.in_features == "scalar":
            if jnp.shape(x) != ():
                raise ValueError("x must have scalar shape")
            x = jnp.broadcast_to(x, (1,))
        x = self.weight @ x
        if self.bias is not None:
            x = x + self.bias
        if self.out_features == "scalar":
            x = jnp.squeeze(x)
        return x


class Identity(Module):
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, x, *, key=None):
        return x
