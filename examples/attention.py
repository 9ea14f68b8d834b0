"""Multi-head cross-attention: decoder states attend to encoder states."""
import jax
import jax.numpy as jnp

D_MODEL = 32    # decoder width
D_CONTEXT = 16  # encoder width
NUM_HEADS = 4


def init_cross_attention(key, d_model, d_context):
    kq, kk, kv, ko = jax.random.split(key, 4)
    return {
        "wq": jax.random.normal(kq, (d_model, d_model)) / jnp.sqrt(d_model),
        "wk": jax.random.normal(kk, (d_context, d_context)) / jnp.sqrt(d_context),
        "wv": jax.random.normal(kv, (d_context, d_model)) / jnp.sqrt(d_context),
        "wo": jax.random.normal(ko, (d_model, d_model)) / jnp.sqrt(d_model),
    }


def split_heads(x, num_heads):
    length, width = x.shape
    return x.reshape(length, num_heads, width // num_heads).transpose(1, 0, 2)


@jax.jit
def cross_attention(params, x, context):
    q = split_heads(x @ params["wq"], NUM_HEADS)        # (heads, T, head_dim)
    k = split_heads(context @ params["wk"], NUM_HEADS)  # (heads, S, head_dim)
    v = split_heads(context @ params["wv"], NUM_HEADS)
    scores = q @ jnp.swapaxes(k, -1, -2) / jnp.sqrt(q.shape[-1])
    weights = jax.nn.softmax(scores, axis=-1)           # (heads, T, S)
    out = (weights @ v).transpose(1, 0, 2).reshape(x.shape[0], -1)
    return out @ params["wo"]


if __name__ == "__main__":
    kp, kx, kc = jax.random.split(jax.random.key(0), 3)
    params = init_cross_attention(kp, D_MODEL, D_CONTEXT)
    x = jax.random.normal(kx, (6, D_MODEL))          # 6 decoder positions
    context = jax.random.normal(kc, (10, D_CONTEXT))  # 10 encoder positions
    out = cross_attention(params, x, context)
    print("attention output", out.shape)
