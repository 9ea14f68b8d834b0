# issue 20, minimised input 11 (crashed check, run or repro before the memory budget and the argument checks)
import jax.numpy as jnp
x = jnp.linspace(0, 0, 2147483648)
print(x.shape)
