"""flax.training.train_state.TrainState (flax/training/train_state.py), as a tracelens shim of
flax 0.12.8: a struct dataclass whose `apply_fn` and `tx` are static fields, so a jitted step
retraces when they change and only `step`, `params` and `opt_state` are its leaves."""

import jax
import optax

from flax import struct

OVERWRITE_WITH_GRADIENT = "_overwrite_with_gradient"


class TrainState(struct.PyTreeNode):
    step: object
    apply_fn: object = struct.field(pytree_node=False)
    params: object = struct.field(pytree_node=True)
    tx: object = struct.field(pytree_node=False)
    opt_state: object = struct.field(pytree_node=True)

    def apply_gradients(self, *, grads, **kwargs):
        if OVERWRITE_WITH_GRADIENT in grads:
            grads_with_opt = grads["params"]
            params_with_opt = self.params["params"]
        else:
            grads_with_opt = grads
            params_with_opt = self.params
        updates, new_opt_state = self.tx.update(grads_with_opt, self.opt_state, params_with_opt)
        new_params_with_opt = optax.apply_updates(params_with_opt, updates)
        if OVERWRITE_WITH_GRADIENT in grads:
            new_params = {"params": new_params_with_opt, OVERWRITE_WITH_GRADIENT: grads[OVERWRITE_WITH_GRADIENT]}
        else:
            new_params = new_params_with_opt
        return self.replace(step=self.step + 1, params=new_params, opt_state=new_opt_state, **kwargs)

    @classmethod
    def create(cls, *, apply_fn, params, tx, **kwargs):
        if not isinstance(params, jax.Array) and OVERWRITE_WITH_GRADIENT in params:
            params_with_opt = params["params"]
        else:
            params_with_opt = params
        opt_state = tx.init(params_with_opt)
        return cls(step=0, apply_fn=apply_fn, params=params, tx=tx, opt_state=opt_state, **kwargs)
