"""optax, as tracelens models it: a shim of optax 0.2.8's public surface in plain Python on
top of jax. Names not listed here are unknown to tracelens (opaque), never missing.

Coverage (see docs/ARCHITECTURE.md, "Library shims"): the optimizers sgd, adam, adamw, lamb,
rmsprop; the transformations chain, scale, scale_by_*, trace, add_decayed_weights, clip,
clip_by_global_norm; MultiSteps; the schedules; the common losses; apply_updates and the
tree utilities.
"""

from optax import losses, schedules, tree, tree_utils
from optax._alias import adam, adamw, lamb, rmsprop, sgd
from optax._base import (
    EmptyState,
    GradientTransformation,
    GradientTransformationExtraArgs,
    identity,
    init_empty_state,
    set_to_zero,
    stateless,
    stateless_with_tree_map,
    with_extra_args_support,
)
from optax._multisteps import MultiSteps, MultiStepsState, skip_not_finite
from optax._transforms import (
    AddDecayedWeightsState,
    ClipByGlobalNormState,
    ClipState,
    MaskedState,
    ScaleByAdamState,
    ScaleByRmsState,
    ScaleByRStdDevState,
    ScaleByScheduleState,
    ScaleByTrustRatioState,
    ScaleState,
    TraceState,
    add_decayed_weights,
    apply_updates,
    chain,
    clip,
    clip_by_global_norm,
    global_norm,
    scale,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_rms,
    scale_by_schedule,
    scale_by_stddev,
    scale_by_trust_ratio,
    trace,
)
from optax._tree import safe_increment
from optax._tree import safe_increment as safe_int32_increment
from optax._tree import safe_norm
from optax.losses import (
    l2_loss,
    sigmoid_binary_cross_entropy,
    softmax_cross_entropy,
    softmax_cross_entropy_with_integer_labels,
    squared_error,
)
from optax.schedules import (
    constant_schedule,
    cosine_decay_schedule,
    exponential_decay,
    join_schedules,
    linear_schedule,
    piecewise_constant_schedule,
    polynomial_schedule,
    warmup_constant_schedule,
    warmup_cosine_decay_schedule,
    warmup_exponential_decay_schedule,
)
