"""flax.nnx's Variables as tracelens models them (flax 0.12.8): a box around one value, read with
`v[...]`, `v.value` or `v.get_value()` and written the same ways. Each Variable class is a pytree
with its value as the one child, as in flax, so a State of Params maps and flattens to arrays."""

import dataclasses

import jax

_registered = []


_templates = {}


def _flatten(v):
    _templates[type(v)] = v
    return (v.raw_value,), type(v)


def _unflatten(cls, children):
    """A Variable of class `cls` holding `children[0]`, its metadata copied from one seen
    before (flax rebuilds it from the treedef without calling `__init__`)."""
    new = dataclasses.replace(_templates[cls])
    new.raw_value = children[0]
    return new


def _keys(aux):
    return [".value"]


def _register(cls):
    if cls not in _registered:
        _registered.append(cls)
        # `_tracelens_keys`: the child's key as flax's flatten-with-keys names it (`.value`).
        jax.tree_util.register_pytree_node(cls, _flatten, _unflatten, _tracelens_keys=_keys)


class Variable:
    # What a hover shows of it: its value, under the key flax's flatten gives it.
    __tracelens_children__ = {"raw_value": "value"}

    def __init_subclass__(cls, **kwargs):
        _register(cls)

    def __init__(self, value, **metadata):
        _register(type(self))
        self.raw_value = value
        self.metadata = metadata

    def get_metadata(self):
        return dict(self.metadata)

    @property
    def value(self):
        return self.raw_value

    @value.setter
    def value(self, value):
        self.raw_value = value

    def get_value(self):
        return self.raw_value

    def set_value(self, value):
        self.raw_value = value

    def __getitem__(self, index):
        if index is Ellipsis:
            return self.raw_value
        return self.raw_value[index]

    def __setitem__(self, index, value):
        if index is Ellipsis:
            self.raw_value = value
        else:
            self.raw_value = self.raw_value.at[index].set(value)

    def __jax_array__(self):
        return self.raw_value

    @property
    def shape(self):
        return self.raw_value.shape

    @property
    def dtype(self):
        return self.raw_value.dtype

    @property
    def ndim(self):
        return self.raw_value.ndim

    @property
    def size(self):
        return self.raw_value.size

    @property
    def T(self):
        return self.raw_value.T

    def __len__(self):
        return len(self.raw_value)

    def __add__(self, other):
        return self.raw_value + other

    def __radd__(self, other):
        return other + self.raw_value

    def __sub__(self, other):
        return self.raw_value - other

    def __rsub__(self, other):
        return other - self.raw_value

    def __mul__(self, other):
        return self.raw_value * other

    def __rmul__(self, other):
        return other * self.raw_value

    def __truediv__(self, other):
        return self.raw_value / other

    def __rtruediv__(self, other):
        return other / self.raw_value

    def __matmul__(self, other):
        return self.raw_value @ other

    def __rmatmul__(self, other):
        return other @ self.raw_value

    def __neg__(self):
        return -self.raw_value

    def __pow__(self, other):
        return self.raw_value**other

    def astype(self, dtype):
        return self.raw_value.astype(dtype)

    def reshape(self, *shape):
        return self.raw_value.reshape(*shape)

    def sum(self, *args, **kwargs):
        return self.raw_value.sum(*args, **kwargs)

    def mean(self, *args, **kwargs):
        return self.raw_value.mean(*args, **kwargs)


class Param(Variable):
    pass


class BatchStat(Variable):
    pass


class Cache(Variable):
    pass


class Intermediate(Variable):
    pass


class Perturbation(Intermediate):
    pass


class RngState(Variable):
    pass


class RngKey(RngState):
    def __init__(self, value, tag=None):
        _register(type(self))
        self.raw_value = value
        self.metadata = {"tag": tag}
        self.tag = tag


class RngCount(RngState):
    def __init__(self, value, tag=None):
        _register(type(self))
        self.raw_value = value
        self.metadata = {"tag": tag}
        self.tag = tag


class OptState(Variable):
    pass


class OptArray(OptState):
    pass


_MISSING = object()


def data(value=_MISSING, /, **kwargs):
    """`nnx.data(x)`: marks an attribute as data; to tracelens every attribute is already walked.
    Without a value it is a dataclass field (`x: jax.Array = nnx.data(default=...)`)."""
    if value is _MISSING:
        return dataclasses.field(**kwargs)
    return value


def static(value=_MISSING, /, **kwargs):
    if value is _MISSING:
        return dataclasses.field(**kwargs)
    return value


_register(Variable)
