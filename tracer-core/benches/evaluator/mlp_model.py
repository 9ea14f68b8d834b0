# The MLP of the evaluator benchmark (issue #3, point 6): 784 -> 512 -> 512 -> 10, float32,
# batch 128, softmax cross-entropy. tracelens runs this file with a driver appended
# (benches/evaluator/mlp.rs); so does real Python, with mlp_reference.py appended, for NumPy
# and jax.jit. One-hot labels keep the loss a plain `sum(y * log_softmax)`.
import jax
import jax.numpy as jnp


def init(key):
    k1, k2, k3, kx = jax.random.split(key, 4)
    params = {
        "w1": jax.random.normal(k1, (784, 512), jnp.float32) * 0.05,
        "b1": jnp.zeros((512,), jnp.float32),
        "w2": jax.random.normal(k2, (512, 512), jnp.float32) * 0.05,
        "b2": jnp.zeros((512,), jnp.float32),
        "w3": jax.random.normal(k3, (512, 10), jnp.float32) * 0.05,
        "b3": jnp.zeros((10,), jnp.float32),
    }
    x = jax.random.normal(kx, (128, 784), jnp.float32)
    y = jax.nn.one_hot(jnp.arange(128) % 10, 10, dtype=jnp.float32)
    return params, x, y


def loss(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    h = jax.nn.relu(h @ params["w2"] + params["b2"])
    logits = h @ params["w3"] + params["b3"]
    return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(logits), axis=1))


def grad_norm(grads):
    return jnp.sqrt(sum(jnp.sum(g * g) for g in jax.tree_util.tree_leaves(grads)))


step = jax.jit(jax.value_and_grad(loss))
params, x, y = init(jax.random.PRNGKey(0))
