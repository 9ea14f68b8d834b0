"""flax: shims of flax.linen, flax.nnx, flax.struct, flax.training and flax.core (the public surface tracelens models)."""
