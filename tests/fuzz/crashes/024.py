# fuzz (seed 20): check panic:ndarray iterators/mod.rs:881 (a mean over an axis given 100 times, with where=)
import jax.numpy as jnp
batch, steps, feats = 3, 5, 4
t = jnp.arange(batch * steps * feats, dtype=jnp.float32).reshape(batch, steps, feats)
x = jnp.sin(t * 0.7)
lengths = jnp.array([5, 3, 2])
valid = (jnp.arange(steps) < lengths[:, None])[:, :, None]  # (batch, steps, 1)
mu = jnp.mean(x, axis=(1,) * 100, where=valid)
print("mean:", mu)
