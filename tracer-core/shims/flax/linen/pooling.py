"""flax.linen's pooling functions: the shared shim in flax/_pooling.py."""

from flax._pooling import avg_pool, max_pool, min_pool, pool
