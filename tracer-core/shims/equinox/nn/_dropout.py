"""equinox.nn.Dropout.

A shim of equinox 0.13.8 (equinox/nn/_dropout.py) for tracelens, not equinox's code.
"""

import jax
import jax.numpy as jnp

from equinox._module import Module


class Dropout(Module):
    __tracelens_summary__ = "p={p}"

    p: float
    inference: bool

    def __init__(self, p=0.5, inference=False, *, deterministic=None):
        if deterministic is not None:
            inference = deterministic
        self.p = p
        self.inference = inference

    def __call__(self, x, *, key=None, inference=None, deterministic=None):
        if deterministic is not None:
            inference = deterministic
        if inference is None:
            inference = self.inference
        if isinstance(self.p, (int, float)) and self.p == 0:
            inference = True
        if inference:
            return x
        elif key is None:
            raise RuntimeError("Dropout requires a key when running in non-deterministic mode.")
        else:
            q = 1 - jax.lax.stop_gradient(self.p)
            mask = jax.random.bernoulli(key, q, x.shape)
            return jnp.where(mask, x / q, 0)
