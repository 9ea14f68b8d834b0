"""What the layer table records of a library object: each array leaf by its path, with its
dtype and shape. Shared by gen_layers_golden.py (under the real libraries) and
tracer-core/tests/layers_golden.rs (under tracelens), so both print the same way."""

import dataclasses

import jax


def describe(prefix, node):
    if node is None:
        return
    if isinstance(node, jax.Array):
        print(prefix, str(node.dtype) + str(list(node.shape)))
        return
    if dataclasses.is_dataclass(node):  # equinox modules
        for field in dataclasses.fields(node):
            value = getattr(node, field.name)
            if callable(value) and not dataclasses.is_dataclass(value):
                continue  # an activation function
            describe(prefix + "." + field.name, value)
        return
    if hasattr(node, "get_value"):  # an nnx Variable
        describe(prefix, node.get_value())
        return
    if hasattr(node, "_fields"):  # a NamedTuple: optax's states
        for name in node._fields:
            describe(prefix + "." + name, getattr(node, name))
        return
    if isinstance(node, (list, tuple)):
        for i in range(len(node)):
            describe(prefix + "[" + str(i) + "]", node[i])
        return
    if hasattr(node, "keys"):  # dicts, FrozenDict, nnx.State
        for key in sorted(node.keys(), key=str):
            describe(prefix + "/" + str(key), node[key])
