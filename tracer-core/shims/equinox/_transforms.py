"""equinox's filtered transformations: jit, grad and vmap that treat arrays as JAX values and
everything else as static Python.

A shim of equinox 0.13.8 (equinox/_jit.py, _ad.py, _vmap_pmap.py) for tracelens, not
equinox's code. `filter_jit` is the interpreter's own jit in filtered mode
(`_tracelens_filter=True`): the user's function is the one traced and cached, array leaves
are traced, every other leaf is static and part of the cache key by its path, and outputs
that are not arrays come back as the trace made them.
"""

import jax

from equinox._filters import _is_none, is_array, is_inexact_array


def _fill(leaves, chosen, values):
    """`leaves`, with each leaf for which `chosen` is true replaced by the next of `values`."""
    out = []
    i = 0
    for leaf, c in zip(leaves, chosen):
        if c:
            out.append(values[i])
            i = i + 1
        else:
            out.append(leaf)
    return out


def filter_jit(fun=None, *, donate="none", **jitkwargs):
    """`eqx.filter_jit`; `jitkwargs` go to `jax.jit` (device, inline, ...), which changes no
    shape or dtype."""
    if fun is None:

        def decorator(f):
            return filter_jit(f, donate=donate, **jitkwargs)

        return decorator
    return jax.jit(fun, _tracelens_filter=True)


def filter_value_and_grad(fun=None, *, has_aux=False, **gradkwargs):
    if fun is None:

        def decorator(f):
            return filter_value_and_grad(f, has_aux=has_aux, **gradkwargs)

        return decorator

    def wrapper(x, *args, **kwargs):
        leaves, treedef = jax.tree_util.tree_flatten(x)
        mask = [is_inexact_array(leaf) for leaf in leaves]
        diff = [leaf for leaf, m in zip(leaves, mask) if m]

        def differentiable(diff_leaves):
            return fun(jax.tree_util.tree_unflatten(treedef, _fill(leaves, mask, diff_leaves)), *args, **kwargs)

        value, grads = jax.value_and_grad(differentiable, has_aux=has_aux, **gradkwargs)(diff)
        return value, jax.tree_util.tree_unflatten(treedef, _fill([None for _ in leaves], mask, grads))

    return wrapper


def filter_grad(fun=None, *, has_aux=False, **gradkwargs):
    if fun is None:

        def decorator(f):
            return filter_grad(f, has_aux=has_aux, **gradkwargs)

        return decorator
    value_and_grad = filter_value_and_grad(fun, has_aux=has_aux, **gradkwargs)

    def wrapper(x, *args, **kwargs):
        value, grads = value_and_grad(x, *args, **kwargs)
        if has_aux:
            return grads, value[1]
        return grads

    return wrapper


def filter_jvp(fn, primals, tangents, **kwargs):
    """`eqx.filter_jvp`: `jax.jvp` over the primals whose tangent is not `None`, every other
    primal static. A non-array output's tangent is `None`; an array output's is `None` where
    JAX's tangent is a symbolic zero (it depends on no differentiated primal), the tangent
    where it certainly is not, and unknown where tracelens' rules cannot tell
    (`_tracelens_symbolic_zeros`: `jax/taint.rs`)."""
    p_leaves, p_def = jax.tree_util.tree_flatten(primals, is_leaf=_is_none)
    t_leaves, t_def = jax.tree_util.tree_flatten(tangents, is_leaf=_is_none)
    if _is_unknown(primals) or _is_unknown(tangents) or any(_is_unknown(x) for x in p_leaves + t_leaves):
        return _unknown.filter_jvp(fn, primals, tangents, **kwargs)
    if p_def != t_def:
        raise ValueError("primals and tangents must have the same pytree structure")
    chosen = [t is not None for t in t_leaves]
    dynamic = [p for p, c in zip(p_leaves, chosen) if c]
    outs = []

    def inner(*dynamic_leaves):
        args = jax.tree_util.tree_unflatten(p_def, _fill(p_leaves, chosen, dynamic_leaves))
        out = fn(*args, **kwargs)
        leaves, treedef = jax.tree_util.tree_flatten(out)
        outs.append((leaves, treedef))
        return [leaf for leaf in leaves if is_array(leaf)]

    arrays, tangent_arrays = jax.jvp(inner, dynamic, [t for t in t_leaves if t is not None], _tracelens_symbolic_zeros=True)
    if not outs:
        # The body was not traced: a path an unknown chose, where the outputs are not known.
        return _unknown.filter_jvp(fn, primals, tangents, **kwargs)
    leaves, treedef = outs[-1]
    mask = [is_array(leaf) for leaf in leaves]
    primal_out = jax.tree_util.tree_unflatten(treedef, _fill(leaves, mask, arrays))
    tangent_out = jax.tree_util.tree_unflatten(treedef, _fill([None for _ in leaves], mask, tangent_arrays))
    return primal_out, tangent_out


