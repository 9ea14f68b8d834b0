"""TensorFlow's Python classes that tracelens models in Python rather than in Rust
(`tf.Module`); `tracer-core/src/tf/mod.rs` hands them out as `tf.<name>`. What they do not
define is unknown (`_unknown` defines nothing), never an AttributeError."""

import tensorflow as tf

from . import _unknown


def _camel_to_snake(name):
    """`MyDenseLayer` -> `my_dense_layer`, as `tf.Module` names a module by its class."""
    def upper(c):
        return c != c.lower()

    def lower_or_digit(c):
        return c != c.upper() or c in "0123456789"

    out = ""
    for i, c in enumerate(name):
        if upper(c) and i > 0:
            nxt = name[i + 1] if i + 1 < len(name) else ""
            if lower_or_digit(name[i - 1]) or (nxt != "" and nxt != nxt.upper()):
                out += "_"
        out += c.lower()
    return out


def _leaves(value):
    """tf.nest's leaves of an attribute: lists and tuples in order, dicts by sorted key."""
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            out.extend(_leaves(item))
        return out
    if isinstance(value, dict):
        out = []
        for key in sorted(value):
            out.extend(_leaves(value[key]))
        return out
    return [value]


class _NameScope:
    """`module.name_scope`: a context manager that changes nothing tracelens follows."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Module:
    """`tf.Module`: a named container of variables and submodules. `variables`,
    `trainable_variables` and `submodules` walk the attributes as TensorFlow's
    `_flatten_module` does: the module's own attributes in name order (each flattened), then
    each submodule found there, recursively, every object once."""

    def __init__(self, name=None):
        if name is None:
            name = _camel_to_snake(type(self).__name__)
        self._tracelens_module_name = name

    @property
    def name(self):
        return self._tracelens_module_name

    @property
    def name_scope(self):
        return _NameScope()

    @classmethod
    def with_name_scope(cls, method):
        return method

    def _tracelens_flatten(self, predicate, seen):
        found = []
        submodules = []
        attrs = vars(self)
        for key in sorted(attrs):
            for leaf in _leaves(attrs[key]):
                if any(leaf is s for s in seen):
                    continue
                seen.append(leaf)
                if predicate(leaf):
                    found.append(leaf)
                if isinstance(leaf, Module):
                    submodules.append(leaf)
        for sub in submodules:
            found.extend(sub._tracelens_flatten(predicate, seen))
        return found

    @property
    def variables(self):
        return tuple(self._tracelens_flatten(lambda v: isinstance(v, tf.Variable), [self]))

    @property
    def trainable_variables(self):
        return tuple(self._tracelens_flatten(lambda v: isinstance(v, tf.Variable) and v.trainable, [self]))

    @property
    def submodules(self):
        return tuple(self._tracelens_flatten(lambda v: isinstance(v, Module), [self]))

    def __getattr__(self, name):
        return _unknown.value


class Generator:
    """`tf.random.Generator`: draws tensors of the shape and dtype asked for; the values (its
    Philox stream) are not modelled."""

    def __init__(self, copy_from=None, state=None, alg=None):
        pass

    @classmethod
    def from_seed(cls, seed, alg=None):
        return cls()

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        return cls()

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=tf.float32, name=None):
        return tf.random.normal(shape, mean, stddev, dtype)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=tf.float32, name=None):
        return tf.random.truncated_normal(shape, mean, stddev, dtype)

    def uniform(self, shape, minval=0, maxval=None, dtype=tf.float32, name=None):
        return tf.random.uniform(shape, minval, maxval, dtype)

    def split(self, count=1):
        return [Generator() for _ in range(count)]

    def __getattr__(self, name):
        return _unknown.value


class UnconnectedGradients:
    """`tf.UnconnectedGradients`: what `tape.gradient` gives for a source the target does not
    reach (`NONE`, the default, or `ZERO`); `value` is the string `gradient` also takes."""

    def __init__(self, name, value):
        self.name = name
        self.value = value

    def __repr__(self):
        return "<UnconnectedGradients." + self.name + ": '" + self.value + "'>"

    def __str__(self):
        return "UnconnectedGradients." + self.name


UnconnectedGradients.NONE = UnconnectedGradients("NONE", "none")
UnconnectedGradients.ZERO = UnconnectedGradients("ZERO", "zero")
