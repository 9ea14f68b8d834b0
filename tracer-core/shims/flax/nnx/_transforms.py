"""flax.nnx's transformations as tracelens models them (flax 0.12.8), on top of jax's.

`nnx.jit(f)` is `jax.jit` of a wrapper that takes, in place of each graph node among the
arguments, the values of its Variables as a dict keyed by their paths in the node
(`{"linear/kernel": ...}`, so a trace names the leaf `model['linear/kernel']`), puts them into
the nodes for the call of `f` (tracers while tracing), reads them back afterwards and returns
them with `f`'s output, each state where its node was among the arguments (so the trace names
the outputs as it names the arguments); the call then writes the returned values into the nodes, so mutations made inside propagate out, as in flax. The
nodes' structure (classes, paths, plain static attributes) is a static argument, so a
different structure traces again and the same one hits the cache. The wrapper's
`__wrapped__` is `f`, so its traces are `f`'s (as JAX's `inspect.unwrap` names them).

`nnx.grad(f)` differentiates with respect to the Params of the graph nodes at `argnums`
(`wrt` filters otherwise) and returns a State of them; updates `f` makes to other Variables
(batch statistics, rng counts) come out of the transformation as auxiliary values."""

import jax

from flax.nnx._graph import Pytree, State, _ArraySlot, _clone, _is_unknown, _items, _matches, _nest, _variables
from flax.nnx._variables import Param, Variable


def _is_node(value):
    return isinstance(value, Pytree) or isinstance(value, Variable)


def _graph_args(args):
    """The graph nodes among `args` (top level and inside lists, tuples and dicts)."""
    nodes = []
    for a in args:
        if _is_node(a):
            nodes.append(a)
        elif isinstance(a, (list, tuple)):
            for x in a:
                if _is_node(x):
                    nodes.append(x)
        elif isinstance(a, dict):
            for k in a:
                if _is_node(a[k]):
                    nodes.append(a[k])
    return nodes


def _mask(value):
    """`value` with graph nodes replaced by None: what jax.jit sees of a non-node argument."""
    if _is_node(value):
        return None
    if isinstance(value, list):
        return [_mask(x) for x in value]
    if isinstance(value, tuple) and type(value).__name__ == "tuple":
        return tuple([_mask(x) for x in value])
    if isinstance(value, dict):
        return {k: _mask(value[k]) for k in value}
    return value


def _unmask(masked, original):
    if _is_node(original):
        return original
    if isinstance(original, list):
        return [_unmask(masked[i], original[i]) for i in range(len(original))]
    if isinstance(original, tuple) and type(original).__name__ == "tuple":
        return tuple([_unmask(masked[i], original[i]) for i in range(len(original))])
    if isinstance(original, dict):
        return {k: _unmask(masked[k], original[k]) for k in original}
    return masked


def _node_states(masked, original, out):
    """The values standing for the graph nodes among `original` in `masked` (a node's state
    dict), in `_graph_args`'s order."""
    for i in range(len(original)):
        a = original[i]
        if _is_node(a):
            out.append(masked[i])
        elif isinstance(a, (list, tuple)):
            for j in range(len(a)):
                if _is_node(a[j]):
                    out.append(masked[i][j])
        elif isinstance(a, dict):
            for k in a:
                if _is_node(a[k]):
                    out.append(masked[i][k])
    return out


def _with_states(value, nodes, states, others=True):
    """`value` with each graph node replaced by its state dict: what jax.jit sees of it. With
    `others=False`, everything else is None: the new states, where their nodes were."""
    if _is_node(value):
        for i in range(len(nodes)):
            if nodes[i] is value:
                return states[i]
        return None
    if isinstance(value, list):
        return [_with_states(x, nodes, states, others) for x in value]
    if isinstance(value, tuple) and type(value).__name__ == "tuple":
        return tuple([_with_states(x, nodes, states, others) for x in value])
    if isinstance(value, dict):
        return {k: _with_states(value[k], nodes, states, others) for k in value}
    return value if others else None


