"""optax's core types: a gradient transformation is an (init, update) pair of functions.

A shim of optax 0.2.8 (optax/_src/base.py) for tracelens: it models the public surface in
plain Python on top of jax, so tracelens can interpret it. Not optax's code.
"""

from typing import NamedTuple


class GradientTransformation(NamedTuple):
    # init(params) -> state; update(updates, state, params=None) -> (updates, state)
    init: object
    update: object


class GradientTransformationExtraArgs(GradientTransformation):
    pass


class EmptyState(NamedTuple):
    pass


NO_PARAMS_MSG = (
    "You are using a transformation that requires the current value of "
    "parameters, but you are not passing `params` when calling `update`."
)


def init_empty_state(params):
    return EmptyState()


def identity():
    def update_fn(updates, state, params=None):
        return updates, state

    return GradientTransformation(init_empty_state, update_fn)


def set_to_zero():
    import jax
    import jax.numpy as jnp

    def update_fn(updates, state, params=None):
        return jax.tree.map(jnp.zeros_like, updates), state

    return GradientTransformation(init_empty_state, update_fn)


def stateless(f):
    def update_fn(updates, state, params=None):
        return f(updates, params), state

    return GradientTransformation(init_empty_state, update_fn)


def stateless_with_tree_map(f):
    import jax

    def update_fn(updates, state, params=None):
        if params is not None:
            return jax.tree.map(f, updates, params), state
        return jax.tree.map(lambda u: f(u, None), updates), state

    return GradientTransformation(init_empty_state, update_fn)


def with_extra_args_support(tx):
    if isinstance(tx, GradientTransformationExtraArgs):
        return tx

    def update(updates, state, params=None, **extra_args):
        return tx.update(updates, state, params)

    return GradientTransformationExtraArgs(tx.init, update)
