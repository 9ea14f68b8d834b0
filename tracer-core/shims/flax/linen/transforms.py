"""flax.linen's lifted transformations (flax/linen/transforms.py over flax/core/lift.py), as a
tracelens shim of flax 0.12.8.

`scan` and `vmap` take a Module class (and give a subclass named as flax names it, `ScanBlock`,
so its instances are `ScanBlock_0`), a method (as a decorator) or a function whose first
argument is a module. A call runs the method on a clone of the module bound to a scope of its
own (`_Lift`), whose variables are the module's, split by collection into flax's groups:
- `scan`: `variable_broadcast` collections are made once, outside the loop (flax traces the
  body once more for them, and so does this shim: a print in the body runs twice per call);
  `variable_carry` ones travel in the carry; each `variable_axes` group is sliced along its
  axis per iteration and comes back stacked. Arguments after the carry are scanned along
  `in_axes` (`nn.broadcast`: the whole value each time), outputs stacked along `out_axes`.
- `vmap`: each `variable_axes` group is mapped along its axis (`None`: shared), arguments along
  `in_axes`, outputs along `out_axes`.
A collection in no group is not seen inside (flax's ScopeCollectionNotFound). `split_rngs`
streams get one key per iteration or example, the others one key for all. flax's checks are
kept: the length or axis size (`Inconsistent scan lengths`, `length should be specified
manually.`), and a broadcast (shared) parameter made from a split key (the data dependency
flax rejects). Errors name the scope as flax does (`/scan(ScanBlock_0)/Dense_0`).

`checkpoint`/`remat` and `jit` give the subclass its name (`CheckpointBlock`) and a scope of
its own (`/remat(CheckpointBlock_0)`), and run the module's own computation: flax traces a
rematted call's arguments and tracelens does not, so a Python `if` on a non-static argument
there is not reported (as for `jax.checkpoint`).

Not modelled (the result is unknown): keyword arguments of a lifted call, `In`/`Out` axes,
`data_transform`, and `in_axes`/`out_axes` trees that do not match the arguments' structure.
"""

import jax
import jax.numpy as jnp

from flax import _unknown, errors
from flax.core.axes_scan import _Broadcast, broadcast
from flax.linen.module import Module, _copy_tree, _DenyList, _Root


class _Probe:
    pass


def _is_unknown(value):
    # `isinstance` of an unknown value against any class is unknown, never False.
    return isinstance(value, _Probe) is not False


def _known(tree):
    if _is_unknown(tree):
        return False
    for leaf in jax.tree_util.tree_leaves(tree):
        if _is_unknown(leaf):
            return False
    return True


def _in_filter(filter_like, col):
    # flax.core.scope.in_filter: a name, a collection of names, a bool, or a DenyList.
    if isinstance(filter_like, str):
        return col == filter_like
    if isinstance(filter_like, bool):
        return filter_like
    if isinstance(filter_like, _DenyList):
        return not _in_filter(filter_like.deny, col)
    if isinstance(filter_like, (list, tuple, set, frozenset, dict)):
        return col in filter_like
    return False


def _group_of(filters, col):
    """The first group whose filter takes `col` (flax's group_collections), or None."""
    for i in range(len(filters)):
        if _in_filter(filters[i], col):
            return i
    return None


def _set_text(values):
    """`values` (distinct small non-negative ints) as CPython prints a set of them: in the
    order of their slots in a set's first table of 8."""
    if len(values) <= 4 and all(isinstance(v, int) and v >= 0 for v in values):
        slots = [v % 8 for v in values]
        if len(set(slots)) == len(slots):
            values = sorted(values, key=lambda v: v % 8)
    return "{" + ", ".join(str(v) for v in values) + "}"


def _subtree(root, col, path):
    node = root.variables.get(col)
    for part in path:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _put_subtree(root, col, path, tree):
    if len(path) == 0:
        root.variables[col] = tree
        return
    if col not in root.variables:
        root.variables[col] = {}
    node = root.variables[col]
    for part in path[:-1]:
        if part not in node:
            node[part] = {}
        node = node[part]
    node[path[-1]] = tree


