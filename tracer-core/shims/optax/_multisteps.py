"""optax.MultiSteps: gradient accumulation over k mini-steps (optax/transforms/_accumulation.py).

A tracelens shim of optax 0.2.8. Without a `should_skip_update_fn`, optax's `lax.cond` always
takes the update branch; the shim calls that branch directly (same values and state).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from optax import _tree
from optax._base import GradientTransformation, with_extra_args_support


class MultiStepsState(NamedTuple):
    mini_step: object
    gradient_step: object
    inner_opt_state: object
    acc_grads: object
    skip_state: object = ()


class MultiSteps:
    def __init__(self, opt, every_k_schedule, use_grad_mean=True, should_skip_update_fn=None, accumulator_dtype=jnp.float32):
        self._opt = with_extra_args_support(opt)
        if isinstance(every_k_schedule, int):
            self._every_k_schedule = lambda step: every_k_schedule
        else:
            self._every_k_schedule = every_k_schedule
        self._use_grad_mean = use_grad_mean
        self._accumulator_dtype = accumulator_dtype
        self._should_skip_update_fn = should_skip_update_fn

    @property
    def inner_opt(self):
        return self._opt

    def _acc_update(self, grad, acc, n_acc):
        if self._use_grad_mean:
            return acc + (grad - acc) / (n_acc + 1)
        return grad + acc

    def init(self, params):
        acc_grads = _tree.zeros_like(params, dtype=self._accumulator_dtype)
        gradient_step = jnp.zeros([], dtype=jnp.int32)
        skip_state = ()
        if self._should_skip_update_fn is not None:
            _, skip_state = self._should_skip_update_fn(_tree.zeros_like(params), gradient_step, params)
        return MultiStepsState(
            mini_step=jnp.zeros([], dtype=jnp.int32),
            gradient_step=gradient_step,
            inner_opt_state=self._opt.init(params),
            acc_grads=acc_grads,
            skip_state=skip_state,
        )

    def update(self, updates, state, params=None, **extra_args):
        k_steps = self._every_k_schedule(state.gradient_step)
        skip_state = ()
        if self._should_skip_update_fn is not None:
            should_skip, skip_state = self._should_skip_update_fn(updates, state.gradient_step, params)
            if should_skip.dtype != jnp.bool_ or should_skip.shape != ():
                raise ValueError(
                    "The `should_skip_update_fn` function should return a boolean scalar array, but it returned an "
                    f"array of dtype {should_skip.dtype} and shape {should_skip.shape}"
                )
        acc_grads = jax.tree.map(lambda upd, acc: self._acc_update(upd, acc, state.mini_step), updates, state.acc_grads)
        final_updates, new_inner_state = self._opt.update(_tree.cast_like(acc_grads, updates), state.inner_opt_state, params, **extra_args)
        emit = state.mini_step == k_steps - 1
        new_state = MultiStepsState(
            mini_step=_tree.safe_increment(state.mini_step) % k_steps,
            gradient_step=emit * _tree.safe_increment(state.gradient_step) + (1 - emit) * state.gradient_step,
            inner_opt_state=jax.tree.map(
                lambda st, nst: jnp.where(emit, nst, st).astype(st.dtype), state.inner_opt_state, new_inner_state
            ),
            acc_grads=jax.tree.map(lambda ga: ((1 - emit) * ga).astype(self._accumulator_dtype), acc_grads),
            skip_state=skip_state,
        )
        final_updates = jax.tree.map(lambda ga: emit * ga, final_updates)
        return final_updates, new_state

    def has_updated(self, state):
        return jnp.logical_and(state.mini_step == 0, state.gradient_step > 0)

    def gradient_transformation(self):
        return GradientTransformation(init=self.init, update=self.update)


def skip_not_finite(updates, gradient_step, params):
    all_is_finite = [jnp.sum(jnp.logical_not(jnp.isfinite(p))) for p in jax.tree.leaves(updates)]
    num_not_finite = jnp.sum(jnp.array(all_is_finite))
    should_skip = num_not_finite > 0
    return should_skip, {"should_skip": should_skip, "num_not_finite": num_not_finite}
