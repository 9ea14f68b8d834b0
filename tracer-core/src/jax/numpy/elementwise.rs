//! The elementwise functions that are more than one primitive (`divide`, `floor_divide`,
//! `power`, `logaddexp`, `hypot`, `isinf`, `nan_to_num`, `where`, `clip`, ...); the ones that
//! are one primitive are rows of the ufunc table (ufunc.rs).

use super::*;

/// A number or array operand of an activation's formula, weakly typed when it is a Python
/// number (`alpha`, constants).
pub(super) fn num(interp: &mut Interp, v: &Value) -> PyResult<Option<Rc<Array>>> {
    Ok(match operand(interp, v)? {
        Operand::Array(a) => Some(a),
        Operand::Unknown => None,
    })
}

/// `jnp.where(c, x, y)` of arrays, through `jnp.where` itself (promotion, broadcasting).
pub(super) fn where3(interp: &mut Interp, c: &Rc<Array>, x: &Rc<Array>, y: &Rc<Array>) -> PyResult<Rc<Array>> {
    match call(interp, JaxFn::Where, vec![Value::Array(c.clone()), Value::Array(x.clone()), Value::Array(y.clone())], Vec::new())? {
        Value::Array(r) => Ok(r),
        _ => Err(interp.value_error("jnp.where of unknown operands")),
    }
}

/// `jnp.hypot` of operands already promoted to one inexact dtype and shape, with JAX's
/// scaling (`max * sqrt(1 + (min/max)**2)`), its `0` where both are zero and its `inf` where
/// either is infinite (even against a NaN), in JAX's order of equations.
pub(super) fn hypot(interp: &mut Interp, x: &Rc<Array>, y: &Rc<Array>) -> PyResult<Rc<Array>> {
    let (x, y) = (unary_prim(interp, UnaryPrim::Abs, x)?, unary_prim(interp, UnaryPrim::Abs, y)?);
    let inf = weak(f64::INFINITY);
    let x_inf = compare_arrays(interp, CmpPrim::Eq, &x, &inf)?;
    let y_inf = compare_arrays(interp, CmpPrim::Eq, &y, &inf)?;
    let either_inf = binary_prim(interp, BinaryPrim::Or, &x_inf, &y_inf)?;
    let big = binary_prim(interp, BinaryPrim::Max, &x, &y)?;
    let small = binary_prim(interp, BinaryPrim::Min, &x, &y)?;
    let zero = compare_arrays(interp, CmpPrim::Eq, &big, &weak(0.0))?;
    let ones = full(interp, &big.aval.shape, 1.0, big.aval.dtype)?;
    let safe_big = where3(interp, &zero, &ones, &big)?;
    let ratio = true_divide(interp, &small, &safe_big)?;
    let squared = unary_prim(interp, UnaryPrim::Square, &ratio)?;
    let sum = binary_prim(interp, BinaryPrim::Add, &weak(1.0), &squared)?;
    let root = unary_prim(interp, UnaryPrim::Sqrt, &sum)?;
    let scaled = binary_prim(interp, BinaryPrim::Mul, &big, &root)?;
    let finite = where3(interp, &zero, &big, &scaled)?;
    let infs = full(interp, &finite.aval.shape, f64::INFINITY, finite.aval.dtype)?;
    where3(interp, &either_inf, &infs, &finite)
}

pub(super) fn weak(v: f64) -> Rc<Array> {
    Array::scalar(v, DType::F64, true)
}
