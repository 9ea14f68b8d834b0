//! jax.numpy, jax.lax, jax.nn and jax.scipy on top of the primitives: JAX's user-facing
//! semantics (weak-type promotion, broadcasting, argument checks and their messages), and the
//! conversions where Python needs a concrete value — exactly where JAX raises its tracer
//! errors. This file holds the entry point (`call`) and what every family shares; the
//! functions live by family in the files beside it (docs/ARCHITECTURE.md has the map).

use std::rc::Rc;

use super::array::{self, Array, ArrayKind, Lazy};
use super::aval::{join_dims, shape_tuple, Aval, Shape};
use super::dtypes::{self, DType, PyScalarKind, WeakDType};
use super::errors;
use super::eval;
use super::ir::{ArgOp, BinaryPrim, CmpPrim, EighInput, FillValue, IndexItem, IndexMode, LinalgOp, Prim, ReduceOp, UnaryPrim};
use super::surface::JaxFn;
use super::{apply1, apply_opaque1};
use crate::diagnostics::Code;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Flow, Interp, PyResult};
use crate::syntax::ast::{BinOp, CmpOp, Expr, UnaryOp};

macro_rules! arr_or_unknown {
    ($interp:expr, $v:expr) => {
        match operand($interp, $v)? {
            Operand::Array(a) => a,
            Operand::Unknown => {
                return Ok(match $v {
                    v @ Value::Opaque(_) => v.clone(),
                    other => Value::opaque(format!("jax.numpy on a {}", other.type_name())),
                })
            }
        }
    };
}

/// The array argument `i`/`name` of a surface call (`cx`), or the function's `TypeError`
/// when it is missing; an argument that is not an array ends the call with an unknown result.
macro_rules! arr {
    ($interp:ident, $cx:ident, $i:expr, $name:expr) => {
        match $cx.p.get($i, $name) {
            Some(v) => arr_or_unknown!($interp, v),
            None => return Err($interp.type_error(format!("{}() missing 1 required positional argument: '{}'", $cx.f.name(), $name))),
        }
    };
}

mod arraylike;
mod conversion;
mod creation;
mod dispatch;
#[cfg(feature = "unit-tests")]
pub(crate) use dispatch::tests as dispatch_tests;
mod elementwise;
mod indexing;
mod lax;
mod linalg;
pub(super) mod linalg_api;
mod literal;
mod methods;
mod nn;
mod operands;
mod operators;
mod pad;
mod products;
mod quantile;
mod reductions;
mod repeat_counts;
mod repr;
mod shape;
mod sort;
mod ufunc;

pub use conversion::*;
pub use creation::*;
use dispatch::Family;
use elementwise::*;
pub use indexing::*;
use linalg::*;
pub use methods::*;
pub use operands::*;
pub use operators::*;
use products::{matmul, squeeze};
use reductions::*;
pub use repr::*;
pub use shape::*;

/// The positional and keyword arguments of a call, read by position or by name.
#[derive(Clone, Copy)]
struct Args<'a> {
    args: &'a [Value],
    kwargs: &'a Kwargs,
}

impl<'a> Args<'a> {
    fn get(&self, i: usize, name: &str) -> Option<&'a Value> {
        self.kwargs.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v).or_else(|| self.args.get(i)).filter(|v| !v.is_none())
    }
}

/// One call of a surface function, as each family reads it.
#[derive(Clone, Copy)]
struct Call<'a> {
    f: JaxFn,
    args: &'a [Value],
    kwargs: &'a Kwargs,
    p: Args<'a>,
    /// The dtype configuration (x64) at the call.
    c: dtypes::DTypeConfig,
    /// `keepdims=`, read for every function but `jax.lax`'s, as `jnp`'s reductions take it.
    keepdims: bool,
}

