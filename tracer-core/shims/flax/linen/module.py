"""flax.linen.Module: dataclass modules whose variables live in collections (flax/linen/module.py).

A tracelens shim of flax 0.12.8, not flax's code. What it keeps of flax:
- every subclass is a dataclass; `name=` and `parent=` are keyword-only extras;
- `init(rngs, *args)` runs the method with every collection mutable and returns the variables
  as plain dicts (`{'params': {'Dense_0': {'kernel': ..., 'bias': ...}}}`); `apply(variables,
  *args, rngs=..., mutable=...)` runs it on given variables and returns `(out, updates)` when
  some collection is mutable;
- submodules made inside a `@compact` method are named `ClassName_N` per class, in order;
  submodules assigned in `setup` are named by their attribute (`layers_0` for a list);
  a module given as a field is adopted under the field's name;
- `param` checks an existing parameter's shape against what its initializer would make
  (ScopeParamShapeError, flax's message), and the other scope errors flax raises.
Parameter values come from the initializers, on keys derived from the given key by
`fold_in`: shapes and dtypes are flax's, values are not (flax hashes the module path).
"""

import dataclasses

import jax

from flax import _unknown, errors
from flax.core.frozen_dict import FrozenDict, unfreeze

# The modules whose `setup` or compact method is running, innermost last: a module made
# there belongs to the innermost one.
_module_stack = []


class _Unspecified:
    pass


_UNSPECIFIED = _Unspecified()


class _Root:
    """The variables and RNGs of one `init` or `apply`."""

    def __init__(self, variables, rngs, mutable, initializing):
        self.variables = variables
        self.rngs = rngs
        self.mutable = mutable
        self.initializing = initializing
        self.rng_counts = {}
        # Set by a lifted transformation (transforms.py) for the scope it runs the module in:
        # flax's debug path of the scope (`scan(ScanBlock_0)`), which collections the scope
        # sees (a function of the collection, or None for all), and a hook told of every
        # parameter made, with its initializer.
        self.debug_path = ()
        self.visible = None
        self.on_param_made = None

    def path_text(self, path):
        return "/" + "/".join(self.debug_path + tuple(path))

    def is_mutable(self, col):
        if self.visible is not None and not self.visible(col):
            return False
        if self.mutable is True:
            return True
        if self.mutable is False or self.mutable is None:
            return False
        if isinstance(self.mutable, str):
            return self.mutable == col
        if isinstance(self.mutable, _DenyList):
            return col not in self.mutable.deny
        return col in self.mutable

    def lookup(self, col, path, name):
        node = self.variables.get(col)
        if node is None:
            return _UNSPECIFIED
        for part in path:
            node = node.get(part)
            if node is None:
                return _UNSPECIFIED
        if name in node:
            return node[name]
        return _UNSPECIFIED

    def store(self, col, path, name, value):
        if col not in self.variables:
            self.variables[col] = {}
        node = self.variables[col]
        for part in path:
            if part not in node:
                node[part] = {}
            node = node[part]
        node[name] = value

    def has_collection(self, col):
        return col in self.variables and len(self.variables[col]) > 0

    def make_rng(self, name, who):
        # A stream the caller did not give falls back to "params" (flax's Scope.make_rng).
        if name not in self.rngs:
            if "params" not in self.rngs:
                raise errors.InvalidRngError(f'{who} needs PRNG for "{name}"')
            name = "params"
        count = self.rng_counts.get(name, 0)
        self.rng_counts[name] = count + 1
        return jax.random.fold_in(self.rngs[name], count)


class _DenyList:
    def __init__(self, deny):
        self.deny = [deny] if isinstance(deny, str) else list(deny)


def DenyList(deny):
    return _DenyList(deny)


def _is_module(value):
    return isinstance(value, Module)


class Variable:
    """A variable of a collection: `.value` reads it, assigning `.value` writes it."""

    def __init__(self, module, col, name):
        self._module = module
        self.collection = col
        self.name = name

    @property
    def value(self):
        root = self._module._get_root()
        return root.lookup(self.collection, self._module._get_path(), self.name)

    @value.setter
    def value(self, new_value):
        module = self._module
        root = module._get_root()
        if not root.is_mutable(self.collection):
            raise errors.ModifyScopeVariableError(self.collection, self.name, root.path_text(module._get_path()))
        root.store(self.collection, module._get_path(), self.name, new_value)


