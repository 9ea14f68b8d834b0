"""flax.nnx's object graph as tracelens models it (flax 0.12.8): Pytree and Module objects hold
Variables in attributes (directly, or in lists, tuples and dicts); `state`, `split`, `merge`,
`update` and `graphdef` walk that graph in flax's order (attribute names sorted, sequence items
by index), visiting a shared Variable or object once, at its first path.

Objects are copied with `dataclasses.replace`, which in tracelens copies any instance's
attributes without calling `__init__` (flax's own `merge` does not run `__init__` either)."""

import dataclasses

import jax

from flax.nnx._variables import Variable


_templates = {}


class _Probe:
    pass


def _is_unknown(value):
    """Whether tracelens does not know `value` (a model from an unmodelled loader, a batch of an
    unknown dataset): `isinstance` of an unknown value against any class is itself unknown, and
    of a known one is True or False. The graph walks stop at an unknown: what it holds is not
    known, and walking it would follow every branch of every test on it."""
    return isinstance(value, _Probe) is not False


def _is_data(value):
    """Whether an attribute is data (a pytree child) rather than static, as flax 0.12 decides:
    Variables, arrays, Pytree objects, and containers holding any of them."""
    # An unknown is taken for a static attribute: its items cannot be walked (each would be
    # unknown too), and asking the tests below of it would make the answer unknown.
    if _is_unknown(value):
        return False
    if isinstance(value, (Variable, Pytree, jax.Array)):
        return True
    if isinstance(value, (list, tuple)):
        for x in value:
            if _is_data(x):
                return True
    if isinstance(value, dict):
        for k in value:
            if _is_data(value[k]):
                return True
    return False


def _pytree_flatten(node):
    attrs = vars(node)
    _templates[type(node)] = node
    names = sorted(attrs.keys())
    data = tuple([k for k in names if _is_data(attrs[k])])
    statics = tuple([(k, attrs[k]) for k in names if not _is_data(attrs[k])])
    return [attrs[k] for k in data], (type(node), data, statics)


def _pytree_keys(aux):
    return aux[1]


def _pytree_unflatten(aux, children):
    cls, data, statics = aux
    node = dataclasses.replace(_templates[cls])
    for k, v in statics:
        setattr(node, k, v)
    for i in range(len(data)):
        setattr(node, data[i], children[i])
    return node


class Pytree:
    """flax 0.12's Pytree (the base of Module, Rngs and Optimizer): every subclass is a JAX
    pytree whose children are its data attributes, in sorted name order."""

    def __init_subclass__(cls, **kwargs):
        # `_tracelens_keys`: children keyed by attribute name, as flax's flatten-with-keys
        # names them (`model.linear.kernel.value`).
        jax.tree_util.register_pytree_node(cls, _pytree_flatten, _pytree_unflatten, _tracelens_keys=_pytree_keys)


Object = Pytree


class Module(Pytree):
    def iter_modules(self):
        for path, node in _nodes(self):
            if isinstance(node, Module):
                yield path, node

    def sow(self, variable_type, name, value, **kwargs):
        pass

    def train(self, **attributes):
        self.set_attributes(deterministic=False, use_running_average=False, **attributes)

    def eval(self, **attributes):
        self.set_attributes(deterministic=True, use_running_average=True, **attributes)

    def set_attributes(self, **attributes):
        for path, node in _nodes(self):
            for name in attributes:
                if name in vars(node):
                    setattr(node, name, attributes[name])


def _items(node):
    """The children of a graph node or container, in flax's order."""
    if _is_unknown(node):
        return []
    if isinstance(node, Pytree):
        attrs = vars(node)
        return [(k, attrs[k]) for k in sorted(attrs.keys())]
    if isinstance(node, dict):
        return [(k, node[k]) for k in sorted(node.keys())]
    if isinstance(node, State):
        return [(k, node._mapping[k]) for k in sorted(node._mapping.keys())]
    if isinstance(node, tuple) and type(node).__name__ != "tuple":
        # A NamedTuple (an optax state) is a pytree keyed by its field names, as flax's graph
        # names its children after `jax.tree_util`'s keys: `opt_state/0/mu/linear/kernel`.
        fields = type(node)._fields
        return [(fields[i], node[i]) for i in range(len(node))]
    if isinstance(node, (list, tuple)):
        return [(i, node[i]) for i in range(len(node))]
    return []


class _ArraySlot:
    """An array held directly in an object's attribute or a list or dict item: a state leaf
    of the graph as a Variable is (flax 0.12 treats such arrays as data)."""

    def __init__(self, container, key):
        self.container = container
        self.key = key

    @property
    def raw_value(self):
        if isinstance(self.container, Pytree):
            return getattr(self.container, self.key)
        return self.container[self.key]

    @raw_value.setter
    def raw_value(self, value):
        if isinstance(self.container, Pytree):
            setattr(self.container, self.key, value)
        else:
            self.container[self.key] = value