impl Call<'_> {
    /// The first positional argument (`None` when there is none).
    fn first(&self) -> Value {
        self.args.first().cloned().unwrap_or(Value::None)
    }

    /// Parameter `i`, given by position or by its name (`np.ones(shape=(2, 3))`).
    fn named(&self, i: usize, name: &str) -> Value {
        self.p.get(i, name).cloned().unwrap_or(Value::None)
    }

    /// The result of a function no family computes: unknown.
    fn unrouted(&self) -> Value {
        Value::opaque(format!("result of {}", self.f.qualified_name()))
    }
}

/// Functions of the `jax.numpy` layer whose result is not an array.
const NON_ARRAY_RESULTS: &[&str] = &[
    "shape",
    "ndim",
    "size",
    "result_type",
    "promote_types",
    "issubdtype",
    "isdtype",
    "finfo",
    "iinfo",
    "dtype",
    "can_cast",
    "iscomplexobj",
    "isrealobj",
    "isscalar",
    "tree_structure",
    "tree_leaves",
    "tree_flatten",
    // A pytree of any leaves: its arrays are mapped, the rest (functions, strings) kept.
    "stop_gradient",
];

/// Functions of the surface whose result is a tuple or list of arrays (for some arguments):
/// an unknown result of theirs is a container, not a tracer.
const SEVERAL_RESULTS: &[&str] = &[
    "split",
    "array_split",
    "atleast_1d",
    "atleast_2d",
    "eig",
    "eigh",
    "lstsq",
    "lu",
    "meshgrid",
    "nonzero",
    "qr",
    "slogdet",
    "sort",
    "sort_key_val",
    "svd",
    "top_k",
    "unique",
    "where",
];

/// Calls a jax.numpy / jax.nn / jax.lax function that maps arrays to arrays.
pub fn call(interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    arraylike::check(interp, f, &args)?;
    // An op on a tracer gives a tracer, whatever else is unknown (design.md §6); so does
    // any op that binds a primitive inside a staging trace (`jit`, a `scan` body), whatever
    // its operands are: JAX stages every such op out, constants included.
    let on_tracer =
        args.iter().chain(kwargs.iter().map(|(_, v)| v)).any(|v| match v {
            Value::List(l) => l.borrow().iter().any(Value::is_certain_tracer),
            Value::Tuple(t) => t.iter().any(Value::is_certain_tracer),
            v => v.is_certain_tracer(),
        }) || (interp.jax.staging_depth() > 0 && dispatch::family(f) != Family::Elsewhere && !SEVERAL_RESULTS.contains(&f.name()));
    let result = call_surface(interp, f, args, kwargs);
    match result {
        Ok(Value::Opaque(o)) if on_tracer && !o.tracer && !NON_ARRAY_RESULTS.contains(&f.name()) => {
            Ok(Value::opaque_tracer(o.what.clone()))
        }
        other => other,
    }
}

fn call_surface(interp: &mut Interp, f: JaxFn, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let c = cfg(interp);
    let p = Args { args: &args, kwargs: &kwargs };
    let served_by: fn(&mut Interp, &Call) -> PyResult<Value> = match dispatch::family(f) {
        // `jax.lax`'s wrappers take no `keepdims=`, which is not read for them.
        Family::Lax => return lax::call(interp, f, &p),
        Family::Ufunc => ufunc::serve,
        Family::Creation => creation::serve,
        Family::Elementwise => elementwise::serve,
        Family::Reductions => reductions::serve,
        Family::Shape => shape::serve,
        Family::Indexing => indexing::serve,
        Family::Sort => sort::serve,
        Family::Linalg => linalg::serve,
        Family::Nn => nn::serve,
        Family::Elsewhere => |_, cx| Ok(cx.unrouted()),
    };
    let keepdims = match p.get(usize::MAX, "keepdims") {
        Some(v) => interp.truthy(v)?,
        None => false,
    };
    served_by(interp, &Call { f, args: &args, kwargs: &kwargs, p, c, keepdims })
}