def _state_names(slots):
    """Each state leaf's name in its node's state dict: its path, joined by `/`."""
    names = []
    for (i, path), slot in slots:
        names.append("/".join([str(k) for k in path]))
    return names


def _has_unknown(value):
    """Whether `value` is unknown or a list, tuple or dict holding an unknown (graph nodes are
    not searched: an unknown inside a known model is one of its leaves, which jit traces)."""
    if _is_unknown(value):
        return True
    if isinstance(value, (list, tuple)):
        for x in value:
            if _has_unknown(x):
                return True
    elif isinstance(value, dict):
        for k in value:
            if _has_unknown(value[k]):
                return True
    return False


def _slots(nodes):
    """The state leaves of `nodes` (Variables and arrays held directly), each once, as
    ((node index, path), slot), in flax's order."""
    return _scan(nodes)[0]


def _scan(nodes):
    """The state leaves of `nodes` as `_slots` gives them, and their structure as a jit cache
    key (what flax's GraphDef says: classes, paths, plain static attributes of each object),
    in one walk: `nnx.jit` needs both on every call, and a training loop calls it thousands of
    times."""
    seen = {}
    slots = []
    shape = []
    for i in range(len(nodes)):
        node = nodes[i]
        if isinstance(node, Variable):
            if id(node) not in seen:
                seen[id(node)] = True
                slots.append(((i, ()), node))
            shape.append((i, type(node).__name__))
            continue
        seen[id(node)] = True
        shape.append((i, type(node).__name__))
        _scan_walk(i, node, (), seen, slots, shape)
    return slots, tuple(shape)


def _scan_walk(i, node, path, seen, slots, shape):
    in_object = isinstance(node, Pytree)
    for key, value in _items(node):
        is_variable = isinstance(value, Variable)
        if is_variable is not True and is_variable is not False:
            continue  # an unknown value: what it holds is not known
        at = path + (key,)
        if is_variable:
            if id(value) not in seen:
                seen[id(value)] = True
                slots.append(((i, at), value))
                shape.append((at, type(value).__name__))
            else:
                shape.append((at, "shared"))
        elif isinstance(value, jax.Array):
            if not isinstance(node, tuple):
                slots.append(((i, at), _ArraySlot(node, key)))
                shape.append((at, "array"))
        elif value is None or isinstance(value, (bool, int, float, str)):
            if in_object:
                shape.append((at, value))
        elif isinstance(value, Pytree):
            if id(value) in seen:
                shape.append((at, "shared"))
            else:
                seen[id(value)] = True
                shape.append((at, type(value).__name__))
                _scan_walk(i, value, at, seen, slots, shape)
        elif isinstance(value, (list, tuple, dict, State)):
            shape.append((at, type(value).__name__))
            _scan_walk(i, value, at, seen, slots, shape)


def _static_kind(a):
    """Whether `a` can only be passed to a jitted function as a static argument."""
    if a is None or isinstance(a, (bool, int, str)):
        return True
    if isinstance(a, (float, complex)) or hasattr(a, "dtype") or _is_node(a):
        return False
    leaves = jax.tree_util.tree_leaves(a)
    return len(leaves) == 1 and leaves[0] is a