def _walk(node, path, seen, out_vars, out_nodes):
    for key, value in _items(node):
        if _is_unknown(value):
            continue
        if isinstance(value, Variable):
            if id(value) not in seen:
                seen[id(value)] = True
                out_vars.append((path + (key,), value))
        elif isinstance(value, jax.Array) and not isinstance(node, tuple):
            out_vars.append((path + (key,), _ArraySlot(node, key)))
        elif isinstance(value, (Pytree, list, tuple, dict, State)):
            if isinstance(value, Pytree):
                if id(value) in seen:
                    continue
                seen[id(value)] = True
                out_nodes.append((path + (key,), value))
            _walk(value, path + (key,), seen, out_vars, out_nodes)


def _variables(*nodes):
    """Every Variable under `nodes`, as (path, variable), each once."""
    seen = {}
    out_vars = []
    out_nodes = []
    for node in nodes:
        if isinstance(node, Variable):
            if id(node) not in seen:
                seen[id(node)] = True
                out_vars.append(((), node))
            continue
        if isinstance(node, Pytree):
            seen[id(node)] = True
        _walk(node, (), seen, out_vars, out_nodes)
    return out_vars


def _nodes(root):
    seen = {id(root): True}
    out_vars = []
    out_nodes = [((), root)]
    _walk(root, (), seen, out_vars, out_nodes)
    return out_nodes


def _is_graph_node(value):
    return isinstance(value, Pytree)


def _structure(*nodes):
    """What flax's GraphDef says of `nodes`: the classes, the paths and the plain static
    attributes, as a hashable tuple (a jit cache key)."""
    out = []
    for node in nodes:
        for path, n in _nodes(node):
            statics = []
            for key, value in _items(n):
                if value is None or isinstance(value, (bool, int, float, str)):
                    statics.append((key, value))
            out.append((path, type(n).__name__, tuple(statics)))
        for path, v in _variables(node):
            out.append((path, type(v).__name__))
    return tuple(out)


def _matches(filter, path, variable):
    if filter is Ellipsis or filter is True:
        return True
    if filter is None or filter is False:
        return False
    if isinstance(filter, (tuple, list)):
        for f in filter:
            if _matches(f, path, variable):
                return True
        return False
    if isinstance(filter, str):
        return filter in path
    if isinstance(filter, _Not):
        return not _matches(filter.filter, path, variable)
    if isinstance(filter, _All):
        for f in filter.filters:
            if not _matches(f, path, variable):
                return False
        return True
    if isinstance(filter, type):
        return isinstance(variable, filter)
    if callable(filter):
        return filter(path, variable.raw_value if isinstance(variable, _ArraySlot) else variable)
    return False


class _Not:
    def __init__(self, filter):
        self.filter = filter


class _All:
    def __init__(self, *filters):
        self.filters = filters


def Not(filter):
    return _Not(filter)


def All(*filters):
    return _All(*filters)


def Any(*filters):
    return tuple(filters)


class State:
    """flax's State: a nested mapping from attribute names to Variables, a pytree whose children
    are its values in sorted key order."""

    __tracelens_items__ = "_mapping"

    def __init__(self, mapping=None, *, _copy=True):
        self._mapping = {}
        if mapping is not None:
            for k in mapping:
                self._mapping[k] = mapping[k]

    def __getitem__(self, key):
        return self._mapping[key]

    def __setitem__(self, key, value):
        self._mapping[key] = value

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        mapping = self._mapping
        if name in mapping:
            return mapping[name]
        raise AttributeError(f"No attribute '{name}' in State")

    def __contains__(self, key):
        return key in self._mapping

    def __iter__(self):
        return iter(self._mapping)

    def __len__(self):
        return len(self._mapping)

    def keys(self):
        return self._mapping.keys()

    def values(self):
        return self._mapping.values()

    def items(self):
        return self._mapping.items()

    def flat_state(self):
        return _flat(self, ())

    def filter(self, *filters):
        return _filter_state(self, filters[0] if len(filters) == 1 else filters)


def _state_flatten(s):
    keys = sorted(s._mapping.keys())
    return [s._mapping[k] for k in keys], tuple(keys)


def _state_unflatten(keys, children):
    out = State()
    for i in range(len(keys)):
        out._mapping[keys[i]] = children[i]
    return out


def _state_keys(keys):
    """A State's children keyed as dict items (`state['linear']['kernel']`), as flax's are."""
    return ["['" + k + "']" if isinstance(k, str) else "[" + str(k) + "]" for k in keys]


jax.tree_util.register_pytree_node(State, _state_flatten, _state_unflatten, _tracelens_keys=_state_keys)


def _flat(tree, path):
    out = []
    if _is_unknown(tree):
        out.append((path, tree))
    elif isinstance(tree, State):
        for k in sorted(tree._mapping.keys()):
            out.extend(_flat(tree._mapping[k], path + (k,)))
    elif isinstance(tree, dict):
        for k in sorted(tree.keys()):
            out.extend(_flat(tree[k], path + (k,)))
    else:
        out.append((path, tree))
    return out


