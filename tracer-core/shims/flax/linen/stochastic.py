"""flax.linen.Dropout (flax/linen/stochastic.py), as a tracelens shim of flax 0.12.8."""

import jax.numpy as jnp
from jax import lax, random

from flax.linen.module import Module, compact, merge_param


class Dropout(Module):
    rate: float
    broadcast_dims: object = ()
    deterministic: object = None
    rng_collection: str = "dropout"

    @compact
    def __call__(self, inputs, deterministic=None, rng=None):
        deterministic = merge_param("deterministic", self.deterministic, deterministic)
        if (self.rate == 0.0) or deterministic:
            return inputs
        if self.rate == 1.0:
            return jnp.zeros_like(inputs)
        keep_prob = 1.0 - self.rate
        if rng is None:
            rng = self.make_rng(self.rng_collection)
        broadcast_shape = list(inputs.shape)
        for dim in self.broadcast_dims:
            broadcast_shape[dim] = 1
        mask = random.bernoulli(rng, p=keep_prob, shape=broadcast_shape)
        mask = jnp.broadcast_to(mask, inputs.shape)
        return lax.select(mask, inputs / keep_prob, jnp.zeros_like(inputs))
