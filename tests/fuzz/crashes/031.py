# Directed API sweep: run panicked in ndarray (an empty array whose other axes span more than isize: "Shape too large") and aborted (a sum over the huge axis of an empty array allocated a lane that long)
import jax.numpy as jnp
print(jnp.zeros((2**62, 0, 2)).shape)
print(jnp.zeros((10**12, 0, 10**12)))
print(jnp.ones((0, 10**12)).sum(1))
print(jnp.ones((0, 2**62)).sum(-1))
