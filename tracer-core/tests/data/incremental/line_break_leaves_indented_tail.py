# Pruning statistics inside the jitted forward pass: jnp.nonzero gets a static size=
x = rng.normal(size=(5, 3)).astype(np.float32)
# (the layer width() and a fill_value, so its output shape does not depend on the data.
import jax
import jax.numpy as jnp
import numpy as np

WIDTH = 10


def hidden(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"])


@jax.jit
def forward_with_stats(params, x):
    h = hidden(params, x)  # revealed: f32[5]
    active = jnp.any(h > 0, axis=0)  # revealed: bool[10]
    (idx,) = jnp.nnzero(active, size=WIDTH, fill_value=-1)
    n_active = active.sum()  # revealed: i32[]
    return h @ params["w2"], idx, n_active


params = {
    "w1": rng.normal(size=(3, WIDTH)).astype(np.float32),
    "b1": np.full(WIDTH, -0.5, np.float32),
    "w2": rng.normal(size=(WIDTH, 2)).astype(np.float32),
}
rng = np.random.default_rng(0)
out, idx, n = forward_with_stats(params, x)
print("active units", idx[: int(n)])
