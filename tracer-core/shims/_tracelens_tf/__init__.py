"""TensorFlow's Python classes that tracelens models in Python rather than in Rust
(`tf.Module`); `tracer-core/src/tf/mod.rs` hands them out as `tf.<name>`. What they do not
define is unknown (`_unknown` defines nothing), never an AttributeError."""

from . import _unknown


class Module:
    """`tf.Module`: a named container of variables and submodules. Its variable-collecting
    properties (`trainable_variables`, `variables`, `submodules`) are not modelled."""

    def __init__(self, name=None):
        self._tracelens_module_name = name if name is not None else type(self).__name__.lower()

    @property
    def name(self):
        return self._tracelens_module_name

    def __getattr__(self, name):
        return _unknown.value
