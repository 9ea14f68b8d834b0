//! JAX's transformations as higher-order APIs, one concern per module (design.md §4):
//! what `jax.jit`, `jax.vmap`, `jax.grad` and friends, the `lax` control-flow functions,
//! the pytree utilities, `jax.random` and `x.at[...]` do when the program calls them.
//! The primitives they bind, and how they are evaluated and differentiated, live beside
//! this module in `jax/` (`ir.rs`, `eval*.rs`, `ad*.rs`, `random.rs`).

pub mod at;
pub mod autodiff;
pub mod batch;
mod batch_loops;
pub mod control_flow;
pub mod dispatch;
pub mod export;
pub mod jit;
pub mod map;
pub mod pytree_aux;
pub mod pytrees;
pub mod random;
pub mod retrace;
pub mod trace;
pub mod vmap;
