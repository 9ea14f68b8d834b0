"""flax.linen's lifted transformations that leave the variables as they are (flax/linen/transforms.py).

A tracelens shim of flax 0.12.8: `remat`/`checkpoint` and `jit` of a Module class give a
subclass named as flax names it (`CheckpointBlock`, `JitBlock`), so children are named
`CheckpointBlock_0`; the computation is the module's own. `nn.scan` and `nn.vmap` (which
add an axis to variables) are not modelled: they are unknown to tracelens.
"""


def _lift(prefix, target):
    if not isinstance(target, type):
        return target

    class Lifted(target):
        pass

    Lifted.__name__ = prefix + target.__name__
    return Lifted


def checkpoint(target, variables=True, rngs=True, concrete=False, prevent_cse=True, static_argnums=(), policy=None, methods=None):
    return _lift("Checkpoint", target)


remat = checkpoint


def jit(target, variables=True, rngs=True, static_argnums=(), static_argnames=(), donate_argnums=(), device=None, backend=None, methods=None):
    return _lift("Jit", target)
