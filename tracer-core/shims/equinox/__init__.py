"""equinox, as tracelens models it: a shim of equinox 0.13.8's public surface in plain Python
on top of jax. Names not listed here are unknown to tracelens (opaque), never missing.

Coverage (see docs/ARCHITECTURE.md, "Library shims"): Module and field; filter_jit,
filter_grad, filter_jvp (symbolic-zero tangents None, as equinox gives them), filter_value_and_grad, filter_vmap (int, None and if_array axes), filter_pmap (as jit of vmap); is_array, is_inexact_array, is_array_like,
partition, combine, filter; tree_at, apply_updates, tree_equal (and Module's == through it); and in eqx.nn Linear, MLP, LayerNorm,
Embedding, Dropout, Identity.
"""

from equinox import nn
from equinox._filters import combine, filter, is_array, is_array_like, is_inexact_array, partition
from equinox._module import Module, field, static_field
from equinox._transforms import filter_grad, filter_jit, filter_jvp, filter_pmap, filter_value_and_grad, filter_vmap, if_array
from equinox._tree import apply_updates, tree_at, tree_equal
