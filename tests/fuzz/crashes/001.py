# issue 20, minimised input 1 (crashed check, run or repro before the memory budget and the argument checks)
import jax.numpy as jnp
x = 'a'*10**12
print(len(x))
