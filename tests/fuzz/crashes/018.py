# issue 20, minimised input 18 (crashed check, run or repro before the memory budget and the argument checks)
import jax
key = jax.random.PRNGKey(0)
x = jax.random.normal(key, (3, -2))
print(x.shape)