def jit(fun=None, *, static_argnums=None, static_argnames=None, donate_argnums=None, donate_argnames=None, **kwargs):
    if fun is None:

        def decorator(f):
            return jit(f, static_argnums=static_argnums, static_argnames=static_argnames)

        return decorator
    if static_argnums is None:
        static_argnums = ()
    elif isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    current = []
    templates = {}
    names = {}

    def jit_wrapper(structure, statics, *args, **kw):
        originals = current[-1]
        memo = {}
        args = list(args)
        for i, value in statics:
            args[i] = value
        states = _node_states(args, originals, [])
        full = [_unmask(args[i], _clone(originals[i], memo)) for i in range(len(args))]
        nodes = _graph_args(full)
        slots = _slots(nodes)
        leaves = []
        leaf_names = names[structure]
        for i in range(len(slots)):
            leaves.append(states[slots[i][0][0]][leaf_names[i]])
            slots[i][1].raw_value = leaves[i]
        out = fun(*full, **kw)
        after = {}
        for key, slot in _slots(nodes):
            after[key] = slot.raw_value
        new_states = [{} for n in nodes]
        for i in range(len(slots)):
            key = slots[i][0]
            new_states[key[0]][leaf_names[i]] = after[key] if key in after else leaves[i]
        # The new states come back where their nodes were among the arguments, so the trace
        # names them as it names the arguments (`model['linear/kernel']`).
        by_arg = [_with_states(a, nodes, new_states, False) for a in full]
        out_nodes = _graph_args([out]) if not _is_node(out) else [out]
        if len(out_nodes) > 0:
            templates[structure] = (_clone(out, {}), [s for k, s in _slots(out_nodes)])
            out_leaves = [slot.raw_value for k, slot in _slots(out_nodes)]
            return by_arg, _mask(out), out_leaves
        return by_arg, out, []

    jit_wrapper.__wrapped__ = fun
    # `_tracelens_names_from`: the user's arguments after the wrapper's three are named by
    # `fun`'s parameters (a retrace says "argument x changed shape", as for jax.jit).
    jitted = jax.jit(jit_wrapper, static_argnums=(0, 1), static_argnames=static_argnames, _tracelens_names_from=fun)
    # Arguments tracelens does not know cannot be split into graph nodes and state: `fun` is
    # traced directly with them unknown (known modules among them are pytrees, traced as such),
    # and its result is unknown.
    direct = jax.jit(fun, static_argnums=static_argnums, static_argnames=static_argnames)

    def static_positions(args):
        """The positional arguments passed as static values: those of `static_argnums`, and
        with `static_argnames` (whose positions the shim cannot read off `fun`) every Python
        bool, int, str or None, the kinds a static flag or size has, and every other leaf
        jax.jit could not trace (a config object, a function)."""
        positions = [i if i >= 0 else len(args) + i for i in static_argnums]
        if static_argnames:
            for i in range(len(args)):
                if _static_kind(args[i]):
                    positions.append(i)
        return positions

    def call(*args, **kw):
        if _has_unknown(args) or _has_unknown(kw):
            return direct(*args, **kw)
        nodes = _graph_args(args)
        slots, structure = _scan(nodes)
        if structure not in names:
            names[structure] = _state_names(slots)
        leaf_names = names[structure]
        states = [{} for n in nodes]
        for i in range(len(slots)):
            states[slots[i][0][0]][leaf_names[i]] = slots[i][1].raw_value
        masked = [_with_states(a, nodes, states) for a in args]
        positions = static_positions(args)
        statics = tuple([(i, args[i]) for i in range(len(args)) if i in positions])
        for i in positions:
            if 0 <= i < len(masked):
                masked[i] = None
        current.append(args)
        try:
            by_arg, out, out_leaves = jitted(structure, statics, *masked, **kw)
        finally:
            current.pop()
        new_states = _node_states(by_arg, args, [])
        for i in range(len(slots)):
            slots[i][1].raw_value = new_states[slots[i][0][0]][leaf_names[i]]
        if len(out_leaves) > 0 and structure in templates:
            template = _clone(templates[structure][0], {})
            template_nodes = _graph_args([template]) if not _is_node(template) else [template]
            new_slots = _slots(template_nodes)
            for i in range(len(new_slots)):
                new_slots[i][1].raw_value = out_leaves[i]
            out = _unmask(out, template)
        return out

    call.__wrapped__ = fun
    return call


class DiffState:
    def __init__(self, argnum, filter):
        self.argnum = argnum
        self.filter = filter


def _wrt_variables(node, wrt):
    return [(p, v) for p, v in _variables(node) if _matches(wrt, p, v)]