def _move_axis(tree, source, destination):
    if source == destination:
        return tree
    return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, source, destination), tree)


def _first(tree):
    return jax.tree_util.tree_map(lambda x: x[0], tree)


def _leaf_axes(axes, tree, unmapped, out):
    """Walks `axes` as a prefix of `tree` (as jax.tree_util.tree_map does with an axes tree
    first): appends (axis, subtree) for each mapped prefix leaf; False when they do not match."""
    if isinstance(axes, (tuple, list)) and not isinstance(axes, _Broadcast):
        if not isinstance(tree, (tuple, list)) or len(axes) != len(tree):
            return False
        for i in range(len(axes)):
            if not _leaf_axes(axes[i], tree[i], unmapped, out):
                return False
        return True
    if isinstance(axes, dict):
        if not isinstance(tree, dict) or sorted(axes.keys()) != sorted(tree.keys()):
            return False
        for k in axes:
            if not _leaf_axes(axes[k], tree[k], unmapped, out):
                return False
        return True
    if unmapped(axes):
        return True
    if not isinstance(axes, int) or isinstance(axes, bool):
        return False
    out.append((axes, tree))
    return True


def _map_prefix(fn, axes, tree):
    """`fn(axis, subtree)` at each leaf of the prefix `axes` of `tree`, rebuilt."""
    if isinstance(axes, (tuple, list)):
        return type(tree)([_map_prefix(fn, axes[i], tree[i]) for i in range(len(axes))])
    if isinstance(axes, dict):
        return {k: _map_prefix(fn, axes[k], tree[k]) for k in tree}
    return fn(axes, tree)


def _zip_prefix(fn, axes, a, b):
    if isinstance(axes, (tuple, list)):
        return type(a)([_zip_prefix(fn, axes[i], a[i], b[i]) for i in range(len(axes))])
    if isinstance(axes, dict):
        return {k: _zip_prefix(fn, axes[k], a[k], b[k]) for k in a}
    return fn(axes, a, b)


def _axis_sizes(pairs, sizes):
    """Adds the size of the mapped axis of each (axis, subtree), read off its first leaf as
    flax does; False when a size is not known."""
    for axis, tree in pairs:
        leaves = jax.tree_util.tree_leaves(tree)
        if len(leaves) > 0:
            shape = jnp.shape(leaves[0])
            if not -len(shape) <= axis < len(shape):
                return False
            size = shape[axis]
            if not isinstance(size, int):
                return False
            if size not in sizes:
                sizes.append(size)
    return True


def _merged(dicts):
    out = {}
    for d in dicts:
        for k in d:
            out[k] = d[k]
    return out


def _one_size(sizes, given, inconsistent, missing):
    """flax's loop length or batch size: the one size the mapped leaves agree on, else the
    size given; its ValueErrors when they disagree or when there is neither."""
    if given is None and len(sizes) == 1:
        return sizes[0]
    if len(sizes) > 1:
        raise ValueError(f"{inconsistent}: {_set_text(sizes)}")
    if given is None:
        raise ValueError(missing)
    return given


def _items(mapping):
    return [(k, mapping[k]) for k in mapping]


