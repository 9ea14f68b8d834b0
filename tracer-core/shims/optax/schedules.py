"""optax's learning-rate schedules: functions of the step count (optax/schedules).

A tracelens shim of optax 0.2.8: each schedule is a closure over its hyperparameters, computed
with jax.numpy in optax's order of operations.
"""

import jax.numpy as jnp


def constant_schedule(value):
    return lambda count: value


def polynomial_schedule(init_value, end_value, power, transition_steps, transition_begin=0):
    if transition_steps <= 0:
        return lambda count: init_value
    if transition_begin < 0:
        transition_begin = 0

    def schedule(count):
        count = jnp.clip(count - transition_begin, 0, transition_steps)
        frac = 1 - count / transition_steps
        return (init_value - end_value) * (frac**power) + end_value

    return schedule


def linear_schedule(init_value, end_value, transition_steps, transition_begin=0):
    return polynomial_schedule(
        init_value=init_value, end_value=end_value, power=1, transition_steps=transition_steps, transition_begin=transition_begin
    )


def piecewise_constant_schedule(init_value, boundaries_and_scales=None):
    if boundaries_and_scales is not None:
        for scale in boundaries_and_scales.values():
            if not scale >= 0.0:
                raise ValueError("`piecewise_constant_schedule` expects non-negative scale factors")

    def schedule(count):
        v = init_value
        if boundaries_and_scales is not None:
            for threshold, scale in sorted(boundaries_and_scales.items()):
                indicator = jnp.maximum(0.0, jnp.sign(threshold - count))
                v = v * indicator + (1 - indicator) * scale * v
        return v

    return schedule


def exponential_decay(init_value, transition_steps, decay_rate, transition_begin=0, staircase=False, end_value=None):
    if transition_steps <= 0:
        return lambda count: init_value
    if decay_rate == 0:
        return lambda count: init_value
    if transition_begin < 0:
        transition_begin = 0

    def schedule(count):
        decreased_count = count - transition_begin
        p = decreased_count / transition_steps
        if staircase:
            p = jnp.floor(p)
        decayed_value = jnp.where(decreased_count <= 0, init_value, init_value * jnp.power(decay_rate, p))
        if end_value is not None:
            if decay_rate < 1.0:
                decayed_value = jnp.maximum(decayed_value, end_value)
            else:
                decayed_value = jnp.minimum(decayed_value, end_value)
        return decayed_value

    return schedule


def cosine_decay_schedule(init_value, decay_steps, alpha=0.0, exponent=1.0):
    if not decay_steps > 0:
        raise ValueError(f"The cosine_decay_schedule requires positive decay_steps, got decay_steps={decay_steps!r}.")
    steps = float(decay_steps) if isinstance(decay_steps, int) else decay_steps

    def schedule(count):
        if isinstance(count, int):
            count = float(count)
        count = jnp.minimum(count, steps)
        cosine_decay = 0.5 * (1 + jnp.cos(jnp.pi * count / steps))
        decayed = (1 - alpha) * (cosine_decay**exponent) + alpha
        return init_value * decayed

    return schedule


def join_schedules(schedules, boundaries):
    def schedule(step):
        output = schedules[0](step)
        for boundary, next_schedule in zip(boundaries, schedules[1:]):
            output = jnp.where(step < boundary, output, next_schedule(step - boundary))
        return output

    return schedule


def warmup_cosine_decay_schedule(init_value, peak_value, warmup_steps, decay_steps, end_value=0.0, exponent=1.0):
    alpha = 0.0 if peak_value == 0.0 else end_value / peak_value
    return join_schedules(
        [
            linear_schedule(init_value=init_value, end_value=peak_value, transition_steps=warmup_steps),
            cosine_decay_schedule(init_value=peak_value, decay_steps=decay_steps - warmup_steps, alpha=alpha, exponent=exponent),
        ],
        [warmup_steps],
    )


def warmup_constant_schedule(init_value, peak_value, warmup_steps):
    return join_schedules(
        [linear_schedule(init_value=init_value, end_value=peak_value, transition_steps=warmup_steps), constant_schedule(peak_value)],
        [warmup_steps],
    )


def warmup_exponential_decay_schedule(
    init_value, peak_value, warmup_steps, transition_steps, decay_rate, transition_begin=0, staircase=False, end_value=None
):
    return join_schedules(
        [
            linear_schedule(init_value=init_value, end_value=peak_value, transition_steps=warmup_steps),
            exponential_decay(
                init_value=peak_value,
                transition_steps=transition_steps,
                decay_rate=decay_rate,
                transition_begin=transition_begin,
                staircase=staircase,
                end_value=end_value,
            ),
        ],
        [warmup_steps],
    )
