"""equinox's Module: a frozen dataclass that is a pytree.

A shim of equinox 0.13.8 (equinox/_module) for tracelens, not equinox's code. Every subclass
becomes a dataclass registered as a pytree when it is made: fields marked
`field(static=True)` are part of the tree's structure, every other field is a child (arrays
and sub-modules, and any other value, which equinox's filtered transformations hold static).
A subclass may write its own `__init__` that assigns `self.x = ...`.
"""

import dataclasses

import jax


def field(*, static=False, converter=None, **kwargs):
    metadata = dict(kwargs.pop("metadata", None) or {})
    if static:
        metadata["static"] = True
    return dataclasses.field(metadata=metadata, **kwargs)


def static_field(**kwargs):
    return field(static=True, **kwargs)


class Module:
    def __init_subclass__(cls, **kwargs):
        dataclasses.dataclass(cls)
        jax.tree_util.register_dataclass(cls)

    def __eq__(self, other):
        # equinox compares Modules as pytrees (`tree_equal`), never field by field: arrays
        # give an array of their equality, static fields compare in the tree structure.
        from equinox._tree import tree_equal

        return tree_equal(self, other)
