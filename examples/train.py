"""Train a small MLP regressor on the synthetic data from data.py."""
import jax
import jax.numpy as jnp

from data import batches, make_dataset, standardize


def init_params(key, sizes):
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        key, subkey = jax.random.split(key)
        w = jax.random.normal(subkey, (n_in, n_out)) / jnp.sqrt(n_in)
        params.append((w, jnp.zeros(n_out)))
    return params


def predict(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return (x @ w + b)[:, 0]


def loss_fn(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)


@jax.jit
def train_step(params, x, y, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    print("step loss:", loss)
    params = jax.tree.map(lambda p, g: p - lr * g, params, grads)
    return params, loss


def main():
    x, y = make_dataset()
    x = standardize(x)
    params = init_params(jax.random.key(0), (8, 16, 1))
    for epoch in range(3):
        for xb, yb in batches(x, y, batch_size=32, seed=epoch):
            params, loss = train_step(params, xb, yb, 0.05)
        print(f"epoch {epoch}: last batch loss {float(loss):.4f}")


if __name__ == "__main__":
    main()
