# fuzz (seed 20): run panic:tracer-core/src/jax/eval.rs:740 (grad of cumsum, a non-scalar output)
"    "
import jax
import jax.numpy as jnp
(jax.grad(jnp.cumsum)(jnp.array([  5.0])))
