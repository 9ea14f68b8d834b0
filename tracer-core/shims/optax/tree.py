"""optax.tree: pytree arithmetic under optax's short names (`optax.tree.norm`).

A tracelens shim of optax 0.2.8; the functions themselves are in `_tree.py`.
"""

from optax._tree import add, bias_correction, cast, cast_like, clip, full_like, norm, ones_like, scale, sub, vdot, zeros_like
from optax._tree import tree_max as max
from optax._tree import tree_sum as sum
from optax._tree import update_moment, update_moment_per_elem_norm
