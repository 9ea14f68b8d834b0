# issue 20, minimised input 9 (crashed check, run or repro before the memory budget and the argument checks)
import jax.numpy as jnp
x = jnp.tile(jnp.ones(3), 10**9)
print(x.shape)
