# Copied many times into the e2e workspace (scan/) so that the workspace scan lasts long enough
# for the status bar's progress to be seen. No findings.
import jax
import jax.numpy as jnp


@jax.jit
def normalise(x):
    return (x - x.mean()) / (x.std() + 1e-6)


normalise(jnp.ones((8, 4)))
