"""flax.linen's attention (flax/linen/attention.py), as a tracelens shim of flax 0.12.8:
dot-product attention, the masks, and MultiHeadDotProductAttention/SelfAttention with
flax's parameter names (query, key, value, out) and shapes, and the autoregressive cache
(`decode=True`: the `cache` collection's cached_key, cached_value and cache_index)."""

import jax
import jax.numpy as jnp
from jax import lax, random

from flax import _unknown
from flax.linen import initializers
from flax.linen.dtypes import promote_dtype
from flax.linen.linear import DenseGeneral, default_kernel_init
from flax.linen.module import Module, compact, merge_param
from flax.linen.normalization import LayerNorm


def dot_product_attention_weights(
    query, key, bias=None, mask=None, broadcast_dropout=True, dropout_rng=None, dropout_rate=0.0, deterministic=False,
    dtype=None, precision=None, module=None, force_fp32_for_softmax=False, einsum_dot_general=None, einsum=None,
):
    query, key = promote_dtype(query, key, dtype=dtype)
    dtype = query.dtype
    depth = query.shape[-1]
    query = query / jnp.sqrt(depth).astype(dtype)
    attn_weights = jnp.einsum("...qhd,...khd->...hqk", query, key, precision=precision)
    if bias is not None:
        attn_weights = attn_weights + bias
    if mask is not None:
        big_neg = jnp.asarray(-3.4028235e38 if dtype == jnp.float32 else -65504.0, dtype)
        attn_weights = jnp.where(mask, attn_weights, big_neg)
    attn_weights = jax.nn.softmax(attn_weights).astype(dtype)
    if module is not None:
        module.sow("intermediates", "attention_weights", attn_weights)
    if not deterministic and dropout_rate > 0.0:
        keep_prob = 1.0 - dropout_rate
        if broadcast_dropout:
            dropout_shape = tuple([1] * (key.ndim - 2)) + attn_weights.shape[-2:]
            keep = random.bernoulli(dropout_rng, keep_prob, dropout_shape)
        else:
            keep = random.bernoulli(dropout_rng, keep_prob, attn_weights.shape)
        multiplier = keep.astype(dtype) / jnp.asarray(keep_prob, dtype=dtype)
        attn_weights = attn_weights * multiplier
    return attn_weights


def dot_product_attention(
    query, key, value, bias=None, mask=None, broadcast_dropout=True, dropout_rng=None, dropout_rate=0.0,
    deterministic=False, dtype=None, precision=None, module=None, force_fp32_for_softmax=False, einsum_dot_general=None,
    qk_attn_weights_einsum=None, attn_weights_value_einsum=None,
):
    query, key, value = promote_dtype(query, key, value, dtype=dtype)
    dtype = query.dtype
    if not (query.ndim == key.ndim == value.ndim):
        raise ValueError("q, k, v must have same rank.")
    if not (query.shape[:-3] == key.shape[:-3] == value.shape[:-3]):
        raise ValueError("q, k, v batch dims must match.")
    if not (query.shape[-2] == key.shape[-2] == value.shape[-2]):
        raise ValueError("q, k, v num_heads must match.")
    if key.shape[-3] != value.shape[-3]:
        raise ValueError("k, v lengths must match.")
    attn_weights = dot_product_attention_weights(
        query, key, bias, mask, broadcast_dropout, dropout_rng, dropout_rate, deterministic, dtype, precision, module
    )
    return jnp.einsum("...hqk,...khd->...qhd", attn_weights, value, precision=precision)


def make_attention_mask(query_input, key_input, pairwise_fn=jnp.multiply, extra_batch_dims=0, dtype=jnp.float32):
    mask = pairwise_fn(jnp.expand_dims(query_input, axis=-1), jnp.expand_dims(key_input, axis=-2))
    mask = jnp.expand_dims(mask, axis=-3)
    if extra_batch_dims:
        mask = jnp.expand_dims(mask, axis=tuple(range(extra_batch_dims)))
    return mask.astype(dtype)


def make_causal_mask(x, extra_batch_dims=0, dtype=jnp.float32):
    idxs = jnp.broadcast_to(jnp.arange(x.shape[-1], dtype=jnp.int32), x.shape)
    return make_attention_mask(idxs, idxs, jnp.greater_equal, extra_batch_dims=extra_batch_dims, dtype=dtype)


def combine_masks(*masks, dtype=jnp.float32):
    masks_list = [m for m in masks if m is not None]
    if not masks_list:
        return None
    mask = masks_list[0]
    for other_mask in masks_list[1:]:
        # (a != 0) and (b != 0), as jnp.logical_and computes it on float masks.
        mask = jnp.logical_and(mask.astype(bool), other_mask.astype(bool))
    return mask.astype(dtype)


