# issue 20, minimised input 20 (crashed check, run or repro before the memory budget and the argument checks)
import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    while True:
        x = x + 1
    return x

print(f(jnp.ones(3)))
