# fuzz (seed 1): check abort (array_split into 10**12 sections: a Vec of a trillion bounds)
import jax.numpy as jnp
seq = jnp.arange(7.0)
for k in (10, 10**12):
    print( [ jnp.array_split(seq, k)])
