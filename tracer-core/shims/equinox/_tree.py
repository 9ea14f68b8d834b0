"""equinox's tree surgery and comparison: tree_at (out-of-place replacement), apply_updates
and tree_equal.

A shim of equinox 0.13.8 (equinox/_tree.py, _update.py) for tracelens, not equinox's code.
"""

import jax
import jax.numpy as jnp

import equinox._unknown as _unknown  # a module that defines nothing, on purpose
from equinox._filters import _is_none, is_array
from equinox._transforms import _is_unknown


def tree_equal(*pytrees, typematch=False, rtol=0.0, atol=0.0):
    """True when every pytree has the first one's structure and equal leaves. Arrays must
    agree in shape and dtype; their values make the result an array (a tracer under jit).
    Of a tree or leaf tracelens does not know, the answer is not known: the early returns
    below must not decide it along one branch of a test on an unknown."""
    flat = [jax.tree_util.tree_flatten(tree) for tree in pytrees]
    if any(_is_unknown(tree) for tree in pytrees) or any(_is_unknown(x) for leaves, _ in flat for x in leaves):
        return _unknown.tree_equal(*pytrees)
    first, structure = flat[0]
    result = True
    for leaves, other_structure in flat[1:]:
        if other_structure != structure:
            return False
        for a, b in zip(first, leaves):
            if typematch and type(a) != type(b):
                return False
            if is_array(a) != is_array(b):
                return False
            if not is_array(a):
                if a != b:
                    return False
                continue
            if a.shape != b.shape or a.dtype != b.dtype:
                return False
            if rtol == 0 and atol == 0:
                same = jnp.all(a == b)
            else:
                same = jnp.allclose(a, b, rtol=rtol, atol=atol)
            result = result & same
    return result


class _Marker:
    def __init__(self, index):
        self.index = index


def apply_updates(model, updates):
    def apply(u, p):
        if u is None:
            return p
        return p + u

    return jax.tree_util.tree_map(apply, updates, model, is_leaf=_is_none)


def tree_at(where, pytree, replace=None, replace_fn=None, is_leaf=None):
    leaves, treedef = jax.tree_util.tree_flatten(pytree, is_leaf=is_leaf)
    marked = jax.tree_util.tree_unflatten(treedef, [_Marker(i) for i in range(len(leaves))])
    selected = where(marked)
    if isinstance(selected, (tuple, list)):
        nodes = list(selected)
        replacements = list(replace) if replace_fn is None else None
    else:
        nodes = [selected]
        replacements = [replace] if replace_fn is None else None

    def chosen(x):
        for node in nodes:
            if x is node:
                return True
        return False

    def original(node):
        return jax.tree_util.tree_map(lambda m: leaves[m.index], node)

    parts, new_treedef = jax.tree_util.tree_flatten(marked, is_leaf=chosen)
    out = []
    for part in parts:
        index = -1
        for i, node in enumerate(nodes):
            if part is node:
                index = i
        if index < 0:
            out.append(leaves[part.index])
        elif replace_fn is not None:
            out.append(replace_fn(original(part)))
        else:
            out.append(replacements[index])
    return jax.tree_util.tree_unflatten(new_treedef, out)
