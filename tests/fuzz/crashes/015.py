# issue 20, minimised input 15 (crashed check, run or repro before the memory budget and the argument checks)
import jax.numpy as jnp
a = jnp.ones((2, 3, 4))
b = jnp.transpose(a, (65536, 0, 1))
print(b.shape)