def _grad(f, argnums, has_aux, wrt, with_value):
    single = isinstance(argnums, (int, DiffState))
    if single:
        argnums = (argnums,)
    wrts = [a.filter if isinstance(a, DiffState) else wrt for a in argnums]
    argnums = tuple([a.argnum if isinstance(a, DiffState) else a for a in argnums])

    def wrapped(*args):
        diff = []
        for j in range(len(argnums)):
            a = args[argnums[j]]
            if _is_node(a):
                diff.append(("node", _wrt_variables(a, wrts[j])))
            else:
                diff.append(("value", a))
        nodes = _graph_args(args)
        diff_vars = []
        for kind, d in diff:
            if kind == "node":
                for p, v in d:
                    diff_vars.append(v)
        other_vars = [v for p, v in _variables(*nodes) if not _in(v, diff_vars)]

        def inner(diff_values):
            saved = [v.raw_value for v in diff_vars]
            saved_other = [v.raw_value for v in other_vars]
            call_args = list(args)
            for j in range(len(argnums)):
                kind, d = diff[j]
                if kind == "node":
                    for i in range(len(d)):
                        d[i][1].raw_value = diff_values[j][i]
                else:
                    call_args[argnums[j]] = diff_values[j]
            try:
                out = f(*call_args)
                new_other = [v.raw_value for v in other_vars]
            finally:
                for i in range(len(diff_vars)):
                    diff_vars[i].raw_value = saved[i]
                for i in range(len(other_vars)):
                    other_vars[i].raw_value = saved_other[i]
            if has_aux:
                return out[0], (out[1], new_other)
            return out, (None, new_other)

        primals = []
        for kind, d in diff:
            if kind == "node":
                primals.append([v.raw_value for p, v in d])
            else:
                primals.append(d)
        if with_value:
            (value, (aux, new_other)), grads = jax.value_and_grad(inner, has_aux=True)(primals)
        else:
            grads, (aux, new_other) = jax.grad(inner, has_aux=True)(primals)
            value = None
        for i in range(len(other_vars)):
            other_vars[i].raw_value = new_other[i]
        results = []
        for j in range(len(argnums)):
            kind, d = diff[j]
            if kind == "node":
                results.append(_nest([(d[i][0], _like(d[i][1], grads[j][i])) for i in range(len(d))]))
            else:
                results.append(grads[j])
        g = results[0] if single else tuple(results)
        if with_value:
            if has_aux:
                return (value, aux), g
            return value, g
        if has_aux:
            return g, aux
        return g

    wrapped.__wrapped__ = f
    return wrapped


def _like(slot, value):
    """A gradient as its State holds it: in a Variable of the parameter's class, or bare for an array."""
    if isinstance(slot, Variable):
        return type(slot)(value)
    return value


def _ident(v):
    if isinstance(v, Variable):
        return id(v)
    return (id(v.container), v.key)


def _in(v, vs):
    for x in vs:
        if _ident(x) == _ident(v):
            return True
    return False


def grad(f=None, argnums=0, *, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=(), wrt=Param, graph=None, graph_updates=None):
    if f is None:
        return lambda g: grad(g, argnums, has_aux=has_aux, wrt=wrt)
    return _grad(f, argnums, has_aux, wrt, False)


def value_and_grad(f=None, argnums=0, *, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=(), wrt=Param, graph=None, graph_updates=None):
    if f is None:
        return lambda g: value_and_grad(g, argnums, has_aux=has_aux, wrt=wrt)
    return _grad(f, argnums, has_aux, wrt, True)


def cached_partial(f, *cached_args, graph=None, graph_updates=None):
    """`nnx.cached_partial(f, *args)`: `f` with its first arguments bound (flax caches their
    graph traversal, which changes no result)."""

    def partial_call(*args, **kwargs):
        return f(*(cached_args + args), **kwargs)

    return partial_call


def remat(f=None, *, prevent_cse=True, static_argnums=(), policy=None, graph=None, graph_updates=None):
    """`nnx.remat(f)`: recomputation changes no shape, dtype or Python-visible value, so `f`
    runs as written (what `jax.checkpoint` would reject on its own is not reported)."""
    if f is None:
        return lambda g: g
    return f
