//! The transformations' public paths as the interpreter and the rest of `jax/` name them
//! (`jax::api::JaxObject`, `jax::api::call_jax_fn`, ...), re-exported from `jax/transforms/`,
//! where each concern lives in its own module (jit, vmap, autodiff, control flow, pytrees,
//! random, `.at[]`, and the dispatch).

pub use super::transforms::at::at_getitem;
pub use super::transforms::at::scatter_index;
pub use super::transforms::dispatch::call_jax_fn;
pub use super::transforms::dispatch::call_jax_object;
pub use super::transforms::dispatch::call_object_method;
pub use super::transforms::dispatch::isinstance_jax;
pub use super::transforms::dispatch::jax_fn_getattr;
pub use super::transforms::dispatch::object_getattr;
pub use super::transforms::dispatch::JaxObject;
pub use super::transforms::jit::CacheKey;
pub use super::transforms::jit::JitInfo;
pub use super::transforms::jit::Jitted;
pub use super::transforms::pytrees::class_children;
pub use super::transforms::pytrees::flatten;
pub use super::transforms::pytrees::TreeDef;
pub use super::transforms::trace::fun_def_site;
pub use super::transforms::trace::fun_name;
pub use super::transforms::trace::instantiate_outputs;
pub use super::transforms::trace::param_names;
pub(super) use super::transforms::trace::replace_array_leaves;
pub use super::transforms::trace::BodyCacheEntry;
