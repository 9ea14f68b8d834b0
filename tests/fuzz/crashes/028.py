# API sweep: check killed by the OOM killer at 15 GiB (lax.broadcast_to_rank built the shape (1,) * (rank - ndim) before any budget check)
from jax import lax
x = lax.broadcast_to_rank(1e308, 10**9)
print(x.shape)
