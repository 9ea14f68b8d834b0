"""flax.nnx's lifted transformations of module state as tracelens models them (flax 0.12.8):
`nnx.vmap`, `nnx.scan` and `nnx.split_rngs`.

Both transformations run the user's function on clones of the graph nodes among its
arguments, with the Variables' values passed through `jax.vmap` / `jax.lax.scan` as one list
of leaves: a node mapped on axis 0 (`in_axes=0`, or an `nnx.scan` input after the carry) is
sliced per call and its new values come back stacked, a node given `None` is broadcast and its
values come back as they were made. Nodes the function returns (an ensemble made by a vmapped
constructor) come back with their leaves stacked along `out_axes`. The written-back values
land in the caller's nodes, as flax writes them.

Not modelled (the result is unknown): `nnx.StateAxes` and other per-collection axes, graph
nodes inside lists or dicts of the arguments, a module in `nnx.scan`'s carry, `in_axes` other
than `(nnx.Carry, 0)` for scan."""

import jax

from flax import _unknown
from flax.nnx._graph import _clone, _is_unknown, _nodes
from flax.nnx._rnglib import RngStream
from flax.nnx._transforms import _graph_args, _is_node, _mask, _slots, _unmask
import jax.numpy as jnp


class _CarryMarker:
    """`nnx.Carry`: the position of the carry in `nnx.scan`'s `in_axes` and `out_axes`."""


Carry = _CarryMarker()


def _plain_axis(axis):
    return axis is None or (isinstance(axis, int) and not isinstance(axis, bool))


def _leaves_of(nodes):
    return [slot.raw_value for key, slot in _slots(nodes)]


def _set_leaves(nodes, values):
    slots = _slots(nodes)
    if len(slots) != len(values):
        return False
    for i in range(len(slots)):
        slots[i][1].raw_value = values[i]
    return True


def _rebuild(template, leaves):
    """The output `template` (a clone made while tracing) with `leaves` for its Variables."""
    out = _clone(template, {})
    nodes = [out] if _is_node(out) else _graph_args([out])
    _set_leaves(nodes, leaves)
    return out


def _call_on_clones(f, args, node_positions, nodes, leaf_values, plain_values, templates):
    """`f` on clones of `nodes` holding `leaf_values`: the nodes' new leaves, the output with
    its nodes masked, and the output nodes' leaves."""
    memo = {}
    clones = [_clone(n, memo) for n in nodes]
    _set_leaves(clones, leaf_values)
    call_args = list(plain_values)
    for j in range(len(node_positions)):
        call_args[node_positions[j]] = clones[j]
    out = f(*call_args)
    new_leaves = _leaves_of(clones)
    out_nodes = [out] if _is_node(out) else _graph_args([out])
    if len(out_nodes) > 0:
        templates.append(_clone(out, {}))
        return new_leaves, _mask(out), _leaves_of(out_nodes)
    return new_leaves, out, []


def _split_args(args):
    """(positions of the graph nodes among `args`, the nodes), or None when a node sits inside
    a list, tuple or dict argument or an argument is unknown."""
    positions = []
    for i in range(len(args)):
        a = args[i]
        if _is_unknown(a):
            return None
        if _is_node(a):
            positions.append(i)
        elif len(_graph_args([a])) > 0:
            return None
    return positions, [args[i] for i in positions]


