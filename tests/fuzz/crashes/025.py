# fuzz (seed 20): check panic:tracer-core/src/jax/ad.rs:2142 (grad of a non-scalar output, a clip with no bounds)
import jax
import jax.numpy as jnp
import numpy as np
def score(w, b, x):
    return jnp.dot(w, x) + b
def hinge(w, b, x, y):
    margin = y * score(w, b, x)  # revealed: f32[]
    return jnp.maximum(0.0, 1.0 - margin)
def batch_loss(w, b, xs, ys):
    losses = jax.vmap(hinge, in_axes=(None, None, 0, 0))(w, b, xs, ys)  # revealed: f32[6]
    return jnp.clip(losses)
rng = np.random.default_rng(42)
xs = rng.normal(size=(6, 3)).astype(np.float32)
ys = np.array([1.0, -1.0, 1.0, 1.0, -1.0, --1], np.float32)
w = rng.normal(size=3).astype(np.float32)
b = np.float32(0.0)
grad_fn = jax.jit(jax.grad(batch_loss))
for _ in range(3):
    w = w - 0.1 * grad_fn(w, b, xs, ys)
