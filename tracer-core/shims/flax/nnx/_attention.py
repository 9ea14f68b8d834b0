"""flax.nnx's LinearGeneral and MultiHeadAttention as tracelens models them (flax 0.12.8),
without batch axes, decoding caches or normalised queries (those arguments are not accepted,
so such a layer is unknown rather than wrong). Same Params, shapes and checks as flax."""

import jax
import jax.numpy as jnp
from jax import lax

from flax.nnx import initializers
from flax.nnx._graph import Module
from flax.nnx._layers import default_kernel_init, promote_dtype
from flax.nnx._variables import Param


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


def dot_product_attention(query, key, value, bias=None, mask=None, dtype=None, precision=None, **kwargs):
    """Attention with matching query and key heads (flax's path without grouped heads or dropout)."""
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
    if mask is not None:
        weights = jnp.where(mask, weights, -3.4028235e38)
    weights = jax.nn.softmax(weights).astype(dtype)
    return jnp.einsum("...hqk,...khd->...qhd", weights, value, precision=precision)


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
        decode=None,
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
        self.deterministic = deterministic
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
        self.rngs = rngs.dropout.fork() if dropout_rate > 0 else None
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
        # The decoding cache and causal masking are not modelled: their result is unknown.
        if decode or is_causal:
            from flax import _unknown

            return _unknown.result(inputs_q)
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
        x = dot_product_attention(query, key, value, mask=mask, dtype=self.dtype, precision=self.precision)
        return self.out(x)


def make_attention_mask(query_input, key_input, pairwise_fn=jnp.multiply, extra_batch_dims=0, dtype=jnp.float32):
    mask = pairwise_fn(jnp.expand_dims(query_input, axis=-1), jnp.expand_dims(key_input, axis=-2))
    mask = jnp.expand_dims(mask, axis=-3)
    if extra_batch_dims > 0:
        mask = jnp.expand_dims(mask, axis=tuple(range(extra_batch_dims)))
    return mask.astype(dtype)


def make_causal_mask(x, extra_batch_dims=0, dtype=jnp.float32):
    idxs = jnp.broadcast_to(jnp.arange(x.shape[-1], dtype=jnp.int32), x.shape)
    return make_attention_mask(idxs, idxs, jnp.greater_equal, extra_batch_dims=extra_batch_dims, dtype=dtype)
