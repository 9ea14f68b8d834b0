import jax
import jax.numpy as jnp


@jax.jit
def layer(w, x):
    h = jnp.tanh(x @ w)
    print("h", h)
    return h.sum()


@jax.jit
def project(w, x):
    h = jnp.tanh(x @ w)
    return h @ w


w = jnp.ones((4, 8))
for n in (3, 3, 5):
    layer(w, jnp.ones((n, 4)))
project(w, jnp.ones((3, 4)))
