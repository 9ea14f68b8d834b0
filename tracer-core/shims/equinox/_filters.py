"""equinox's filters: which leaves are arrays, and splitting a pytree in two by a filter.

A shim of equinox 0.13.8 (equinox/_filters.py) for tracelens, not equinox's code.
"""

import jax

_INEXACT = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")


def is_array(element):
    # jax.Array stands for NumPy's arrays and scalars too: tracelens models them as arrays.
    return isinstance(element, jax.Array)


def is_array_like(element):
    return isinstance(element, (jax.Array, float, complex, bool, int))


def is_inexact_array(element):
    return is_array(element) and str(element.dtype) in _INEXACT


def _is_none(x):
    return x is None


def _leaf_filter(filter_spec, leaf):
    if callable(filter_spec):
        return filter_spec(leaf)
    return filter_spec


def filter(pytree, filter_spec, inverse=False, replace=None, is_leaf=None):
    leaves, treedef = jax.tree_util.tree_flatten(pytree, is_leaf=is_leaf)
    kept = []
    for leaf in leaves:
        keep = _leaf_filter(filter_spec, leaf)
        if inverse:
            keep = not keep
        kept.append(leaf if keep else replace)
    return jax.tree_util.tree_unflatten(treedef, kept)


def partition(pytree, filter_spec, replace=None, is_leaf=None):
    leaves, treedef = jax.tree_util.tree_flatten(pytree, is_leaf=is_leaf)
    left = []
    right = []
    for leaf in leaves:
        if _leaf_filter(filter_spec, leaf):
            left.append(leaf)
            right.append(replace)
        else:
            left.append(replace)
            right.append(leaf)
    return jax.tree_util.tree_unflatten(treedef, left), jax.tree_util.tree_unflatten(treedef, right)


def _combine(*args):
    for arg in args:
        if arg is not None:
            return arg
    return None


def combine(*pytrees, is_leaf=None):
    if is_leaf is None:
        leaf_test = _is_none
    else:

        def leaf_test(x):
            return x is None or is_leaf(x)

    return jax.tree_util.tree_map(_combine, *pytrees, is_leaf=leaf_test)
