# issue 20, minimised input 13 (crashed check, run or repro before the memory budget and the argument checks)
import jax
import jax.numpy as jnp
key = jax.random.PRNGKey(0)
m = jnp.ones((2, 3))
x = jax.random.normal(key, (10**18, 2)) @ m
print(x.shape)
