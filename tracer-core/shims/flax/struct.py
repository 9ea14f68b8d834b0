"""flax.struct: frozen dataclasses that are pytrees, with static fields (flax/struct.py).

A tracelens shim of flax 0.12.8, not flax's code: a field is a pytree child unless it was
declared `field(pytree_node=False)`, in which case it is static (part of the tree structure,
so a jitted function retraces when it changes).
"""

import dataclasses

import jax


def field(pytree_node=True, *, metadata=None, **kwargs):
    merged = dict(metadata or {})
    merged["pytree_node"] = pytree_node
    return dataclasses.field(metadata=merged, **kwargs)


def _replace(self, **updates):
    return dataclasses.replace(self, **updates)


def dataclass(clz=None, **kwargs):
    if clz is None:
        return lambda c: dataclass(c, **kwargs)
    if getattr(clz, "_flax_dataclass", False) is clz:
        return clz
    frozen = kwargs.get("frozen", True)
    data_clz = dataclasses.dataclass(frozen=frozen)(clz)
    data_fields = []
    meta_fields = []
    for field_info in dataclasses.fields(data_clz):
        if field_info.metadata.get("pytree_node", True):
            data_fields.append(field_info.name)
        else:
            meta_fields.append(field_info.name)
    data_clz.replace = _replace
    jax.tree_util.register_dataclass(data_clz, data_fields, meta_fields)
    data_clz._flax_dataclass = data_clz
    return data_clz


class PyTreeNode:
    def __init_subclass__(cls, **kwargs):
        dataclass(cls, **kwargs)
