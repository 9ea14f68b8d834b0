"""An Elman RNN run over time with lax.scan; padded (all-zero) steps keep the state."""
import jax
import jax.numpy as jnp
from jax import lax


def init_rnn(key, n_in, n_hidden):
    kx, kh = jax.random.split(key)
    return {
        "wx": jax.random.normal(kx, (n_in, n_hidden)) / jnp.sqrt(n_in),
        "wh": jax.random.normal(kh, (n_hidden, n_hidden)) / jnp.sqrt(n_hidden),
        "b": jnp.zeros(n_hidden),
    }


def rnn_step(params, h, x_t):
    if jnp.all(x_t == 0):  # a padded step: keep the previous state
        return h, h
    h = jnp.tanh(x_t @ params["wx"] + h @ params["wh"] + params["b"])
    return h, h


@jax.jit
def run_rnn(params, xs):
    h0 = jnp.zeros(params["wh"].shape[0])
    h_last, hs = lax.scan(lambda h, x_t: rnn_step(params, h, x_t), h0, xs)
    return h_last, hs


if __name__ == "__main__":
    kp, kx = jax.random.split(jax.random.key(0))
    params = init_rnn(kp, n_in=3, n_hidden=8)
    xs = jax.random.normal(kx, (5, 3))
    xs = xs.at[3:].set(0.0)  # the last two steps are padding
    h_last, hs = run_rnn(params, xs)
    print("states", hs.shape, "final state equals step 2:", bool(jnp.allclose(h_last, hs[2])))
