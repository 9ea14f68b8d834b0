"""Pytree arithmetic optax's transformations share (optax/tree_utils, optax/_src/numerics).

A tracelens shim: plain Python on jax, written from optax 0.2.8's documented behaviour.
"""

import jax
import jax.numpy as jnp

INT32_MAX = 2147483647


def safe_increment(count):
    # Counts saturate at the largest int32 instead of wrapping around.
    return jnp.where(count < INT32_MAX, count + 1, INT32_MAX)


def zeros_like(tree, dtype=None):
    return jax.tree.map(lambda x: jnp.zeros_like(x, dtype=dtype), tree)


def ones_like(tree, dtype=None):
    return jax.tree.map(lambda x: jnp.ones_like(x, dtype=dtype), tree)


def full_like(tree, fill_value, dtype=None):
    return jax.tree.map(lambda x: jnp.full_like(x, fill_value, dtype=dtype), tree)


def update_moment(updates, moments, decay, order):
    return jax.tree.map(lambda g, t: (1 - decay) * (g**order) + decay * t, updates, moments)


def update_moment_per_elem_norm(updates, moments, decay, order):
    return jax.tree.map(lambda g, t: (1 - decay) * (g**order) + decay * t, updates, moments)


def bias_correction(moment, decay, count):
    correction = 1 - decay**count
    return jax.tree.map(lambda t: t / correction.astype(t.dtype), moment)


def cast(tree, dtype):
    if dtype is None:
        return tree
    return jax.tree.map(lambda t: t.astype(dtype), tree)


def cast_like(tree, other_tree):
    return jax.tree.map(lambda t, o: t.astype(o.dtype), tree, other_tree)


def tree_sum(tree, associative_reduction=False):
    total = 0
    for leaf in jax.tree.leaves(tree):
        total = total + jnp.sum(leaf)
    return total


def norm(tree, ord=None, squared=False):
    if ord is None or ord == 2:
        sqnorm = tree_sum(jax.tree.map(jnp.square, tree))
        return jnp.array(sqnorm if squared else jnp.sqrt(sqnorm))
    if ord == 1:
        total = tree_sum(jax.tree.map(jnp.abs, tree))
    elif ord == "inf" or ord == "infinity" or ord == jnp.inf:
        total = tree_max(jax.tree.map(jnp.abs, tree))
    else:
        raise ValueError(f"Unsupported ord: {ord}")
    return jnp.array(total if not squared else jnp.square(total))


def tree_max(tree):
    leaves = jax.tree.leaves(tree)
    result = jnp.max(leaves[0])
    for leaf in leaves[1:]:
        result = jnp.maximum(result, jnp.max(leaf))
    return result


def add(tree_x, tree_y, *others):
    trees = [tree_x, tree_y] + list(others)
    return jax.tree.map(lambda *leaves: sum(leaves), *trees)


def sub(tree_x, tree_y):
    return jax.tree.map(lambda x, y: x - y, tree_x, tree_y)


def scale(scalar, tree):
    return jax.tree.map(lambda x: scalar * x, tree)


def vdot(tree_x, tree_y):
    total = 0
    for x, y in zip(jax.tree.leaves(tree_x), jax.tree.leaves(tree_y)):
        total = total + jnp.vdot(x, y)
    return total


def clip(tree, min_value=None, max_value=None):
    return jax.tree.map(lambda x: jnp.clip(x, min_value, max_value), tree)


def safe_norm(x, min_norm, ord=None, axis=None, keepdims=False):
    norm_ = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=True)
    x = jnp.where(norm_ <= min_norm, jnp.ones_like(x), x)
    norm_ = jnp.squeeze(norm_, axis=axis) if not keepdims else norm_
    masked_norm = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    return jnp.where(norm_ <= min_norm, min_norm, masked_norm)
