"""flax.nnx.Optimizer as tracelens models it (flax 0.12.8): `Optimizer(model, tx, wrt=...)`
keeps the optax state of the model's `wrt` Variables (array leaves as OptArray Variables) and a
uint32 `step`; `update(model, grads)` runs `tx.update`, applies the updates to the model and
counts the step. It holds no `model` since flax 0.11: reading one raises flax's AttributeError;
`ModelAndOptimizer(model, tx)` (deprecated) keeps it and its `update(grads)` takes no model."""

import jax
import jax.numpy as jnp
import optax

from flax import _unknown
from flax.nnx._graph import Pytree, State, _filter_state, _is_unknown, state, update
from flax.nnx._variables import OptArray, OptState, Param, Variable

# The default of `update`'s `grads`: flax's message for the pre-0.11 `update(grads)`.
_MISSING = object()


def _map(f, tree):
    """`tree` rebuilt with `f` applied to each leaf (a Variable is a leaf), NamedTuples kept."""
    if _is_unknown(tree):
        return tree
    if isinstance(tree, Variable):
        return f(tree)
    if isinstance(tree, dict):
        return {k: _map(f, tree[k]) for k in tree}
    if isinstance(tree, list):
        return [_map(f, x) for x in tree]
    if isinstance(tree, tuple):
        items = [_map(f, x) for x in tree]
        if type(tree).__name__ == "tuple":
            return tuple(items)
        return type(tree)(*items)
    return f(tree)


def _to_opt_state(tree):
    return _map(lambda x: OptArray(x) if isinstance(x, jax.Array) else x, tree)


def _from_opt_state(tree):
    return _map(lambda x: x.raw_value if isinstance(x, Variable) else x, tree)


def _write_opt_state(old, new):
    if _is_unknown(new):
        return
    if isinstance(old, Variable):
        old.raw_value = new
    elif isinstance(old, dict):
        for k in old:
            _write_opt_state(old[k], new[k])
    elif isinstance(old, (list, tuple)):
        for i in range(len(old)):
            _write_opt_state(old[i], new[i])


def _as_dicts(s):
    if isinstance(s, State):
        return {k: _as_dicts(s[k]) for k in s}
    if isinstance(s, Variable):
        return s.raw_value
    return s


class Optimizer(Pytree):
    def __init__(self, model, tx, *, wrt=None, graph=None):
        if wrt is None:
            raise TypeError(
                "Missing required argument `wrt`. As of Flax 0.11.0 the `wrt` argument is required, if you want to keep "
                "the previous use nnx.ModelAndOptimizer instead of nnx.Optimizer."
            )
        self.graph = graph
        self.step = OptState(jnp.array(0, dtype=jnp.uint32))
        self.tx = tx
        self.opt_state = _to_opt_state(tx.init(_as_dicts(state(model, wrt))))
        self.wrt = wrt

    def __getattr__(self, name):
        # Only for names the instance does not hold; older tutorials read `optimizer.model`.
        if name == "model":
            raise AttributeError(
                f"{type(self).__name__} does not have attribute 'model' since Flax 0.11.0. "
                "To keep the previous behavior, use nnx.ModelAndOptimizer instead of nnx.Optimizer."
            )
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def update(self, model, grads=_MISSING, **kwargs):
        if grads is _MISSING:
            raise TypeError(
                "Missing required argument `grads`. As of Flax 0.11.0 update requires both (model, grads) arguments "
                "to be passed. If you want to keep the previous use nnx.ModelAndOptimizer instead of nnx.Optimizer."
            )
        if _is_unknown(grads):
            # Gradients tracelens does not know (of a loss on an unknown batch): the parameters
            # and the optimizer state keep their shapes and dtypes, the updates are unknown.
            return _unknown.result(grads)
        param_arrays = _as_dicts(state(model, self.wrt))
        # Gradients taken by `jax.grad` of the module itself come back as a module (nnx modules
        # are pytrees): flax reads its state.
        if isinstance(grads, Pytree):
            grads = state(grads)
        grad_arrays = _as_dicts(_filter_state(grads, self.wrt))
        opt_state_arrays = _from_opt_state(self.opt_state)
        updates, new_opt_state = self.tx.update(grad_arrays, opt_state_arrays, param_arrays, **kwargs)
        new_params = optax.apply_updates(param_arrays, updates)
        update(model, new_params)
        _write_opt_state(self.opt_state, new_opt_state)
        self.step[...] = self.step[...] + 1
        return updates


class ModelAndOptimizer(Optimizer):
    def __init__(self, model, tx, *, wrt=Param):
        super().__init__(model, tx, wrt=wrt)
        self.model = model

    def update(self, grads, **kwargs):
        return super().update(self.model, grads, **kwargs)
