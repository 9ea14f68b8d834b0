"""Synthetic regression data and the NumPy preprocessing used by train.py."""
import numpy as np


def make_dataset(n=256, n_features=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, n_features)).astype(np.float32)
    true_w = rng.normal(size=n_features).astype(np.float32)
    noise = 0.1 * rng.normal(size=n).astype(np.float32)
    y = np.tanh(x @ true_w) + noise
    return x, y.astype(np.float32)


def standardize(x):
    mean = x.mean(axis=0)
    std = x.std(axis=0) + 1e-6
    return (x - mean) / std


def batches(x, y, batch_size, seed=0):
    """Yield shuffled (x, y) minibatches; the last partial batch is dropped."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x))
    for start in range(0, len(x) - batch_size + 1, batch_size):
        idx = order[start:start + batch_size]
        yield x[idx], y[idx]


if __name__ == "__main__":
    x, y = make_dataset()
    x = standardize(x)
    print("x", x.shape, x.dtype, "y", y.shape, y.dtype)
    print("feature means ~0:", bool(np.allclose(x.mean(axis=0), 0.0, atol=1e-5)))
    print("batches per epoch:", sum(1 for _ in batches(x, y, batch_size=32)))
