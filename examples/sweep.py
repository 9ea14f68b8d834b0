"""Evaluate a linear model's regularised loss over a few batches, for several weight decays."""
import jax
import jax.numpy as jnp


def regularised_loss(w, x, y, decay):
    return jnp.mean((x @ w - y) ** 2) + decay * jnp.sum(w ** 2)


def evaluate(w, batches, decay):
    total = 0.0
    for x, y in batches:
        total += jax.jit(lambda w: regularised_loss(w, x, y, decay))(w)
    return total / len(batches)


if __name__ == "__main__":
    kw, kx = jax.random.split(jax.random.key(0))
    w = jax.random.normal(kw, (4,))
    xs = jax.random.normal(kx, (3, 16, 4))  # 3 batches of 16 examples
    batches = [(x, jnp.tanh(x @ jnp.ones(4))) for x in xs]
    for decay in (0.0, 1e-2):
        print(f"decay {decay:g}: loss {float(evaluate(w, batches, decay)):.4f}")
