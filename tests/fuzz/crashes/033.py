# fuzz (seed 31): check timeout
import jax
import jax.numpy as jnp
import jax.numpy.linalg
import jax.scipy.special
import jax.scipy.linalg
import jax.scipy.stats.norm
from jax import lax

x = jnp.linspace(-2, 2, 12).reshape(3, 4)
try:
    y = jax.numpy.median()
    print(y)
except Exception as e:
    print(type(e).__name__)
try:
    y = jax.numpy.pad(jnp.float32(2.5))
    print(y)
    print(y)
except Exception as e:
    print(type(e).__name__)
try:
    y = jax.nn.swish('abc', jnp.float64, mode=10**18)
    print(y)
except Exception as e:
    print(type(e).__name__)
try:
    y = jax.numpy.sum(jax.random.PRNGKey(0), int, [(2, 3)])
    print(y)
except Exception as e:
    print(type(e).__name__)
try:
    y = jax.numpy.sort(jnp.float32(2.5), [1, jnp.sin, 2**63], window_dimensions=(3,))
    print(y)
except Exception as e:
    print(type(e).__name__)
try:
    y = jax.lax.broadcast_to_rank(jnp.ones((2,), jnp.bfloat16), 65536)
    print(y)
except Exception as e:
    print(type(e).__name__)
try:
    y = jax.numpy.atleast_2d(jnp.array(-2**31, dtype=jnp.int32), jnp.array(-2**31, dtype=jnp.int32))
    print(y)
except Exception as e:
    print(type(e).__name__)
