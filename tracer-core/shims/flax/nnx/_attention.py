"""flax.nnx's LinearGeneral and MultiHeadAttention as tracelens models them (flax 0.12.8): the
same Params, Cache variables, shapes and checks as flax, the autoregressive decoding cache
(`init_cache`, `decode=True`), causal masking and attention dropout. Not modelled: batch axes
of LinearGeneral, normalised queries, grouped-query heads (those arguments are not accepted, so
such a layer is unknown rather than wrong)."""

import jax
import jax.numpy as jnp
from jax import lax

from flax.nnx import initializers
from flax.nnx._graph import Module
from flax.nnx._layers import default_kernel_init, promote_dtype
from flax.nnx._rnglib import Rngs
from flax.nnx._variables import Cache, Intermediate, Param


def _tuple(x):
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


def _prod(xs):
    out = 1
    for x in xs:
        out = out * x
    return out


class LinearGeneral(Module):
    def __init__(
        self,
        in_features,
        out_features,
        *,
        axis=-1,
        use_bias=True,
        dtype=None,
        param_dtype=jnp.float32,
        kernel_init=default_kernel_init,
        bias_init=initializers.zeros_init(),
        precision=None,
        rngs,
    ):
        self.in_features = _tuple(in_features)
        self.out_features = _tuple(out_features)
        self.axis = _tuple(axis)
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        if len(self.in_features) != len(self.axis):
            raise ValueError(f"in_features and axis must have the same length. Got {self.in_features} and {self.axis}.")
        kernel_shape = self.in_features + self.out_features
        flat = (_prod(self.in_features), _prod(self.out_features))
        self.kernel = Param(jnp.reshape(kernel_init(rngs.params(), flat, param_dtype), kernel_shape))
        if use_bias:
            bias = bias_init(rngs.params(), (_prod(self.out_features),), param_dtype)
            self.bias = Param(jnp.reshape(bias, self.out_features))
        else:
            self.bias = None

    def __call__(self, inputs, out_sharding=None):
        ndim = inputs.ndim
        axis = tuple(sorted([ax if ax >= 0 else ndim + ax for ax in self.axis]))
        expanded_batch_shape = tuple([1 for ax in range(ndim) if ax not in axis])
        kernel = self.kernel[...]
        bias = self.bias[...] if self.bias is not None else None
        contract_ind = tuple(range(len(axis)))
        inputs, kernel, bias = promote_dtype((inputs, kernel, bias), dtype=self.dtype)
        out = lax.dot_general(inputs, kernel, ((axis, contract_ind), ((), ())), precision=self.precision)
        if bias is not None:
            out += jnp.reshape(bias, expanded_batch_shape + self.out_features)
        return out


def _validate_qkv_shapes(query, key, value):
    arrays = (query, key, value)
    for a in arrays[1:]:
        if a.ndim != query.ndim:
            raise ValueError(f"q, k, v must have same rank, but got {query.ndim}, {key.ndim}, {value.ndim}.")
    for a in arrays[1:]:
        if a.shape[:-3] != query.shape[:-3]:
            raise ValueError(f"q, k, v batch dims must match, but got shapes {query.shape}, {key.shape}, {value.shape}.")


def dot_product_attention(
    query, key, value, bias=None, mask=None, broadcast_dropout=True, dropout_rng=None, dropout_rate=0.0,
    deterministic=False, dtype=None, precision=None, module=None, promote_dtype=promote_dtype, is_causal=False,
):
    """Attention with matching query and key heads (flax's path without grouped heads)."""
    query, key, value = promote_dtype((query, key, value), dtype=dtype)
    dtype = query.dtype
    _validate_qkv_shapes(query, key, value)
    if key.shape[-3] != value.shape[-3]:
        raise ValueError(f"k, v lengths must match, but got {key.shape[-3]} and {value.shape[-3]}.")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"q, k depths must match, but got {query.shape[-1]} and {key.shape[-1]}.")
    depth = query.shape[-1]
    query = query / jnp.sqrt(depth).astype(dtype)
    weights = jnp.einsum("...qhd,...khd->...hqk", query, key, precision=precision)
    if bias is not None:
        weights = weights + bias
    if mask is not None or is_causal:
        masks = [m for m in [mask] if m is not None]
        if is_causal:
            t, s = weights.shape[-2:]
            target_shape = mask.shape if mask is not None else weights.shape
            masks.append(jnp.broadcast_to(jnp.tril(jnp.ones((t, s), dtype=dtype)), target_shape))
        weights = jnp.where(combine_masks(*masks, dtype=dtype), weights, jnp.asarray(_lowest(dtype), dtype=dtype))
    weights = jax.nn.softmax(weights).astype(dtype)
    if module is not None:
        module.sow(Intermediate, "attention_weights", weights)
    if not deterministic and dropout_rate > 0.0:
        keep_prob = 1.0 - dropout_rate
        if broadcast_dropout:
            dropout_shape = tuple([1] * (key.ndim - 2)) + weights.shape[-2:]
        else:
            dropout_shape = weights.shape
        keep = jax.random.bernoulli(dropout_rng, keep_prob, dropout_shape)
        weights = weights * (keep.astype(dtype) / jnp.asarray(keep_prob, dtype=dtype))
    return jnp.einsum("...hqk,...khd->...qhd", weights, value, precision=precision)