class if_array:
    """`eqx.if_array(axis)`: `axis` for an array leaf, `None` for any other leaf
    (equinox/_vmap_pmap.py). filter_vmap's dynamic leaves are its arrays, so as an axis spec
    it means `axis` here."""

    def __init__(self, axis):
        self.axis = axis

    def __call__(self, x):
        return self.axis if is_array(x) else None

    def __eq__(self, other):
        return isinstance(other, if_array) and other.axis == self.axis

    def __hash__(self):
        return hash(("if_array", self.axis))

    def __repr__(self):
        return f"if_array(axis={self.axis})"


def _axis_of(spec):
    if spec is None or isinstance(spec, int):
        return spec
    if isinstance(spec, if_array):
        return _axis_of(spec.axis)
    return _UNKNOWN_SPEC


_UNKNOWN_SPEC = "unknown"


class _Probe:
    """A class nothing is an instance of: `isinstance` on a value tracelens does not know is
    not known either (the shims keep identity exact, so `is not False` tells)."""


def _is_unknown(value):
    return isinstance(value, _Probe) is not False


def filter_vmap(fun=None, *, in_axes=0, out_axes=0, axis_name=None, axis_size=None, **vmapkwargs):
    """`eqx.filter_vmap`; `vmapkwargs` go to `jax.vmap` (spmd_axis_name), which changes no
    shape or dtype."""
    if fun is None:

        def decorator(f):
            return filter_vmap(f, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name, axis_size=axis_size)

        return decorator

    def wrapper(*args, **kwargs):
        if isinstance(in_axes, (tuple, list)):
            axes = [_axis_of(a) for a in in_axes]
        else:
            axes = [_axis_of(in_axes) for _ in args]
        if _UNKNOWN_SPEC in axes or len(axes) != len(args) or _axis_of(out_axes) != 0 or kwargs:
            return _unknown.filter_vmap(fun)(*args, **kwargs)
        flat = [jax.tree_util.tree_flatten(a) for a in args]
        # A leaf tracelens does not know may be an array with the mapped axis.
        if any(_is_unknown(leaf) for leaves, _ in flat for leaf in leaves):
            return _unknown.filter_vmap(fun)(*args, **kwargs)
        dynamic = [[leaf for leaf in leaves if is_array(leaf)] for leaves, _ in flat]
        statics = []

        def inner(*dynamic_args):
            rebuilt = []
            for (leaves, treedef), dyn in zip(flat, dynamic_args):
                rebuilt.append(jax.tree_util.tree_unflatten(treedef, _fill(leaves, [is_array(x) for x in leaves], dyn)))
            out = fun(*rebuilt)
            out_leaves, out_treedef = jax.tree_util.tree_flatten(out)
            statics.append((out_leaves, out_treedef))
            return [leaf for leaf in out_leaves if is_array(leaf)]

        mapped = jax.vmap(inner, in_axes=tuple(axes), axis_name=axis_name, axis_size=axis_size)(*dynamic)
        if not statics:
            # The body was not traced: a path an unknown chose, where the leaves are not known.
            return _unknown.filter_vmap(fun)(*args, **kwargs)
        out_leaves, out_treedef = statics[-1]
        return jax.tree_util.tree_unflatten(out_treedef, _fill(out_leaves, [is_array(x) for x in out_leaves], mapped))

    return wrapper


def filter_pmap(fun=None, *, in_axes=None, out_axes=None, axis_name=None, axis_size=None, donate="none", **pmapkwargs):
    """`eqx.filter_pmap`: as tracelens models it, `filter_jit` of `filter_vmap` (each device's
    slice of the array leaves, mapped along their first axis with `axis_name`, traced once per
    signature as pmap compiles once per signature; non-array leaves static). The number of
    devices is not checked. Other `in_axes`/`out_axes` than equinox's defaults are not modelled."""
    if fun is None:

        def decorator(f):
            return filter_pmap(f, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name, axis_size=axis_size, donate=donate)

        return decorator
    if in_axes is not None or out_axes is not None:
        return _unknown.filter_pmap(fun)
    mapped = filter_vmap(fun, axis_name=axis_name, axis_size=axis_size)
    mapped.__wrapped__ = fun
    return filter_jit(mapped)


import equinox._unknown as _unknown  # noqa: E402  (a module that defines nothing, on purpose)
