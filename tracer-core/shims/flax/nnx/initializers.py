"""flax.nnx.initializers: jax.nn.initializers under flax's names (one shim, flax/_initializers.py, for linen and nnx)."""

from flax._initializers import (
    constant,
    glorot_normal,
    glorot_uniform,
    he_normal,
    he_uniform,
    kaiming_normal,
    kaiming_uniform,
    lecun_normal,
    lecun_uniform,
    normal,
    ones,
    ones_init,
    orthogonal,
    truncated_normal,
    uniform,
    variance_scaling,
    xavier_normal,
    xavier_uniform,
    zeros,
    zeros_init,
)
