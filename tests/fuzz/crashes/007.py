# issue 20, minimised input 7 (crashed check, run or repro before the memory budget and the argument checks)
import jax.numpy as jnp
x = jnp.arange(4294967296)
print(x.shape)