def compact(fun):
    def wrapped_compact(self, *args, **kwargs):
        return self._run_compact(fun, args, kwargs)

    wrapped_compact.compact = True
    wrapped_compact.__wrapped__ = fun
    return wrapped_compact


def nowrap(fun):
    return fun


class Module:
    def __init_subclass__(cls, **kwargs):
        dataclasses.dataclass(cls)

    def __init__(self, *args, **kwargs):
        parent = kwargs.pop("parent", _UNSPECIFIED)
        name = kwargs.pop("name", None)
        cls = type(self)
        fields = dataclasses.fields(cls)
        if len(args) > len(fields):
            raise TypeError(f"{cls.__name__}.__init__() takes {len(fields) + 1} positional arguments but {len(args) + 1} were given")
        for i, f in enumerate(fields):
            if i < len(args):
                value = args[i]
            elif f.name in kwargs:
                value = kwargs.pop(f.name)
            elif hasattr(f, "default_factory"):
                value = f.default_factory()
            elif hasattr(f, "default"):
                value = f.default
            else:
                raise TypeError(f"{cls.__name__}.__init__() missing 1 required positional argument: '{f.name}'")
            setattr(self, f.name, value)
        for key in kwargs:
            raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument '{key}'")
        self._root = None
        self._setup_done = False
        self._in_setup = False
        self._compact_depth = 0
        self._autoname = {}
        if parent is _UNSPECIFIED:
            parent = _module_stack[-1] if _module_stack else None
        self.parent = parent
        self.name = name
        if parent is not None and name is None and not parent._in_setup:
            self.name = parent._next_name(cls.__name__)

    def __post_init__(self):
        pass

    # A module is a dataclass compared and hashed by its fields (flax's `unsafe_hash`), so
    # it can be a static argument of jit.
    def __eq__(self, other):
        return type(self) is type(other) and self._field_values() == other._field_values()

    def __hash__(self):
        return hash(tuple(self._field_values().values()))

    def __repr__(self):
        lines = [f"    {key} = {value!r}" for key, value in self._field_values().items()]
        if not lines:
            return f"{type(self).__name__}()"
        return type(self).__name__ + "(\n    # attributes\n" + "\n".join(lines) + "\n)"

    def _next_name(self, prefix):
        count = self._autoname.get(prefix, 0)
        self._autoname[prefix] = count + 1
        return f"{prefix}_{count}"

    def _field_values(self):
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(type(self))}

    def clone(self, *, parent=None, **updates):
        attrs = self._field_values()
        name = updates.pop("name", self.name)
        for key, value in updates.items():
            attrs[key] = value
        return type(self)(**attrs, parent=parent, name=name)

    def _get_root(self):
        if self._root is not None:
            return self._root
        if self.parent is not None:
            return self.parent._get_root()
        return None

    def _get_path(self):
        if self._root is not None or self.parent is None:
            return ()
        return self.parent._get_path() + (self.name,)

    def _bound_root(self):
        root = self._get_root()
        if root is None:
            raise errors.CallCompactUnboundModuleError()
        self._try_setup()
        return root

    def _try_setup(self):
        if self._setup_done:
            return
        self._setup_done = True
        self._adopt_fields()
        self._in_setup = True
        _module_stack.append(self)
        try:
            self.setup()
        finally:
            _module_stack.pop()
            self._in_setup = False
        self._name_setup_children()

    def _adopt_fields(self):
        # A module given as a field (`MLP(layer=nn.Dense(3))`) runs as a child named after it.
        for f in dataclasses.fields(type(self)):
            value = getattr(self, f.name)
            if _is_module(value) and value is not self.parent and value._get_root() is None:
                setattr(self, f.name, value.clone(parent=self, name=f.name))
            elif isinstance(value, (list, tuple)):
                items = []
                for i, item in enumerate(value):
                    if _is_module(item) and item._get_root() is None:
                        item = item.clone(parent=self, name=f"{f.name}_{i}")
                    items.append(item)
                setattr(self, f.name, type(value)(items) if isinstance(value, tuple) else items)

    def _name_setup_children(self):
        for key, value in self.__dict__.items():
            if key.startswith("_") or key == "parent":
                continue
            self._name_child(key, value)

    def _name_child(self, key, value):
        if _is_module(value):
            if value.parent is self and value.name is None:
                value.name = key
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                self._name_child(f"{key}_{i}", item)
        elif isinstance(value, dict):
            for k, item in value.items():
                self._name_child(f"{key}_{k}", item)

    def __getattr__(self, name):
        # Attributes assigned in `setup` exist once setup has run: flax runs it lazily.
        if name.startswith("_"):
            raise AttributeError(f'"{type(self).__name__}" object has no attribute "{name}".')
        if not self._setup_done and self._get_root() is not None:
            self._try_setup()
            return getattr(self, name)
        # flax's Module has more than the shim models (`scope`, `path`, `tabulate`, ...):
        # a public name the shim does not know is unknown, not an AttributeError.
        return _unknown.result(self, name)

    def setup(self):
        pass

    def _run_compact(self, fun, args, kwargs):
        self._bound_root()
        if self._compact_depth == 0:
            self._autoname = {}
        self._compact_depth = self._compact_depth + 1
        _module_stack.append(self)
        try:
            return fun(self, *args, **kwargs)
        finally:
            _module_stack.pop()
            self._compact_depth = self._compact_depth - 1

    # Variables.

    def param(self, name, init_fn, *init_args, unbox=True, **init_kwargs):
        root = self._bound_root()
        path = self._get_path()
        value = root.lookup("params", path, name)
        if value is _UNSPECIFIED:
            if not root.is_mutable("params"):
                if not root.has_collection("params"):
                    raise errors.ScopeCollectionNotFound("params", name, root.path_text(path))
                raise errors.ScopeParamNotFoundError(name, root.path_text(path))
            value = init_fn(self.make_rng("params"), *init_args, **init_kwargs)
            root.store("params", path, name, value)
            if root.on_param_made is not None:
                root.on_param_made(path + (name,), init_fn)
            return value
        _check_param_shape(name, root, path, value, init_fn, init_args)
        return value

    def variable(self, col, name, init_fn=None, *init_args, unbox=True, **init_kwargs):
        root = self._bound_root()
        path = self._get_path()
        if root.lookup(col, path, name) is _UNSPECIFIED:
            if not root.is_mutable(col):
                if not root.has_collection(col):
                    raise errors.ScopeCollectionNotFound(col, name, root.path_text(path))
                raise errors.ScopeParamNotFoundError(name, root.path_text(path))
            value = None if init_fn is None else init_fn(*init_args, **init_kwargs)
            root.store(col, path, name, value)
        return Variable(self, col, name)

    def has_variable(self, col, name):
        root = self._bound_root()
        return root.lookup(col, self._get_path(), name) is not _UNSPECIFIED

    def get_variable(self, col, name, default=None):
        root = self._bound_root()
        value = root.lookup(col, self._get_path(), name)
        return default if value is _UNSPECIFIED else value

    def put_variable(self, col, name, value):
        root = self._bound_root()
        if not root.is_mutable(col):
            raise errors.ModifyScopeVariableError(col, name, root.path_text(self._get_path()))
        root.store(col, self._get_path(), name, value)

    def sow(self, col, name, value, reduce_fn=None, init_fn=None):
        root = self._bound_root()
        if not root.is_mutable(col):
            return False
        path = self._get_path()
        previous = root.lookup(col, path, name)
        if previous is _UNSPECIFIED:
            previous = ()
        root.store(col, path, name, previous + (value,))
        return True

    def make_rng(self, name="params"):
        root = self._bound_root()
        return root.make_rng(name, self.name)

    def has_rng(self, name):
        return name in self._bound_root().rngs

    def is_mutable_collection(self, col):
        return self._bound_root().is_mutable(col)

    def is_initializing(self):
        return self._bound_root().initializing

    @property
    def variables(self):
        root = self._bound_root()
        out = {}
        for col, tree in root.variables.items():
            node = tree
            for part in self._get_path():
                node = node.get(part, {}) if node is not None else None
            if node:
                out[col] = node
        return out

    # init and apply.

    def _bind_as_root(self, root):
        bound = self.clone(parent=None)
        bound._root = root
        return bound

    def _run_method(self, method, args, kwargs):
        if method is None:
            return self(*args, **kwargs)
        if isinstance(method, str):
            return getattr(self, method)(*args, **kwargs)
        if getattr(method, "__self__", None) is not None:
            # `method=model.encode`, a method bound to the unbound module: run it on this one.
            return getattr(self, method.__name__)(*args, **kwargs)
        return method(self, *args, **kwargs)

    def init_with_output(self, rngs, *args, method=None, mutable=_UNSPECIFIED, capture_intermediates=False, **kwargs):
        if not isinstance(rngs, dict):
            rngs = {"params": rngs}
        if mutable is _UNSPECIFIED:
            mutable = _DenyList("intermediates")
        root = _Root({}, rngs, mutable, True)
        out = self._bind_as_root(root)._run_method(method, args, kwargs)
        return out, _unless_unknown(out, root.variables)

    def init(self, rngs, *args, method=None, mutable=_UNSPECIFIED, capture_intermediates=False, **kwargs):
        _, variables = self.init_with_output(rngs, *args, method=method, mutable=mutable, **kwargs)
        return variables

    # `jax.jit(model.init)` and `jax.jit(model.apply)` run the module's `__call__` as their
    # body: `trace` and hover show that method (JAX names `init`/`apply`). A `method=` given
    # through `functools.partial` is not followed (the jit then shows `apply` itself).
    init_with_output.__tracelens_body__ = "__call__"
    init.__tracelens_body__ = "__call__"

    def apply(self, variables, *args, rngs=None, method=None, mutable=False, capture_intermediates=False, **kwargs):
        if not isinstance(variables, (dict, FrozenDict)):
            raise errors.ApplyScopeInvalidVariablesTypeError()
        collections = {}
        for col, tree in variables.items():
            if not isinstance(tree, (dict, FrozenDict)):
                raise errors.ApplyScopeInvalidVariablesTypeError()
            collections[col] = _copy_tree(tree)
        if "params" in collections and "params" in collections["params"]:
            raise errors.ApplyScopeInvalidVariablesStructureError(variables)
        if rngs is not None and not isinstance(rngs, dict):
            rngs = {"params": rngs}
        root = _Root(collections, rngs or {}, mutable, False)
        out = self._bind_as_root(root)._run_method(method, args, kwargs)
        if mutable is False or mutable is None:
            return out
        updates = {col: tree for col, tree in root.variables.items() if root.is_mutable(col)}
        return out, _unless_unknown(out, updates)

    apply.__tracelens_body__ = "__call__"

    def bind(self, variables, *args, rngs=None, mutable=False):
        collections = {col: _copy_tree(tree) for col, tree in variables.items()}
        return self._bind_as_root(_Root(collections, rngs or {}, mutable, False))

    def unbind(self):
        return self.clone(parent=None), self.variables