class MultiHeadDotProductAttention(Module):
    num_heads: int
    dtype: object = None
    param_dtype: object = jnp.float32
    qkv_features: object = None
    out_features: object = None
    broadcast_dropout: bool = True
    dropout_rate: float = 0.0
    deterministic: object = None
    precision: object = None
    kernel_init: object = default_kernel_init
    out_kernel_init: object = None
    bias_init: object = initializers.zeros_init()
    out_bias_init: object = None
    use_bias: bool = True
    attention_fn: object = dot_product_attention
    decode: bool = False
    normalize_qk: bool = False

    @compact
    def __call__(self, inputs_q, inputs_k=None, inputs_v=None, *, inputs_kv=None, mask=None, deterministic=None, dropout_rng=None, sow_weights=False):
        if inputs_kv is not None:
            inputs_k = inputs_kv
            inputs_v = inputs_kv
        elif inputs_k is None:
            inputs_k = inputs_q
            inputs_v = inputs_q
        elif inputs_v is None:
            inputs_v = inputs_k
        features = self.out_features or inputs_q.shape[-1]
        qkv_features = self.qkv_features or inputs_q.shape[-1]
        if qkv_features % self.num_heads != 0:
            raise AssertionError(f"Memory dimension ({qkv_features}) must be divisible by number of heads ({self.num_heads}).")
        head_dim = qkv_features // self.num_heads

        def dense(name):
            return DenseGeneral(
                axis=-1, dtype=self.dtype, param_dtype=self.param_dtype, features=(self.num_heads, head_dim),
                kernel_init=self.kernel_init, bias_init=self.bias_init, use_bias=self.use_bias, precision=self.precision,
                name=name,
            )

        query = dense("query")(inputs_q)
        key = dense("key")(inputs_k)
        value = dense("value")(inputs_v)
        if self.normalize_qk:
            query = LayerNorm(name="query_ln", use_bias=False, dtype=self.dtype, param_dtype=self.param_dtype)(query)
            key = LayerNorm(name="key_ln", use_bias=False, dtype=self.dtype, param_dtype=self.param_dtype)(key)
        if self.decode:
            # The autoregressive cache: made at init from the shapes of the whole sequence,
            # then one position written per call (flax's `is_initialized` test).
            is_initialized = self.has_variable("cache", "cached_key")
            cached_key = self.variable("cache", "cached_key", jnp.zeros, key.shape, key.dtype)
            cached_value = self.variable("cache", "cached_value", jnp.zeros, value.shape, value.dtype)
            cache_index = self.variable("cache", "cache_index", lambda: jnp.array(0, dtype=jnp.int32))
            if is_initialized:
                cache_shape = cached_key.value.shape
                batch_dims = tuple(cache_shape[:-3])
                max_length = cache_shape[-3]
                expected_shape = batch_dims + (1, cache_shape[-2], cache_shape[-1])
                if expected_shape != query.shape:
                    raise ValueError(
                        f"Autoregressive cache shape error, expected query shape {expected_shape} instead got {query.shape}."
                    )
                cur_index = cache_index.value
                zero = jnp.array(0, dtype=cur_index.dtype)
                indices = (zero,) * len(batch_dims) + (cur_index, zero, zero)
                key = lax.dynamic_update_slice(cached_key.value, key, indices)
                value = lax.dynamic_update_slice(cached_value.value, value, indices)
                cached_key.value = key
                cached_value.value = value
                cache_index.value = cache_index.value + 1
                mask = combine_masks(mask, jnp.broadcast_to(jnp.arange(max_length) <= cur_index, batch_dims + (1, 1, max_length)))
        if self.dropout_rate > 0.0:
            m_deterministic = merge_param("deterministic", self.deterministic, deterministic)
            if not m_deterministic and dropout_rng is None:
                dropout_rng = self.make_rng("dropout")
        else:
            m_deterministic = True
        x = self.attention_fn(
            query, key, value, mask=mask, dropout_rng=dropout_rng, dropout_rate=self.dropout_rate,
            broadcast_dropout=self.broadcast_dropout, deterministic=m_deterministic, dtype=self.dtype,
            precision=self.precision, module=self if sow_weights else None,
        )
        out = DenseGeneral(
            features=features, axis=(-2, -1), kernel_init=self.out_kernel_init or self.kernel_init,
            bias_init=self.out_bias_init or self.bias_init, use_bias=self.use_bias, dtype=self.dtype,
            param_dtype=self.param_dtype, precision=self.precision, name="out",
        )(x)
        return out


class MultiHeadAttention(MultiHeadDotProductAttention):
    pass


class SelfAttention(MultiHeadDotProductAttention):
    @compact
    def __call__(self, inputs_q, mask=None, deterministic=None, dropout_rng=None, sow_weights=False):
        return MultiHeadDotProductAttention.__call__.__wrapped__(
            self, inputs_q, mask=mask, deterministic=deterministic, dropout_rng=dropout_rng, sow_weights=sow_weights
        )
