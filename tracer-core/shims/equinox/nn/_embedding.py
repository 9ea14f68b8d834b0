"""equinox.nn.Embedding.

A shim of equinox 0.13.8 (equinox/nn/_embedding.py) for tracelens, not equinox's code.
"""

import jax
import jax.numpy as jnp

from equinox._filters import is_array_like
from equinox._module import Module, field
from equinox.nn._linear import default_floating_dtype


class Embedding(Module):
    __tracelens_summary__ = "num_embeddings={num_embeddings}, embedding_size={embedding_size}"

    num_embeddings: int = field(static=True)
    embedding_size: int = field(static=True)
    weight: jax.Array

    def __init__(self, num_embeddings=None, embedding_size=None, weight=None, dtype=None, *, key=None):
        dtype = default_floating_dtype() if dtype is None else dtype
        if weight is None:
            if num_embeddings is None or embedding_size is None or key is None:
                raise ValueError(
                    "Must provide `eqx.nn.Embedding(num_embeddings=..., "
                    "embedding_size=..., key=...)` if not providing the weight "
                    "directly."
                )
            if num_embeddings < 0:
                raise ValueError("num_embeddings must not be negative.")
            if embedding_size < 0:
                raise ValueError("embedding_size must not be negative.")
            self.weight = jax.random.normal(key, (num_embeddings, embedding_size), dtype=dtype)
        else:
            if weight.ndim != 2:
                raise ValueError("weight must have shape (num_embeddings, embedding_size).")
            if num_embeddings is None:
                num_embeddings = weight.shape[0]
            if embedding_size is None:
                embedding_size = weight.shape[1]
            if weight.shape != (num_embeddings, embedding_size):
                raise ValueError("weight must have shape (num_embeddings, embedding_size).")
            self.weight = weight
        self.num_embeddings = num_embeddings
        self.embedding_size = embedding_size

    def __call__(self, x, *, key=None):
        if is_array_like(x) and jnp.shape(x) == ():
            return self.weight[x]
        raise ValueError(
            "`eqx.nn.Embedding()(x)` should be called with a scalar index `x`. "
            "Use `jax.vmap` if you would like to index with multiple values."
        )
