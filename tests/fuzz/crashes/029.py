# API sweep: check aborted (jnp.nonzero with size=10**12 padded a list of coordinates to a trillion entries before any budget check)
import jax.numpy as jnp
x = jnp.array([0, 1, 2, 0, 3])
print(jnp.nonzero(x, size=10**12)[0].shape)
print(jnp.argwhere(x, size=10**12).shape)
