"""optax's gradient transformations: the building blocks the optimizers chain together.

A tracelens shim of optax 0.2.8 (optax/_src/transform.py, optax/transforms/): states have
optax's names, fields and dtypes (`count` is int32), and the math follows optax's order of
operations so values match to the last digit.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from optax import _tree
from optax._base import (
    NO_PARAMS_MSG,
    EmptyState,
    GradientTransformation,
    GradientTransformationExtraArgs,
    identity,
    init_empty_state,
    with_extra_args_support,
)


class ScaleState(NamedTuple):
    pass


class ScaleByAdamState(NamedTuple):
    count: object
    mu: object
    nu: object


class ScaleByRmsState(NamedTuple):
    nu: object


class ScaleByRStdDevState(NamedTuple):
    mu: object
    nu: object


class ScaleByScheduleState(NamedTuple):
    count: object


class ScaleByTrustRatioState(NamedTuple):
    pass


class TraceState(NamedTuple):
    trace: object


class AddDecayedWeightsState(NamedTuple):
    pass


class WeightDecaySchedule(NamedTuple):
    count: object


class ClipState(NamedTuple):
    pass


class MaskedState(NamedTuple):
    inner_state: object


class ClipByGlobalNormState(NamedTuple):
    pass


def chain(*args):
    transforms = [with_extra_args_support(t) for t in args]

    def init_fn(params):
        return tuple(t.init(params) for t in transforms)

    def update_fn(updates, state, params=None, **extra_args):
        if len(transforms) != len(state):
            raise ValueError(
                "The number of updates and states has to be the same in chain! Make sure you have called init first!"
            )
        new_state = []
        for s, t in zip(state, transforms):
            updates, new_s = t.update(updates, s, params, **extra_args)
            new_state.append(new_s)
        return updates, tuple(new_state)

    return GradientTransformationExtraArgs(init_fn, update_fn)


def scale(step_size):
    def update_fn(updates, state, params=None):
        return jax.tree.map(lambda g: step_size * g, updates), state

    return GradientTransformation(init_empty_state, update_fn)


def scale_by_schedule(step_size_fn):
    def init_fn(params):
        return ScaleByScheduleState(count=jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None):
        step_size = step_size_fn(state.count)
        updates = jax.tree.map(lambda g: jnp.array(step_size, dtype=g.dtype) * g, updates)
        return updates, ScaleByScheduleState(count=_tree.safe_increment(state.count))

    return GradientTransformation(init_fn, update_fn)


def scale_by_learning_rate(learning_rate=None, *, flip_sign=True):
    if learning_rate is None:
        return identity()
    m = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: m * learning_rate(count))
    return scale(m * learning_rate)


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *, nesterov=False):
    def init_fn(params):
        mu = _tree.zeros_like(params, dtype=mu_dtype)
        nu = _tree.zeros_like(params)
        return ScaleByAdamState(count=jnp.zeros([], jnp.int32), mu=mu, nu=nu)

    def update_fn(updates, state, params=None):
        mu = _tree.update_moment(updates, state.mu, b1, 1)
        nu = _tree.update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = _tree.safe_increment(state.count)
        if nesterov:
            mu_hat = jax.tree.map(
                lambda m, g: b1 * m + (1 - b1) * g,
                _tree.bias_correction(mu, b1, _tree.safe_increment(count_inc)),
                _tree.bias_correction(updates, b1, count_inc),
            )
        else:
            mu_hat = _tree.bias_correction(mu, b1, count_inc)
        nu_hat = _tree.bias_correction(nu, b2, count_inc)
        updates = jax.tree.map(lambda m, v: m / (jnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)
        mu = _tree.cast(mu, mu_dtype)
        nu = _tree.cast_like(nu, state.nu)
        return updates, ScaleByAdamState(count=count_inc, mu=mu, nu=nu)

    return GradientTransformation(init_fn, update_fn)


def scale_by_rms(decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True, bias_correction=False):
    def init_fn(params):
        return ScaleByRmsState(nu=_tree.full_like(params, initial_scale))

    def update_fn(updates, state, params=None):
        nu = _tree.update_moment_per_elem_norm(updates, state.nu, decay, 2)
        if eps_in_sqrt:
            scaling = jax.tree.map(lambda n: jax.lax.rsqrt(n + eps), nu)
        else:
            scaling = jax.tree.map(lambda n: 1 / (jnp.sqrt(n) + eps), nu)
        updates = jax.tree.map(lambda s, g: s * g, scaling, updates)
        return updates, ScaleByRmsState(nu=nu)

    return GradientTransformation(init_fn, update_fn)


def scale_by_stddev(decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True, bias_correction=False):
    def init_fn(params):
        return ScaleByRStdDevState(mu=_tree.zeros_like(params), nu=_tree.full_like(params, initial_scale))

    def update_fn(updates, state, params=None):
        mu = _tree.update_moment(updates, state.mu, decay, 1)
        nu = _tree.update_moment_per_elem_norm(updates, state.nu, decay, 2)
        if eps_in_sqrt:
            scaling = jax.tree.map(lambda m, n: jax.lax.rsqrt(n - jnp.square(m) + eps), mu, nu)
        else:
            scaling = jax.tree.map(lambda m, n: 1 / (jnp.sqrt(n - jnp.square(m)) + eps), mu, nu)
        updates = jax.tree.map(lambda s, g: s * g, scaling, updates)
        return updates, ScaleByRStdDevState(mu=mu, nu=nu)

    return GradientTransformation(init_fn, update_fn)


def trace(decay, nesterov=False, accumulator_dtype=None):
    def init_fn(params):
        return TraceState(trace=_tree.zeros_like(params, dtype=accumulator_dtype))

    def update_fn(updates, state, params=None):
        new_trace = jax.tree.map(lambda g, t: g + decay * t, updates, state.trace)
        if nesterov:
            updates = jax.tree.map(lambda g, t: g + decay * t, updates, new_trace)
        else:
            updates = new_trace
        return updates, TraceState(trace=_tree.cast(new_trace, accumulator_dtype))

    return GradientTransformation(init_fn, update_fn)


def add_decayed_weights(weight_decay=0.0, mask=None):
    def init_fn(params):
        if callable(weight_decay):
            return WeightDecaySchedule(count=jnp.zeros([], jnp.int32))
        return EmptyState()

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError(NO_PARAMS_MSG)
        if callable(weight_decay):
            new_state = WeightDecaySchedule(count=_tree.safe_increment(state.count))
            s = weight_decay(state.count)
        else:
            new_state = state
            if isinstance(weight_decay, (int, float)) and weight_decay == 0.0:
                return updates, new_state
            s = weight_decay
        return jax.tree.map(lambda g, p: g + s * p, updates, params), new_state

    if mask is None:
        return GradientTransformation(init_fn, update_fn)

    # optax.masked: the mask (a tree of Python bools, or a function of the parameters that
    # returns one) is a prefix of the parameter tree; unmasked subtrees pass unchanged.
    def masked_update(updates, state, params=None):
        if params is None:
            raise ValueError(NO_PARAMS_MSG)
        mask_tree = mask(params) if callable(mask) else mask
        decayed, inner_state = update_fn(updates, state.inner_state, params)
        chosen = jax.tree.map(lambda m, d, g: d if m else g, mask_tree, decayed, updates)
        return chosen, MaskedState(inner_state=inner_state)

    return GradientTransformation(lambda params: MaskedState(inner_state=init_fn(params)), masked_update)


def scale_by_trust_ratio(min_norm=0.0, trust_coefficient=1.0, eps=0.0):
    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError(NO_PARAMS_MSG)

        def scale_update(update, param):
            param_norm = _tree.safe_norm(param, min_norm)
            update_norm = _tree.safe_norm(update, min_norm)
            trust_ratio = trust_coefficient * param_norm / (update_norm + eps)
            zero_norm = jnp.logical_or(param_norm == 0.0, update_norm == 0.0)
            safe_trust_ratio = jnp.where(zero_norm, jnp.array(1.0, dtype=param.dtype), trust_ratio)
            return update * safe_trust_ratio

        return jax.tree.map(scale_update, updates, params), state

    return GradientTransformation(init_empty_state, update_fn)


def clip(max_delta):
    def update_fn(updates, state, params=None):
        return _tree.clip(updates, -max_delta, max_delta), state

    return GradientTransformation(init_empty_state, update_fn)


def clip_by_global_norm(max_norm):
    def update_fn(updates, state, params=None):
        g_norm = _tree.norm(updates)
        trigger = jnp.squeeze(g_norm < max_norm)

        def clip_fn(t):
            return jax.lax.select(trigger, t, t / g_norm.astype(t.dtype) * max_norm)

        return jax.tree.map(clip_fn, updates), state

    return GradientTransformation(init_empty_state, update_fn)


def apply_updates(params, updates):
    return jax.tree.map(lambda p, u: jnp.asarray(p + u).astype(jnp.asarray(p).dtype), params, updates)


def global_norm(updates):
    return _tree.norm(updates)
