"""flax.linen.dtypes: the dtype a layer computes in (a tracelens shim of flax 0.12.8)."""

import jax.numpy as jnp


def canonicalize_dtype(*args, dtype=None, inexact=True):
    if dtype is None:
        args_filtered = [jnp.asarray(x) for x in args if x is not None]
        dtype = jnp.result_type(*args_filtered)
        if inexact and dtype.kind not in ("f", "c"):
            dtype = jnp.promote_types(jnp.float32, dtype)
    return dtype


def promote_dtype(*args, dtype=None, inexact=True):
    dtype = canonicalize_dtype(*args, dtype=dtype, inexact=inexact)
    return [jnp.asarray(x, dtype) if x is not None else None for x in args]
