"""flax.core.frozen_dict: an immutable dict that is a pytree, as flax's (a tracelens shim)."""

import jax


class FrozenDict:
    def __init__(self, *args, **kwargs):
        source = dict(*args, **kwargs)
        self._dict = {}
        for key, value in source.items():
            self._dict[key] = _frozen(value)

    def __getitem__(self, key):
        value = self._dict[key]
        return value

    def __setitem__(self, key, value):
        raise ValueError("FrozenDict is immutable.")

    def __contains__(self, key):
        return key in self._dict

    def __iter__(self):
        return iter(self._dict)

    def __len__(self):
        return len(self._dict)

    def __repr__(self):
        return "FrozenDict(" + repr(self._dict) + ")"

    def __eq__(self, other):
        if isinstance(other, FrozenDict):
            return self._dict == other._dict
        return self._dict == other

    def get(self, key, default=None):
        return self._dict.get(key, default)

    def keys(self):
        return self._dict.keys()

    def values(self):
        return self._dict.values()

    def items(self):
        return self._dict.items()

    def copy(self, add_or_replace=None):
        merged = dict(self._dict)
        for key, value in (add_or_replace or {}).items():
            merged[key] = value
        return FrozenDict(merged)

    def pop(self, key):
        value = self._dict[key]
        rest = {k: v for k, v in self._dict.items() if k != key}
        return FrozenDict(rest), value

    def unfreeze(self):
        return unfreeze(self)


def _frozen(value):
    if isinstance(value, dict):
        return FrozenDict(value)
    return value


def _flatten(fd):
    keys = sorted(fd._dict.keys())
    return [fd._dict[k] for k in keys], tuple(keys)


def _unflatten(keys, children):
    out = FrozenDict()
    for key, child in zip(keys, children):
        out._dict[key] = child
    return out


jax.tree_util.register_pytree_node(FrozenDict, _flatten, _unflatten)


def freeze(xs):
    return FrozenDict(xs)


def unfreeze(x):
    if isinstance(x, FrozenDict):
        return {k: unfreeze(v) for k, v in x._dict.items()}
    if isinstance(x, dict):
        return {k: unfreeze(v) for k, v in x.items()}
    return x


def copy(x, add_or_replace=None):
    if isinstance(x, FrozenDict):
        return x.copy(add_or_replace)
    merged = dict(x)
    for key, value in (add_or_replace or {}).items():
        merged[key] = value
    return merged


def pop(x, key):
    if isinstance(x, FrozenDict):
        return x.pop(key)
    rest = {k: v for k, v in x.items() if k != key}
    return rest, x[key]
