"""flax.nnx's random streams as tracelens models them (flax 0.12.8): an RngStream holds a typed
key and a uint32 count; calling it folds the count into the key and counts up. `Rngs` holds
one stream per name, and a name it does not hold falls back to `default`."""

import jax
import jax.numpy as jnp

from flax.nnx._graph import Pytree
from flax.nnx._variables import RngCount, RngKey


def _random_method(random_f):
    """`rngs.normal(shape)`: the jax.random function with a fresh key from the stream."""

    def rngs_random_method(self, *args, **kwargs):
        return random_f(self(), *args, **kwargs)

    return rngs_random_method


class _RandomMethods(Pytree):
    bits = _random_method(jax.random.bits)
    uniform = _random_method(jax.random.uniform)
    randint = _random_method(jax.random.randint)
    permutation = _random_method(jax.random.permutation)
    choice = _random_method(jax.random.choice)
    normal = _random_method(jax.random.normal)
    truncated_normal = _random_method(jax.random.truncated_normal)
    bernoulli = _random_method(jax.random.bernoulli)
    categorical = _random_method(jax.random.categorical)
    gumbel = _random_method(jax.random.gumbel)
    laplace = _random_method(jax.random.laplace)
    logistic = _random_method(jax.random.logistic)
    exponential = _random_method(jax.random.exponential)
    gamma = _random_method(jax.random.gamma)
    beta = _random_method(jax.random.beta)
    poisson = _random_method(jax.random.poisson)
    rademacher = _random_method(jax.random.rademacher)


class RngStream(_RandomMethods):
    def __init__(self, key, *, tag):
        if isinstance(key, int):
            key = jax.random.key(key)
        elif key.dtype == jnp.uint32:
            key = jax.random.wrap_key_data(key)
        self.tag = tag
        self.key = RngKey(key, tag=tag)
        self.count = RngCount(jnp.zeros(key.shape, dtype=jnp.uint32), tag=tag)

    def __call__(self):
        # A fresh handle on the stream's key: folding one key with successive counts is how
        # flax draws, not a reuse of that key.
        key = jax.random.wrap_key_data(jax.random.key_data(self.key[...]))
        key = jax.random.fold_in(key, self.count[...])
        self.count[...] = self.count[...] + 1
        return key

    def split(self, k):
        return RngStream(jax.random.split(self(), k), tag=self.tag)

    def fork(self, *, split=None):
        key = self()
        if split is not None:
            key = jax.random.split(key, split)
        return RngStream(key, tag=self.tag)


class Rngs(_RandomMethods):
    def __init__(self, default=None, **rngs):
        if default is not None:
            if isinstance(default, dict):
                merged = {}
                for k in default:
                    merged[k] = default[k]
                for k in rngs:
                    merged[k] = rngs[k]
                rngs = merged
            else:
                rngs["default"] = default
        for tag in rngs:
            key = rngs[tag]
            if isinstance(key, RngStream):
                key = key.key.get_value()
            setattr(self, tag, RngStream(key, tag=tag))

    def _get_stream(self, name, error_type):
        streams = vars(self)
        if name not in streams:
            if "default" not in streams:
                raise error_type(f"No RngStream named '{name}' found in Rngs.")
            return streams["default"]
        return streams[name]

    def __getitem__(self, name):
        return self._get_stream(name, KeyError)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._get_stream(name, AttributeError)

    def __call__(self):
        return self.default()

    def __contains__(self, name):
        return name in vars(self)

    def fork(self, *, split=None):
        out = Rngs()
        streams = vars(self)
        for name in streams:
            setattr(out, name, streams[name].fork(split=split))
        return out
