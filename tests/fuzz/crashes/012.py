# issue 20, minimised input 12 (crashed check, run or repro before the memory budget and the argument checks)
import jax
k = jax.random.PRNGKey(0)
x = jax.random.choice(k, 10**9, (5,), False)
print(x)
