# fuzz (seed 31): run panic:tracer-core/src/jax/numpy/lax/conv.rs:77
import jax
import jax.numpy as jnp
x = jnp.linspace(-2, 2, 12).reshape(3, 4)
def f(x):
        y = jax.lax.conv_general_dilated(jnp.ones((2,), jnp.bfloat16), jnp.array([1, 2, 3], dtype=jnp.int32), (10**12, 10**12), 'abc', full_matrices=jnp.ones((2,), jnp.bfloat16))
f(x)
