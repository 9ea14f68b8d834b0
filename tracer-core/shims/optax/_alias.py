"""optax's ready-made optimizers, each a chain of transformations (optax/_src/alias.py).

A tracelens shim of optax 0.2.8. Adding an optimizer is a few lines here: chain the
transformations of `_transforms.py` as optax documents it, and export it in `__init__.py`.
"""

from optax._base import identity
from optax._transforms import (
    add_decayed_weights,
    chain,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_rms,
    scale_by_stddev,
    scale_by_trust_ratio,
    trace,
)


def sgd(learning_rate, momentum=None, nesterov=False, accumulator_dtype=None):
    if momentum is not None:
        opt = trace(decay=momentum, nesterov=nesterov, accumulator_dtype=accumulator_dtype)
    else:
        opt = identity()
    return chain(opt, scale_by_learning_rate(learning_rate))


def adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *, nesterov=False):
    return chain(
        scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype, nesterov=nesterov),
        scale_by_learning_rate(learning_rate),
    )


def adamw(
    learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, weight_decay=1e-4, mask=None, *, nesterov=False
):
    return chain(
        scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype, nesterov=nesterov),
        add_decayed_weights(weight_decay, mask),
        scale_by_learning_rate(learning_rate),
    )


def lamb(learning_rate, b1=0.9, b2=0.999, eps=1e-6, eps_root=0.0, weight_decay=0.0, mask=None):
    return chain(
        scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root),
        add_decayed_weights(weight_decay=weight_decay, mask=mask),
        scale_by_trust_ratio(),
        scale_by_learning_rate(learning_rate),
    )


def rmsprop(
    learning_rate, decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True, centered=False, momentum=None, nesterov=False,
    bias_correction=False,
):
    if centered:
        scaling = scale_by_stddev(decay=decay, eps=eps, initial_scale=initial_scale, eps_in_sqrt=eps_in_sqrt)
    else:
        scaling = scale_by_rms(decay=decay, eps=eps, initial_scale=initial_scale, eps_in_sqrt=eps_in_sqrt)
    return chain(
        scaling,
        scale_by_learning_rate(learning_rate),
        trace(decay=momentum, nesterov=nesterov) if momentum is not None else identity(),
    )