def _nest(pairs):
    root = State()
    for path, value in pairs:
        node = root
        for key in path[:-1]:
            if key not in node._mapping:
                node._mapping[key] = State()
            node = node._mapping[key]
        if len(path) > 0:
            node._mapping[path[-1]] = value
    return root


def _filter_state(state, filter):
    return _nest([(p, v) for p, v in _flat(state, ()) if _matches(filter, p, v)])


def _copy_variable(v):
    """What a State holds of a leaf: the Variable itself (flax's State refers to the model's
    Variables, so writing through it updates the model), or an array held directly."""
    if isinstance(v, _ArraySlot):
        return v.raw_value
    return v


def state(node, *filters, graph=None):
    pairs = [(p, _copy_variable(v)) for p, v in _variables(node)]
    if len(filters) == 0:
        return _nest(pairs)
    states = []
    for f in filters:
        states.append(_nest([(p, v) for p, v in pairs if _matches(f, p, v)]))
    if len(states) == 1:
        return states[0]
    return tuple(states)


class GraphDef:
    """The structure of a graph: a template copy of it, which `merge` copies again."""

    def __init__(self, template, structure):
        self._template = template
        self._structure = structure

    def __eq__(self, other):
        return isinstance(other, GraphDef) and self._structure == other._structure

    def __hash__(self):
        return hash(self._structure)


_graphdefs = {}


def _graphdef_flatten(g):
    # Keyed by its structure, so two splits of one model are the same static value to jit.
    _graphdefs[g._structure] = g
    return (), g._structure


jax.tree_util.register_pytree_node(GraphDef, _graphdef_flatten, lambda aux, children: _graphdefs[aux])


def _clone(value, memo):
    """A copy of a graph: new objects, containers and Variables, sharing as the original does."""
    if _is_unknown(value):
        return value
    if isinstance(value, Variable) or isinstance(value, Pytree):
        if id(value) in memo:
            return memo[id(value)]
        new = dataclasses.replace(value)
        memo[id(value)] = new
        if isinstance(value, Pytree):
            for key, child in _items(value):
                setattr(new, key, _clone(child, memo))
        return new
    if isinstance(value, State):
        new = State()
        for k in value._mapping:
            new._mapping[k] = _clone(value._mapping[k], memo)
        return new
    if isinstance(value, list):
        return [_clone(v, memo) for v in value]
    if isinstance(value, dict):
        return {k: _clone(value[k], memo) for k in value}
    if isinstance(value, tuple) and type(value).__name__ == "tuple":
        return tuple([_clone(v, memo) for v in value])
    return value


def graphdef(node, *, graph=None):
    return GraphDef(_clone(node, {}), _structure(node))


def split(node, *filters, graph=None):
    gdef = graphdef(node)
    if len(filters) == 0:
        return gdef, state(node)
    pairs = [(p, _copy_variable(v)) for p, v in _variables(node)]
    out = [gdef]
    for f in filters:
        out.append(_nest([(p, v) for p, v in pairs if _matches(f, p, v)]))
    return tuple(out)


def _set_from_state(node, states):
    by_path = {}
    for s in states:
        for p, v in _flat(s, ()):
            by_path[p] = v
    for p, var in _variables(node):
        if p in by_path:
            new = by_path[p]
            if isinstance(new, Variable):
                var.raw_value = new.raw_value
            else:
                var.raw_value = new


def merge(graphdef, *states, copy=False, recreate_variables=True):
    """`nnx.merge`: a new node from the graphdef's template with the states' values (`copy`
    and `recreate_variables` decide whether flax shares the states' Variable objects, which
    changes no shape, dtype or value)."""
    node = _clone(graphdef._template, {})
    _set_from_state(node, states)
    return node


def update(node, state, *states):
    _set_from_state(node, (state,) + states)


def pure(tree):
    """`nnx.pure`: a State with raw values in place of Variables."""
    if isinstance(tree, Variable):
        return tree.raw_value
    if isinstance(tree, State):
        return _nest([(p, pure(v)) for p, v in _flat(tree, ())])
    return tree


as_pure = pure


def clone(node, variables=True, *, arrays=False, graph=None):
    return _clone(node, {})


def variables(node, *filters, graph=None):
    return state(node, *filters)


def iter_graph(node, *, graph=None):
    for path, n in _nodes(node):
        yield path, n


def List(items=()):
    """`nnx.List`: a list whose items are walked as a node's children (plain lists already are)."""
    return list(items)


def Dict(*args, **kwargs):
    return dict(*args, **kwargs)


class Sequential(Module):
    def __init__(self, *fns):
        self.layers = list(fns)

    def __call__(self, *args, **kwargs):
        output = None
        for i in range(len(self.layers)):
            f = self.layers[i]
            output = f(*args, **kwargs)
            args = (output,)
            kwargs = {}
        return output
