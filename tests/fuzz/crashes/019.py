# issue 20, minimised input 19 (crashed check, run or repro before the memory budget and the argument checks)
import jax
import jax.numpy as jnp

def loss(w, x, y):
    logits = x @ w
    return jnp.mean(jnp.log1p(jnp.exp(-y * logits)))

x = jnp.ones((8, 4))
y = jnp.ones(8)
w = jnp.zeros(4)
h = jax.hessian(loss)(w, x, y)
print(h)
