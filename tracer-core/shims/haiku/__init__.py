"""haiku, as tracelens models it: a shim of dm-haiku 0.0.17's transforms in plain Python.

`transform`, `transform_with_state` and `without_apply_rng` return haiku's pairs of pure
functions, whose `init` and `apply` call the user's function with the arguments they are
given, as haiku does: under `jax.jit(model.apply)` the user's own code in that function is
traced. Nothing else of haiku is modelled: its modules (`hk.Linear`, `hk.LSTM`, ...),
`get_parameter`, `next_rng_key`, `PRNGSequence` and every other name are unknown to
tracelens (opaque), so what they make is unknown and never a finding; the parameters and
state `init` returns are unknown too. haiku's check that `apply` gets an RNG (or None) is not
modelled.

Each `init` and `apply` names the user's function as its body (`__tracelens_body__`), so
`trace` and hover report `jax.jit(model.apply)` under that function; JAX itself traces
haiku's `apply_fn` (`init_fn`), and its messages (and tracelens') name that.
"""

from typing import Callable, NamedTuple

import haiku._unknown as _unknown  # a module that defines nothing, on purpose


class Transformed(NamedTuple):
    init: Callable
    apply: Callable


class TransformedWithState(NamedTuple):
    init: Callable
    apply: Callable


def transform(f, *, apply_rng=True):
    def init_fn(rng, *args, **kwargs):
        f(*args, **kwargs)
        return _unknown.params(rng)

    def apply_fn(params, rng, *args, **kwargs):
        return f(*args, **kwargs)

    init_fn.__tracelens_body__ = f
    apply_fn.__tracelens_body__ = f
    return Transformed(init_fn, apply_fn)


def transform_with_state(f):
    def init_fn(rng, *args, **kwargs):
        f(*args, **kwargs)
        return _unknown.params(rng), _unknown.state(rng)

    def apply_fn(params, state, rng, *args, **kwargs):
        return f(*args, **kwargs), _unknown.state(state)

    init_fn.__tracelens_body__ = f
    apply_fn.__tracelens_body__ = f
    return TransformedWithState(init_fn, apply_fn)


def without_apply_rng(transformed):
    if isinstance(transformed, TransformedWithState):
        apply_with_rng = transformed.apply

        def apply_fn(params, state, *args, **kwargs):
            return apply_with_rng(params, state, None, *args, **kwargs)

        apply_fn.__tracelens_body__ = getattr(apply_with_rng, "__tracelens_body__", None)
        return TransformedWithState(transformed.init, apply_fn)

    apply_with_rng = transformed.apply

    def apply_fn(params, *args, **kwargs):
        return apply_with_rng(params, None, *args, **kwargs)

    apply_fn.__tracelens_body__ = getattr(apply_with_rng, "__tracelens_body__", None)
    return Transformed(transformed.init, apply_fn)
