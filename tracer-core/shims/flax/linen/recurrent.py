"""flax.linen's recurrent cells (flax/linen/recurrent.py), as a tracelens shim of flax 0.12.8:
LSTMCell, OptimizedLSTMCell, GRUCell and SimpleCell with flax's parameter names (`ii`/`hi`
..., `ir`/`hr` ...), shapes, initialisers and `initialize_carry`, and `RNN`, which runs a
cell over the time axis with `nn.scan` (parameters shared, `split_rngs={"params": False}`).

Not modelled (unknown): MGUCell, ConvLSTMCell, Bidirectional, and `RNN`'s `seq_lengths`.
"""

import functools

import jax
import jax.numpy as jnp

from flax import _unknown
from flax.linen import initializers
from flax.linen.dtypes import promote_dtype
from flax.linen.linear import Dense, default_kernel_init
from flax.linen.module import Module, compact, nowrap
from flax.linen.transforms import scan


class RNNCellBase(Module):
    @property
    def num_feature_axes(self):
        return 1


class _GatedCell(RNNCellBase):
    """The fields LSTMCell, OptimizedLSTMCell and GRUCell share, in flax's order."""

    __tracelens_summary__ = "features={features}"

    features: int
    gate_fn: object = jax.nn.sigmoid
    activation_fn: object = jnp.tanh
    kernel_init: object = default_kernel_init
    recurrent_kernel_init: object = initializers.orthogonal()
    bias_init: object = initializers.zeros_init()
    dtype: object = None
    param_dtype: object = jnp.float32
    carry_init: object = initializers.zeros_init()


class LSTMCell(_GatedCell):
    @compact
    def __call__(self, carry, inputs):
        c, h = carry
        hidden_features = h.shape[-1]
        dense_h = functools.partial(
            Dense, features=hidden_features, use_bias=True, kernel_init=self.recurrent_kernel_init,
            bias_init=self.bias_init, dtype=self.dtype, param_dtype=self.param_dtype,
        )
        dense_i = functools.partial(
            Dense, features=hidden_features, use_bias=False, kernel_init=self.kernel_init, dtype=self.dtype,
            param_dtype=self.param_dtype,
        )
        i = self.gate_fn(dense_i(name="ii")(inputs) + dense_h(name="hi")(h))
        f = self.gate_fn(dense_i(name="if")(inputs) + dense_h(name="hf")(h))
        g = self.activation_fn(dense_i(name="ig")(inputs) + dense_h(name="hg")(h))
        o = self.gate_fn(dense_i(name="io")(inputs) + dense_h(name="ho")(h))
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h

    @nowrap
    def initialize_carry(self, rng, input_shape):
        return _two_carries(self, rng, input_shape)


def _two_carries(cell, rng, input_shape):
    mem_shape = tuple(input_shape[:-1]) + (cell.features,)
    key1, key2 = jax.random.split(rng)
    return cell.carry_init(key1, mem_shape, cell.param_dtype), cell.carry_init(key2, mem_shape, cell.param_dtype)


def _one_carry(cell, rng, input_shape):
    mem_shape = tuple(input_shape[:-1]) + (cell.features,)
    return cell.carry_init(rng, mem_shape, cell.param_dtype)


class DenseParams(Module):
    features: int
    use_bias: bool = True
    param_dtype: object = jnp.float32
    precision: object = None
    kernel_init: object = default_kernel_init
    bias_init: object = initializers.zeros_init()

    @compact
    def __call__(self, inputs):
        k = self.param("kernel", self.kernel_init, (inputs.shape[-1], self.features), self.param_dtype)
        b = self.param("bias", self.bias_init, (self.features,), self.param_dtype) if self.use_bias else None
        return k, b


class OptimizedLSTMCell(_GatedCell):
    @compact
    def __call__(self, carry, inputs):
        c, h = carry
        hidden_features = h.shape[-1]
        params_i = {}
        params_h = {}
        for component in ["i", "f", "g", "o"]:
            params_i[component] = DenseParams(
                features=hidden_features, use_bias=False, param_dtype=self.param_dtype, kernel_init=self.kernel_init,
                bias_init=self.bias_init, name=f"i{component}",
            )(inputs)
            params_h[component] = DenseParams(
                features=hidden_features, use_bias=True, param_dtype=self.param_dtype,
                kernel_init=self.recurrent_kernel_init, bias_init=self.bias_init, name=f"h{component}",
            )(h)
        dense_h = self._concat_dense(h, params_h, True)
        dense_i = self._concat_dense(inputs, params_i, False)
        i = self.gate_fn(dense_h["i"] + dense_i["i"])
        f = self.gate_fn(dense_h["f"] + dense_i["f"])
        g = self.activation_fn(dense_h["g"] + dense_i["g"])
        o = self.gate_fn(dense_h["o"] + dense_i["o"])
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h

    def _concat_dense(self, inputs, params, use_bias):
        # The four gates' kernels side by side, one dot, split back (flax's _concat_dense).
        names = ["i", "f", "g", "o"]
        kernel = jnp.concatenate([params[n][0] for n in names], axis=-1)
        bias = jnp.concatenate([params[n][1] for n in names], axis=-1) if use_bias else None
        inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        y = jnp.dot(inputs, kernel)
        if use_bias:
            y = y + jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        width = params["i"][0].shape[-1]
        ys = jnp.split(y, [width, 2 * width, 3 * width], axis=-1)
        return {names[k]: ys[k] for k in range(4)}

    @nowrap
    def initialize_carry(self, rng, input_shape):
        return _two_carries(self, rng, input_shape)


