# issue 20, minimised input 16 (crashed check, run or repro before the memory budget and the argument checks)
import jax.numpy as jnp
b = jnp.ones(3)[..., ...]
print(b)
