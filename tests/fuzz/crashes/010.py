# issue 20, minimised input 10 (crashed check, run or repro before the memory budget and the argument checks)
import jax.numpy as jnp
d = {'a': jnp.eye(10**9) * 5}
print(d['a'].shape)