def _lowest(dtype):
    """`jnp.finfo(dtype).min`, which tracelens does not model."""
    if dtype == jnp.float16:
        return -65504.0
    if dtype == jnp.bfloat16:
        return -3.3895313892515355e38
    if dtype == jnp.float64:
        return -1.7976931348623157e308
    return -3.4028234663852886e38


def combine_masks(*masks, dtype=jnp.float32):
    masks_list = [m for m in masks if m is not None]
    if not masks_list:
        return None
    if not all(m.ndim == masks_list[0].ndim for m in masks_list):
        raise ValueError(f"masks must have same rank, but got {tuple(m.ndim for m in masks_list)}.")
    mask = masks_list[0]
    for other_mask in masks_list[1:]:
        mask = jnp.logical_and(mask, other_mask)
    return mask.astype(dtype)


def _first_from(*args, error_msg):
    for arg in args:
        if arg is not None:
            return arg
    raise ValueError(error_msg)


class MultiHeadAttention(Module):
    __tracelens_summary__ = "num_heads={num_heads}, in_features={in_features}"

    def __init__(
        self,
        num_heads,
        in_features,
        qkv_features=None,
        out_features=None,
        *,
        dtype=None,
        param_dtype=jnp.float32,
        dropout_rate=0.0,
        deterministic=None,
        precision=None,
        kernel_init=default_kernel_init,
        out_kernel_init=None,
        bias_init=initializers.zeros_init(),
        out_bias_init=None,
        use_bias=True,
        attention_fn=dot_product_attention,
        decode=None,
        broadcast_dropout=True,
        keep_rngs=True,
        rngs,
    ):
        self.num_heads = num_heads
        self.in_features = in_features
        self.qkv_features = qkv_features if qkv_features is not None else in_features
        self.out_features = out_features if out_features is not None else in_features
        self.in_kv_features = in_features
        self.num_kv_heads = num_heads
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.dropout_rate = dropout_rate
        self.broadcast_dropout = broadcast_dropout
        self.deterministic = deterministic
        self.attention_fn = attention_fn
        self.precision = precision
        self.use_bias = use_bias
        self.decode = decode
        if self.qkv_features % self.num_heads != 0:
            raise ValueError(f"Memory dimension ({self.qkv_features}) must be divisible by 'num_heads' heads ({self.num_heads}).")
        self.head_dim = self.qkv_features // self.num_heads

        def linear_general(din, dout, axis=-1, k_init=kernel_init, b_init=bias_init):
            return LinearGeneral(
                din,
                dout,
                axis=axis,
                dtype=dtype,
                param_dtype=param_dtype,
                kernel_init=k_init,
                bias_init=b_init,
                use_bias=use_bias,
                precision=precision,
                rngs=rngs,
            )

        self.query = linear_general(self.in_features, (self.num_heads, self.head_dim))
        self.key = linear_general(self.in_kv_features, (self.num_kv_heads, self.head_dim))
        self.value = linear_general(self.in_kv_features, (self.num_kv_heads, self.head_dim))
        self.query_ln = None
        self.key_ln = None
        self.out = linear_general(
            (self.num_heads, self.head_dim), self.out_features, (-2, -1), out_kernel_init or kernel_init, out_bias_init or bias_init
        )
        self.rngs = rngs.dropout.fork() if keep_rngs and dropout_rate > 0 else None
        self.cached_key = None
        self.cached_value = None
        self.cache_index = None

    def __call__(
        self,
        inputs_q,
        inputs_k=None,
        inputs_v=None,
        *,
        mask=None,
        deterministic=None,
        rngs=None,
        sow_weights=False,
        decode=None,
        is_causal=False,
        out_sharding=None,
        qkv_sharding=None,
    ):
        if rngs is None:
            rngs = self.rngs
        elif isinstance(rngs, Rngs):
            rngs = rngs.dropout
        if inputs_k is None:
            if inputs_v is not None:
                raise ValueError(
                    "`inputs_k` cannot be None if `inputs_v` is not None. To have both `inputs_k` and `inputs_v` be the "
                    "same value, pass in the value to `inputs_k` and leave `inputs_v` as None."
                )
            inputs_k = inputs_q
        if inputs_v is None:
            inputs_v = inputs_k
        if inputs_q.shape[-1] != self.in_features:
            raise ValueError(f"Incompatible input dimension, got {inputs_q.shape[-1]} but module expects {self.in_features}.")
        query = self.query(inputs_q)
        key = self.key(inputs_k)
        value = self.value(inputs_v)
        decode = _first_from(decode, self.decode, error_msg=_NO_DECODE)
        if decode:
            if self.cached_key is None or self.cached_value is None or self.cache_index is None:
                raise ValueError("Autoregressive cache not initialized, call ``init_cache`` first.")
            cache_shape = self.cached_key.shape
            batch_dims = tuple(cache_shape[:-3])
            max_length = cache_shape[-3]
            expected_shape = batch_dims + (1, cache_shape[-2], cache_shape[-1])
            if expected_shape != key.shape:
                raise ValueError(f"Autoregressive cache shape error, expected key shape {expected_shape} instead got {key.shape}.")
            cur_index = self.cache_index[...]
            zero = jnp.array(0, dtype=cur_index.dtype)
            indices = (zero,) * len(batch_dims) + (cur_index, zero, zero)
            key = lax.dynamic_update_slice(self.cached_key[...], key, indices)
            value = lax.dynamic_update_slice(self.cached_value[...], value, indices)
            self.cached_key[...] = key
            self.cached_value[...] = value
            self.cache_index[...] += 1
            mask = combine_masks(mask, jnp.broadcast_to(jnp.arange(max_length) <= cur_index, batch_dims + (1, 1, max_length)))
        if self.dropout_rate > 0.0:
            deterministic = _first_from(deterministic, self.deterministic, error_msg=_NO_DETERMINISTIC)
            if not deterministic:
                if rngs is None:
                    raise ValueError(
                        "'rngs' must be provided to __call__ method if MultiHeadAttention instance is defined with keep_rngs=False."
                    )
                dropout_rng = rngs()
            else:
                dropout_rng = None
        else:
            deterministic = True
            dropout_rng = None
        x = self.attention_fn(
            query, key, value, mask=mask, dropout_rng=dropout_rng, dropout_rate=self.dropout_rate,
            broadcast_dropout=self.broadcast_dropout, deterministic=deterministic, dtype=self.dtype,
            precision=self.precision, module=self if sow_weights else None, is_causal=is_causal,
        )
        return self.out(x)

    def init_cache(self, input_shape, dtype=jnp.float32):
        cache_shape = tuple(input_shape[:-1]) + (self.num_kv_heads, self.head_dim)
        self.cached_key = Cache(jnp.zeros(cache_shape, dtype))
        self.cached_value = Cache(jnp.zeros(cache_shape, dtype))
        self.cache_index = Cache(jnp.array(0, dtype=jnp.int32))


_NO_DECODE = """No `decode` argument was provided to MultiHeadAttention
        as either a __call__ argument, class attribute, or nnx.flag."""
_NO_DETERMINISTIC = """No `deterministic` argument was provided to MultiHeadAttention
          as either a __call__ argument, class attribute, or nnx.flag."""


def make_attention_mask(query_input, key_input, pairwise_fn=jnp.multiply, extra_batch_dims=0, dtype=jnp.float32):
    mask = pairwise_fn(jnp.expand_dims(query_input, axis=-1), jnp.expand_dims(key_input, axis=-2))
    mask = jnp.expand_dims(mask, axis=-3)
    if extra_batch_dims > 0:
        mask = jnp.expand_dims(mask, axis=tuple(range(extra_batch_dims)))
    return mask.astype(dtype)


def make_causal_mask(x, extra_batch_dims=0, dtype=jnp.float32):
    idxs = jnp.broadcast_to(jnp.arange(x.shape[-1], dtype=jnp.int32), x.shape)
    return make_attention_mask(idxs, idxs, jnp.greater_equal, extra_batch_dims=extra_batch_dims, dtype=dtype)