class _Lift:
    """One call of a lifted method: the module's scope, its variables grouped by collection
    filter, and the method run on a clone bound to a scope of its own."""

    def __init__(self, kind, module, fun, filters):
        self.root = module._get_root()
        if self.root is None:
            raise errors.CallCompactUnboundModuleError()
        self.module = module
        self.fun = fun
        self.filters = filters
        self.path = module._get_path()
        outer = self.root.debug_path + self.path
        if len(outer) > 0:
            self.debug_path = outer[:-1] + (f"{kind}({outer[-1]})",)
        else:
            self.debug_path = (f"{kind}()",)

    def group_of(self, col):
        return _group_of(self.filters, col)

    def groups(self):
        """The module's variables as one dict of collections per filter."""
        out = [{} for f in self.filters]
        for col in self.root.variables:
            i = self.group_of(col)
            if i is not None:
                sub = _subtree(self.root, col, self.path)
                if sub is not None:
                    out[i][col] = _copy_tree(sub)
        return out

    def regroup(self, variables):
        out = [{} for f in self.filters]
        for col in variables:
            i = self.group_of(col)
            if i is not None:
                out[i][col] = variables[col]
        return out

    def rngs(self, split_rngs, n):
        """(the streams given whole, the streams split into `n` keys), by the (filter, split)
        pairs of `split_rngs`."""
        filters = [f for f, split in split_rngs]
        splits = [split for f, split in split_rngs]
        whole = {}
        split = {}
        for name in self.root.rngs:
            i = _group_of(filters, name)
            if i is None:
                continue
            key = self.root.make_rng(name, self.module.name)
            if splits[i]:
                split[name] = jax.random.split(key, n)
            else:
                whole[name] = key
        return whole, split

    def run(self, variables, rngs, args, on_param_made, kwargs={}):
        """The method on a clone of the module bound to `variables`: (its output, the
        variables after it)."""
        inner = _Root(variables, rngs, self.root.mutable, self.root.initializing)
        inner.debug_path = self.debug_path
        inner.visible = lambda col: self.group_of(col) is not None
        inner.on_param_made = on_param_made
        bound = self.module.clone(parent=None)
        bound._root = inner
        return self.fun(bound, *args, **kwargs), inner.variables

    def store(self, groups):
        for group in groups:
            for col in group:
                if self.root.is_mutable(col):
                    _put_subtree(self.root, col, self.path, group[col])


def _split_params(split_rngs):
    """Whether the "params" stream is split: a parameter made from it depends on the loop."""
    for f, split in _items(split_rngs):
        if _in_filter(f, "params"):
            return bool(split)
    return False


class _Made:
    """The shared parameters made from a split key during one lifted call (flax rejects them)."""

    def __init__(self, lift, shared_group, split_params):
        self.lift = lift
        self.shared_group = shared_group
        self.split_params = split_params
        self.paths = []

    def __call__(self, path, init_fn):
        if not self.split_params or getattr(init_fn, "ignores_key", False):
            return
        if self.lift.group_of("params") == self.shared_group:
            self.paths.append(path)


