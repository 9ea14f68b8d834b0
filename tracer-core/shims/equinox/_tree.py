"""equinox's tree surgery: tree_at (out-of-place replacement) and apply_updates.

A shim of equinox 0.13.8 (equinox/_tree.py, _update.py) for tracelens, not equinox's code.
"""

import jax

from equinox._filters import _is_none


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
