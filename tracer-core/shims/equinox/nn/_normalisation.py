"""equinox.nn.LayerNorm.

A shim of equinox 0.13.8 (equinox/nn/_normalisation.py) for tracelens, not equinox's code.
"""

import jax
import jax.numpy as jnp

from equinox._module import Module, field

_SENTINEL = object()


class LayerNorm(Module):
    __tracelens_summary__ = "shape={shape}"

    shape: tuple = field(static=True)
    eps: float = field(static=True)
    use_weight: bool = field(static=True)
    use_bias: bool = field(static=True)
    weight: object
    bias: object

    def __init__(self, shape, eps=1e-5, use_weight=True, use_bias=True, dtype=None, *, elementwise_affine=None):
        if isinstance(shape, int):
            shape = (shape,)
        else:
            shape = tuple(shape)
        self.shape = shape
        self.eps = eps
        if elementwise_affine is not None:
            use_weight = elementwise_affine
            use_bias = elementwise_affine
        self.use_weight = use_weight
        self.use_bias = use_bias
        self.weight = jnp.ones(shape, dtype=dtype) if use_weight else None
        self.bias = jnp.zeros(shape, dtype=dtype) if use_bias else None

    def __call__(self, x, state=_SENTINEL, *, key=None):
        if x.shape != self.shape:
            raise ValueError(
                "`LayerNorm(shape)(x)` must satisfy the invariant `shape == x.shape`"
                f"Received `shape={self.shape} and `x.shape={x.shape}`. You might need "
                "to replace `layer_norm(x)` with `jax.vmap(layer_norm)(x)`.\n"
                "\n"
                "If this is a new error for you, it might be because this became "
                "stricter in Equinox v0.11.0. Previously all that was required is that "
                "`x.shape` ended with `shape`. However, this turned out to be a "
                "frequent source of bugs, so we made the check stricter!"
            )
        orig_dtype = x.dtype
        dtype = jnp.result_type(x.dtype, jnp.float32)
        x = x.astype(dtype)
        mean = jnp.mean(x, keepdims=True)
        variance = jnp.var(x, keepdims=True)
        variance = jnp.maximum(0.0, variance)
        inv = jax.lax.rsqrt(variance + self.eps)
        out = (x - mean) * inv
        if self.use_weight:
            out = self.weight.astype(dtype) * out
        if self.use_bias:
            out = out + self.bias.astype(dtype)
        if state is _SENTINEL:
            return out.astype(orig_dtype)
        return out.astype(orig_dtype), state
