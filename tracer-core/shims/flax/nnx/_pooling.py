"""flax.nnx's pooling functions, which flax re-exports from flax.linen: the shared shim in
flax/_pooling.py."""

from flax._pooling import avg_pool, max_pool, min_pool, pool
