# issue 20, minimised input 21 (crashed check, run or repro before the memory budget and the argument checks)
import jax
import jax.numpy as jnp

def loss(w, x):
    return jnp.sum((x @ w) ** 2)

def step(w, x):
    g = jax.grad(loss)(w, x)
    return w - 0.0 * g

x = jnp.ones((8, 4))
w = jnp.ones(4)
j = jax.jacfwd(step)(w, x)
print(j)
