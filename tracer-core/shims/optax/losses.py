"""optax's losses (optax/losses): per-example values, reduced by the caller.

A tracelens shim of optax 0.2.8, with optax's argument checks and their messages.
"""

import jax
import jax.numpy as jnp

_FLOATING = ("float16", "bfloat16", "float32", "float64")
_INTEGER = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _check_subdtype(array, kinds, name):
    dtype = jnp.asarray(array).dtype
    if str(dtype) not in kinds:
        raise TypeError(
            f"Expected the input to have a dtype that is a subdtype of <class 'numpy.{name}'>, got {dtype} instead"
        )


def _check_shapes_equal(a, b):
    a_shape = jnp.shape(a)
    b_shape = jnp.shape(b)
    if a_shape != b_shape:
        raise ValueError(f"Shape mismatch: got {a_shape} and {b_shape}.")


def squared_error(predictions, targets=None):
    _check_subdtype(predictions, _FLOATING, "floating")
    if targets is not None:
        _check_shapes_equal(predictions, targets)
    errors = predictions - targets if targets is not None else predictions
    return errors**2


def l2_loss(predictions, targets=None):
    predictions = jnp.asarray(predictions)
    return 0.5 * squared_error(predictions, targets)


def sigmoid_binary_cross_entropy(logits, labels):
    _check_subdtype(logits, _FLOATING, "floating")
    labels = jnp.asarray(labels).astype(logits.dtype)
    log_p = jax.nn.log_sigmoid(logits)
    log_not_p = jax.nn.log_sigmoid(-logits)
    return -labels * log_p - (1.0 - labels) * log_not_p


def softmax_cross_entropy(logits, labels, axis=-1, where=None):
    _check_subdtype(logits, _FLOATING, "floating")
    if where is None:
        log_probs = jax.nn.log_softmax(logits, axis)
        return -(labels * log_probs).sum(axis)
    if where.ndim != logits.ndim:
        where = jnp.expand_dims(where, axis)
    log_probs = jax.nn.log_softmax(logits, axis, where=where)
    return -(labels * log_probs).sum(axis, where=where)


def softmax_cross_entropy_with_integer_labels(logits, labels, axis=-1, where=None):
    _check_subdtype(logits, _FLOATING, "floating")
    _check_subdtype(labels, _INTEGER, "integer")
    if not isinstance(axis, int):
        raise ValueError(
            f"Keyword argument 'axis' must be of type 'int' or 'tuple[int, ...]' but actual type is {type(axis)}."
        )
    if axis < 0:
        axis = axis + logits.ndim
    label_logits = jnp.take_along_axis(logits, jnp.expand_dims(labels, axis), axis=axis).take(0, axis=axis)
    if where is None:
        log_normalizers = jax.nn.logsumexp(logits, axis=axis)
        return log_normalizers - label_logits
    if where.ndim != logits.ndim:
        where = jnp.expand_dims(where, axis)
    log_normalizers = jax.nn.logsumexp(logits, axis=axis, where=where)
    return jnp.where(jnp.any(where, axis), log_normalizers - label_logits, 0.0)