def vmap(f=None, *, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None, transform_metadata=None, **kwargs):
    if f is None:
        return lambda g: vmap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name, axis_size=axis_size)

    def vmap_wrapper(*args):
        axes = list(in_axes) if isinstance(in_axes, (list, tuple)) else [in_axes] * len(args)
        split = _split_args(args)
        simple = split is not None and len(axes) == len(args) and isinstance(out_axes, int) and not isinstance(out_axes, bool)
        for a in axes:
            simple = simple and _plain_axis(a)
        if not simple:
            return _unknown.result(f, args)
        node_positions, nodes = split
        # Mapped nodes come back on the axis they went in on, which must be `out_axes` (one
        # axis for every output); broadcast nodes keep their values.
        for i in node_positions:
            if axes[i] is not None and axes[i] != out_axes:
                return _unknown.result(f, args)
        mapped = [nodes[j] for j in range(len(nodes)) if axes[node_positions[j]] is not None]
        leaves = _leaves_of(nodes)
        leaf_axes = []
        for key, slot in _slots(nodes):
            leaf_axes.append(axes[node_positions[key[0]]])
        plain = [None if _is_node(a) else a for a in args]
        plain_axes = [None if _is_node(args[i]) else axes[i] for i in range(len(args))]
        templates = []

        def vmapped(leaf_values, plain_values):
            new_leaves, out, out_leaves = _call_on_clones(f, args, node_positions, nodes, leaf_values, plain_values, templates)
            kept = [new_leaves[i] for i in range(len(new_leaves)) if leaf_axes[i] is not None]
            return kept, out, out_leaves

        vmapped.__wrapped__ = f
        kept, out, out_leaves = jax.vmap(
            vmapped, in_axes=(leaf_axes, plain_axes), out_axes=out_axes, axis_name=axis_name, axis_size=axis_size
        )(leaves, plain)
        _set_leaves(mapped, kept)
        if len(templates) > 0:
            out = _unmask(out, _rebuild(templates[-1], out_leaves))
        return out

    vmap_wrapper.__wrapped__ = f
    return vmap_wrapper


def scan(f=None, *, length=None, reverse=False, unroll=1, _split_transpose=False, in_axes=None, out_axes=None, transform_metadata=None, **kwargs):
    if f is None:
        return lambda g: scan(g, length=length, reverse=reverse, unroll=unroll, in_axes=in_axes, out_axes=out_axes)

    def scan_wrapper(carry, *xs):
        default = (in_axes is None or (len(in_axes) == 2 and in_axes[0] is Carry and in_axes[1] == 0)) and (
            out_axes is None or (len(out_axes) == 2 and out_axes[0] is Carry and out_axes[1] == 0)
        )
        split = _split_args(xs)
        if not default or split is None or _is_unknown(carry) or len(_graph_args([carry])) > 0 or _is_node(carry):
            return _unknown.result(f, carry, xs)
        node_positions, nodes = split
        leaves = _leaves_of(nodes)
        plain = [None if _is_node(a) else a for a in xs]
        templates = []

        def body(c, x):
            leaf_values, plain_values = x
            new_leaves, out, out_leaves = _call_on_clones(
                lambda *a: f(c, *a), xs, node_positions, nodes, leaf_values, plain_values, templates
            )
            if len(out_leaves) > 0 or not isinstance(out, tuple) or len(out) != 2:
                return c, (new_leaves, _unknown.result(out))
            return out[0], (new_leaves, out[1])

        body.__wrapped__ = f
        carry_out, (new_leaves, ys) = jax.lax.scan(body, carry, (leaves, plain), length=length, reverse=reverse, unroll=unroll)
        _set_leaves(nodes, new_leaves)
        return carry_out, ys

    scan_wrapper.__wrapped__ = f
    return scan_wrapper


def _streams(args):
    found = []
    for node in _graph_args(args):
        for path, n in _nodes(node):
            if isinstance(n, RngStream) and not any(n is s for s in found):
                found.append(n)
    return found


def split_rngs(node=None, *, splits, only=None, squeeze=False, graph=None, graph_updates=None):
    """`nnx.split_rngs`: each stream's key split into `splits` keys and its count made one per
    key, for the call of the decorated function (or from here on, given a node); flax restores
    the streams afterwards."""

    def split_streams(args):
        backups = []
        for stream in _streams(args):
            backups.append((stream, stream.key.raw_value, stream.count.raw_value))
            key = stream()
            stream.key.raw_value = jax.random.split(key, splits)
            shape = (splits,) if isinstance(splits, int) else tuple(splits)
            stream.count.raw_value = jnp.zeros(shape, dtype=jnp.uint32)
        return backups

    if node is not None:
        split_streams([node])
        return node

    def decorator(f):
        def split_rngs_wrapper(*args, **kwargs):
            backups = split_streams(list(args) + [kwargs[k] for k in kwargs])
            try:
                return f(*args, **kwargs)
            finally:
                for stream, key, count in backups:
                    stream.key.raw_value = key
                    stream.count.raw_value = count

        split_rngs_wrapper.__wrapped__ = f
        return split_rngs_wrapper

    return decorator
