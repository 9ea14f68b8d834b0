# issue 20, minimised input 8 (crashed check, run or repro before the memory budget and the argument checks)
import jax.numpy as jnp
x = jnp.arange(0, 1e18, 1e-18)
print(x.shape)
