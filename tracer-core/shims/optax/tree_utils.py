"""optax.tree_utils: pytree arithmetic under optax's public `tree_*` names.

A tracelens shim of optax 0.2.8; the functions themselves are in `_tree.py`.
"""

from optax._tree import add as tree_add
from optax._tree import bias_correction as tree_bias_correction
from optax._tree import cast as tree_cast
from optax._tree import cast_like as tree_cast_like
from optax._tree import full_like as tree_full_like
from optax._tree import norm as tree_norm
from optax._tree import ones_like as tree_ones_like
from optax._tree import scale as tree_scale
from optax._tree import sub as tree_sub
from optax._tree import tree_max
from optax._tree import tree_sum
from optax._tree import update_moment as tree_update_moment
from optax._tree import update_moment_per_elem_norm as tree_update_moment_per_elem_norm
from optax._tree import vdot as tree_vdot
from optax._tree import zeros_like as tree_zeros_like


def tree_l2_norm(tree, *, ord=2, squared=False):
    return tree_norm(tree, ord=ord, squared=squared)