def _scan_call(spec, module, fun, args, kwargs):
    axes_groups = _items(spec["variable_axes"])
    filters = [spec["variable_broadcast"], spec["variable_carry"]] + [f for f, axis in axes_groups]
    lift = _Lift("scan", module, fun, filters)
    if len(kwargs) > 0 or len(args) == 0 or not _known((args, lift.root.rngs)):
        return _unknown.result(module, args, kwargs)
    for f, axis in axes_groups:
        if not isinstance(axis, int):
            return _unknown.result(module, args)
    carry = args[0]
    xs = tuple(args[1:])
    in_axes = spec["in_axes"]
    scanned = []
    if not _leaf_axes(in_axes, xs, lambda a: a is broadcast, scanned):
        return _unknown.result(module, args)
    lengths = []
    if not _axis_sizes(scanned, lengths):
        return _unknown.result(module, args)
    length = spec["length"]
    n = _one_size(lengths, length, "Inconsistent scan lengths", "length should be specified manually.")
    groups = lift.groups()
    shared = groups[0]
    carried = groups[1]
    sliced = tuple([_move_axis(groups[2 + i], axes_groups[i][1], 0) for i in range(len(axes_groups))])
    whole_rngs, split_rngs = lift.rngs(_items(spec["split_rngs"]), n)
    xs_front = _map_prefix(lambda a, x: () if a is broadcast else _move_axis(x, a, 0), in_axes, xs)
    made = _Made(lift, 0, _split_params(spec["split_rngs"]))
    out_axes = spec["out_axes"]

    def run_body(shared_vars, carry_in, x, on_param_made):
        carry_vars, c = carry_in
        scan_vars, rng_slice, x_slice = x
        variables = _merged([_copy_tree(shared_vars), carry_vars] + list(scan_vars))
        rngs = _merged([whole_rngs, rng_slice])
        call_args = _zip_prefix(lambda a, whole, part: whole if a is broadcast else part, in_axes, xs, x_slice)
        out, new_vars = lift.run(variables, rngs, (c,) + tuple(call_args), on_param_made)
        c_new, y = out
        return lift.regroup(new_vars), c_new, y

    # flax first traces the body for the broadcast variables (made outside the loop) and the
    # outputs scanned with `nn.broadcast`; its carry is left as it came in.
    def broadcast_body(c, x):
        new_groups, c_new, y = run_body(shared, c, x, made)
        return c, (new_groups[0], _map_prefix(lambda a, part: part if a is broadcast else (), out_axes, y))

    broadcast_body.__wrapped__ = fun
    scan_kwargs = {"length": length, "reverse": spec["reverse"], "unroll": spec["unroll"]}
    inputs = (sliced, split_rngs, xs_front)
    made_shared, broadcast_ys = jax.lax.scan(broadcast_body, (carried, carry), inputs, **scan_kwargs)[1]
    if len(made.paths) > 0:
        raise ValueError("broadcasted variable has a data dependency on the scan body.")
    shared = _first(made_shared)
    broadcast_ys = _first(broadcast_ys)

    def body(c, x):
        new_groups, c_new, y = run_body(shared, c, x, None)
        ys = _map_prefix(lambda a, part: () if a is broadcast else part, out_axes, y)
        return (new_groups[1], c_new), (tuple(new_groups[2:]), ys)

    body.__wrapped__ = fun
    (carried, carry), (scan_groups, ys) = jax.lax.scan(body, (carried, carry), inputs, **scan_kwargs)
    scan_groups = [_move_axis(scan_groups[i], 0, axes_groups[i][1]) for i in range(len(axes_groups))]
    lift.store([shared, carried] + scan_groups)
    ys = _zip_prefix(lambda a, const, part: const if a is broadcast else _move_axis(part, 0, a), out_axes, broadcast_ys, ys)
    return carry, ys


def _batched_path_text(group_index, col, path):
    keys = "".join(f"['{k}']" for k in (col,) + tuple(path))
    return f"at vmap out_axes[1][{group_index}][0]{keys}, got axis spec None but output was batched on axis 0"


def _vmap_call(spec, module, fun, args, kwargs):
    axes_groups = _items(spec["variable_axes"])
    lift = _Lift("vmap", module, fun, [f for f, axis in axes_groups])
    if len(kwargs) > 0 or not _known((args, lift.root.rngs)):
        return _unknown.result(module, args, kwargs)
    for f, axis in axes_groups:
        if axis is not None and not isinstance(axis, int):
            return _unknown.result(module, args)
    args = tuple(args)
    in_axes = spec["in_axes"]
    groups = lift.groups()
    mapped = []
    for i in range(len(axes_groups)):
        if axes_groups[i][1] is not None:
            mapped.append((axes_groups[i][1], groups[i]))
    if not _leaf_axes(in_axes, args, lambda a: a is None, mapped):
        return _unknown.result(module, args)
    sizes = []
    if not _axis_sizes(mapped, sizes):
        return _unknown.result(module, args)
    n = _one_size(sizes, spec["axis_size"], "Inconsistent batch axis sizes", "axis_size should be specified manually.")
    whole_rngs, split_rngs = lift.rngs(_items(spec["split_rngs"]), n)
    shared_groups = [i for i in range(len(axes_groups)) if axes_groups[i][1] is None]
    made = _Made(lift, shared_groups[0] if len(shared_groups) > 0 else -1, _split_params(spec["split_rngs"]))

    def mapped_fun(variable_groups, rng_slice, call_args):
        out, new_vars = lift.run(_merged(variable_groups), _merged([whole_rngs, rng_slice]), call_args, made)
        return out, tuple(lift.regroup(new_vars))

    mapped_fun.__wrapped__ = fun
    variable_axes = tuple([axis for f, axis in axes_groups])
    y, new_groups = jax.vmap(
        mapped_fun, in_axes=(variable_axes, 0, in_axes), out_axes=0, axis_size=n, axis_name=spec["axis_name"]
    )(tuple(groups), split_rngs, args)
    if len(made.paths) > 0:
        first = sorted(made.paths)[0]
        raise ValueError(_batched_path_text(made.shared_group, "params", first))
    stored = []
    for i in range(len(axes_groups)):
        axis = axes_groups[i][1]
        stored.append(_first(new_groups[i]) if axis is None else _move_axis(new_groups[i], 0, axis))
    lift.store(stored)
    return _map_prefix(lambda a, part: _first(part) if a is None else _move_axis(part, 0, a), spec["out_axes"], y)


