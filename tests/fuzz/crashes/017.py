# issue 20, minimised input 17 (crashed check, run or repro before the memory budget and the argument checks)
import jax.numpy as jnp
print(jnp.zeros((1,) * 100000))
