# fuzz (seed 31): check panic:tracer-core/src/jax/numpy/lax/conv.rs:77
import jax.numpy as jnp
import jax.scipy.linalg
@jax.jit
def f(x):
        y = jax.lax.conv_general_dilated(jnp.ones((2,), jnp.bfloat16), jnp.array([1, ], dtype=jnp.int32), (10, 10**12), 'abc', full_matrices=jnp.ones((2,), jnp.bfloat16))
