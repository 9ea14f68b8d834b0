"""equinox's filters: which leaves are arrays, and splitting a pytree in two by a filter.

A shim of equinox 0.13.8 (equinox/_filters.py) for tracelens, not equinox's code.
"""

import jax

import equinox._unknown as _unknown  # a module that defines nothing, on purpose

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


def _filter_tree(is_leaf):
    """Each leaf of a filter spec, for the subtree of the pytree under it: a bool for all its
    leaves, or a callable mapped over them. A filter spec is a pytree prefix of the pytree, so
    a spec that is a Module (callable, but a pytree) is a tree of bools, as equinox reads it."""

    def expand(mask, arg):
        if isinstance(mask, bool):
            return jax.tree_util.tree_map(lambda _: mask, arg, is_leaf=is_leaf)
        if callable(mask):
            return jax.tree_util.tree_map(mask, arg, is_leaf=is_leaf)
        raise ValueError("`filter_spec` must consist of booleans and callables only.")

    return expand


def _masks(pytree, filter_spec, is_leaf):
    """A bool per leaf of `pytree`, in its structure; None for a filter spec that is a strict
    prefix of it (`[(False, False), True]`), which the shim does not model."""
    expand = _filter_tree(is_leaf)
    spec_leaves = jax.tree_util.tree_leaves(filter_spec)
    if len(spec_leaves) == 1 and spec_leaves[0] is filter_spec:
        return expand(filter_spec, pytree)
    if len(spec_leaves) != len(jax.tree_util.tree_leaves(pytree, is_leaf=is_leaf)):
        return None
    return jax.tree_util.tree_map(expand, filter_spec, pytree, is_leaf=is_leaf)


def filter(pytree, filter_spec, inverse=False, replace=None, is_leaf=None):
    inverse = bool(inverse)
    masks = _masks(pytree, filter_spec, is_leaf)
    if masks is None:
        return _unknown.filter(pytree, filter_spec)
    return jax.tree_util.tree_map(lambda mask, x: x if bool(mask) != inverse else replace, masks, pytree)


def partition(pytree, filter_spec, replace=None, is_leaf=None):
    masks = _masks(pytree, filter_spec, is_leaf)
    if masks is None:
        return _unknown.partition(pytree, filter_spec)
    left = jax.tree_util.tree_map(lambda mask, x: x if mask else replace, masks, pytree)
    right = jax.tree_util.tree_map(lambda mask, x: replace if mask else x, masks, pytree)
    return left, right


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