def _lift_target(prefix, target, methods, call, spec):
    """`target` lifted: a Module class becomes a subclass named `prefix + name` whose `methods`
    run through `call`; a function (a method being decorated, or a function taking a module
    first) runs through `call` on its first argument."""
    if isinstance(target, type):

        class Lifted(target):
            pass

        Lifted.__name__ = prefix + target.__name__
        names = ["__call__"] if methods is None else list(methods)
        for name in names:
            setattr(Lifted, name, _lifted_method(getattr(target, name), call, spec))
        return Lifted
    return _lifted_method(target, call, spec)


def _lifted_method(fun, call, spec):
    def lifted(module, *args, **kwargs):
        if not isinstance(module, Module):
            return _unknown.result(fun, module, args, kwargs)
        return call(spec, module, fun, args, kwargs)

    lifted.__wrapped__ = fun
    return lifted


def scan(
    target,
    variable_axes={},
    variable_broadcast=False,
    variable_carry=False,
    split_rngs={},
    in_axes=0,
    out_axes=0,
    length=None,
    reverse=False,
    unroll=1,
    data_transform=None,
    metadata_params={},
    methods=None,
    _split_transpose=False,
    check_constancy_invariants=True,
):
    if data_transform is not None:
        return _unknown.result(target)
    spec = {
        "variable_axes": variable_axes,
        "variable_broadcast": variable_broadcast,
        "variable_carry": variable_carry,
        "split_rngs": split_rngs,
        "in_axes": in_axes,
        "out_axes": out_axes,
        "length": length,
        "reverse": reverse,
        "unroll": unroll,
    }
    return _lift_target("Scan", target, methods, _scan_call, spec)


def vmap(
    target,
    variable_axes={},
    split_rngs={},
    in_axes=0,
    out_axes=0,
    axis_size=None,
    axis_name=None,
    spmd_axis_name=None,
    metadata_params={},
    methods=None,
):
    spec = {
        "variable_axes": variable_axes,
        "split_rngs": split_rngs,
        "in_axes": in_axes,
        "out_axes": out_axes,
        "axis_size": axis_size,
        "axis_name": axis_name,
    }
    return _lift_target("Vmap", target, methods, _vmap_call, spec)


def _direct_call(spec, module, fun, args, kwargs):
    """`remat`/`jit`: the method on the lifted scope, computed as it is (no trace)."""
    lift = _Lift(spec["kind"], module, fun, [spec["variables"]])
    if not _known(lift.root.rngs):
        return fun(module, *args, **kwargs)
    whole_rngs, split_rngs = lift.rngs([(spec["rngs"], False)], 1)
    out, new_vars = lift.run(lift.groups()[0], whole_rngs, args, None, kwargs)
    lift.store(lift.regroup(new_vars))
    return out


def checkpoint(target, variables=True, rngs=True, concrete=False, prevent_cse=True, static_argnums=(), policy=None, methods=None):
    spec = {"kind": "remat", "variables": variables, "rngs": rngs}
    return _lift_target("Checkpoint", target, methods, _direct_call, spec)


remat = checkpoint


def jit(target, variables=True, rngs=True, static_argnums=(), static_argnames=(), donate_argnums=(), device=None, backend=None, methods=None):
    spec = {"kind": "jit", "variables": variables, "rngs": rngs}
    return _lift_target("Jit", target, methods, _direct_call, spec)