def _known_tree(x):
    if isinstance(x, jax.Array):
        return True
    if isinstance(x, (tuple, list)):
        return all(_known_tree(item) for item in x)
    if isinstance(x, dict):
        return all(_known_tree(item) for item in x.values())
    return x is None or isinstance(x, (bool, int, float, str))


def _unless_unknown(out, variables):
    # A layer tracelens does not model (`nn.RNN`, `nn.scan`, ...) made part of the output
    # unknown, and its variables are missing from the tree: the whole tree is unknown then,
    # never a tree that lacks what flax would have put in it.
    if _known_tree(out):
        return variables
    return _unknown.result(variables)


def _known_shape(shape):
    return all(isinstance(d, int) for d in shape)


def _check_param_shape(name, root, path, value, init_fn, init_args):
    # flax compares an existing parameter with the shape its initializer would make
    # (`jax.eval_shape` of it). The shims' initializers make an array of the shape they are
    # given, so that shape is compared, when every dimension is known; an initializer of the
    # user's own is not second-guessed.
    if not getattr(init_fn, "makes_shape_argument", False) or not init_args:
        return
    want_shape = init_args[0]
    if not isinstance(want_shape, (tuple, list)):
        return
    want_shape = tuple(want_shape)
    have_shape = tuple(jax.numpy.shape(value))
    if _known_shape(have_shape) and _known_shape(want_shape) and have_shape != want_shape:
        raise errors.ScopeParamShapeError(name, root.path_text(path), have_shape, want_shape)


def _copy_tree(tree):
    if isinstance(tree, FrozenDict):
        tree = unfreeze(tree)
    if isinstance(tree, dict):
        return {k: _copy_tree(v) for k, v in tree.items()}
    return tree


def merge_param(name, a, b):
    if a is None and b is None:
        raise ValueError(f'Parameter "{name}" must be passed to the constructor or at call time.')
    if a is not None and b is not None:
        raise ValueError(
            f'Parameter "{name}" was passed to the constructor and at call time. Should be passed just once.'
        )
    if a is None:
        return b
    return a