class SimpleCell(RNNCellBase):
    __tracelens_summary__ = "features={features}"

    features: int
    activation_fn: object = jnp.tanh
    kernel_init: object = default_kernel_init
    recurrent_kernel_init: object = initializers.orthogonal()
    bias_init: object = initializers.zeros_init()
    dtype: object = None
    param_dtype: object = jnp.float32
    carry_init: object = initializers.zeros_init()
    residual: bool = False

    @compact
    def __call__(self, carry, inputs):
        hidden_features = carry.shape[-1]
        dense_h = Dense(
            features=hidden_features, use_bias=False, dtype=self.dtype, param_dtype=self.param_dtype,
            kernel_init=self.recurrent_kernel_init, name="h",
        )
        dense_i = Dense(
            features=hidden_features, use_bias=True, dtype=self.dtype, param_dtype=self.param_dtype,
            kernel_init=self.kernel_init, bias_init=self.bias_init, name="i",
        )
        new_carry = dense_i(inputs) + dense_h(carry)
        if self.residual:
            new_carry = new_carry + carry
        new_carry = self.activation_fn(new_carry)
        return new_carry, new_carry

    @nowrap
    def initialize_carry(self, rng, input_shape):
        return _one_carry(self, rng, input_shape)


class GRUCell(_GatedCell):
    @compact
    def __call__(self, carry, inputs):
        h = carry
        hidden_features = h.shape[-1]
        dense_h = functools.partial(
            Dense, features=hidden_features, use_bias=False, dtype=self.dtype, param_dtype=self.param_dtype,
            kernel_init=self.recurrent_kernel_init, bias_init=self.bias_init,
        )
        dense_i = functools.partial(
            Dense, features=hidden_features, use_bias=True, dtype=self.dtype, param_dtype=self.param_dtype,
            kernel_init=self.kernel_init, bias_init=self.bias_init,
        )
        r = self.gate_fn(dense_i(name="ir")(inputs) + dense_h(name="hr")(h))
        z = self.gate_fn(dense_i(name="iz")(inputs) + dense_h(name="hz")(h))
        n = self.activation_fn(dense_i(name="in")(inputs) + r * dense_h(name="hn", use_bias=True)(h))
        new_h = (1.0 - z) * n + z * h
        return new_h, new_h

    @nowrap
    def initialize_carry(self, rng, input_shape):
        return _one_carry(self, rng, input_shape)


class RNN(Module):
    """A cell run over the time axis of its inputs: `nn.scan` of the cell with its parameters
    shared across steps, a carry from `initialize_carry` unless one is given; `reverse` flips
    the inputs first (and the outputs back with `keep_order`), as flax does."""

    cell: object
    time_major: bool = False
    return_carry: bool = False
    reverse: bool = False
    keep_order: bool = False
    unroll: int = 1
    variable_axes: object = None
    variable_broadcast: object = "params"
    variable_carry: object = False
    split_rngs: object = None

    def __call__(self, inputs, *, initial_carry=None, init_key=None, seq_lengths=None, return_carry=None,
                 time_major=None, reverse=None, keep_order=None):
        if seq_lengths is not None or not isinstance(self.cell, RNNCellBase) or self.cell.num_feature_axes != 1:
            return _unknown.result(self, inputs)
        return_carry = self.return_carry if return_carry is None else return_carry
        time_major = self.time_major if time_major is None else time_major
        reverse = self.reverse if reverse is None else reverse
        keep_order = self.keep_order if keep_order is None else keep_order
        time_axis = 0 if time_major else inputs.ndim - 2
        if reverse:
            inputs = jnp.flip(inputs, axis=time_axis)
        if initial_carry is None:
            if init_key is None:
                init_key = jax.random.key(0)
            input_shape = inputs.shape[:time_axis] + inputs.shape[time_axis + 1 :]
            initial_carry = self.cell.initialize_carry(init_key, input_shape)

        def scan_fn(cell, carry, x):
            return cell(carry, x)

        scanned = scan(
            scan_fn,
            in_axes=time_axis,
            out_axes=time_axis,
            unroll=self.unroll,
            variable_axes=self.variable_axes if self.variable_axes is not None else {},
            variable_broadcast=self.variable_broadcast,
            variable_carry=self.variable_carry,
            split_rngs=self.split_rngs if self.split_rngs is not None else {"params": False},
        )
        carry, outputs = scanned(self.cell, initial_carry, inputs)
        if reverse and keep_order:
            outputs = jnp.flip(outputs, axis=time_axis)
        if return_carry:
            return carry, outputs
        return outputs
