//! Abstract evaluation of the elementwise primitives (`lax.add`, `lax.sin`, `select_n`,
//! `convert_element_type`): operands of one shape (a rank-0 operand, such as a literal,
//! stands for any shape), the output of that shape, weakly typed only if every operand is.

use super::{arg, type_error, RuleResult};
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use crate::jax::ir::{BinaryPrim, Prim, UnaryPrim};

/// The shape operands combine to (JAX's `broadcasting_shape_rule`): a rank-0 operand (a
/// literal) stands for any shape; the others have one rank, and an axis of 1 stretches to
/// the others' length. JAX's message for others.
pub(crate) fn common_shape(prim: &Prim, avals: &[&Aval]) -> Result<Vec<usize>, crate::jax::prims::RuleError> {
    let ranked: Vec<&Aval> = avals.iter().copied().filter(|a| !a.shape.is_empty()).collect();
    let Some(first) = ranked.first() else { return Ok(Vec::new()) };
    if ranked.iter().any(|a| a.ndim() != first.ndim()) {
        let mut ranks: Vec<usize> = ranked.iter().map(|a| a.ndim()).collect();
        ranks.sort_unstable();
        ranks.dedup();
        let ranks: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
        return Err(type_error(format!("{}: arrays must have the same number of dimensions, got {{{}}}", prim.name(), ranks.join(", "))));
    }
    let mut shape = first.shape.to_vec();
    for a in &ranked[1..] {
        for (out, &n) in shape.iter_mut().zip(&a.shape) {
            if *out == 1 {
                *out = n;
            } else if n != 1 && n != *out {
                let shapes: Vec<String> = ranked.iter().map(|a| a.shape_tuple()).collect();
                return Err(type_error(format!("{} got incompatible shapes for broadcasting: {}.", prim.name(), shapes.join(", "))));
            }
        }
    }
    Ok(shape)
}

/// The dtype of an elementwise result: that of the first operand that is not weakly typed
/// (a literal defers to the array it meets), else the first's.
fn operand_dtype(avals: &[&Aval]) -> DType {
    avals.iter().find(|a| !a.weak).or(avals.first()).map_or(DType::F32, |a| a.dtype)
}

fn elementwise(prim: &Prim, avals: &[&Aval]) -> Result<Aval, crate::jax::prims::RuleError> {
    let shape = common_shape(prim, avals)?;
    Ok(Aval::new(&shape, operand_dtype(avals)).weak(avals.iter().all(|a| a.weak)))
}

pub fn unary(prim: &Prim, u: UnaryPrim, ins: &[Aval]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let to_real = matches!(u, UnaryPrim::Abs | UnaryPrim::Real | UnaryPrim::Imag) && x.dtype.is_complex();
    Ok(vec![if u == UnaryPrim::IsFinite {
        x.with_dtype(DType::Bool)
    } else if to_real {
        Aval::new(&x.shape, x.dtype.real_dtype()).weak(x.weak)
    } else {
        x.clone()
    }])
}

pub fn binary(prim: &Prim, _b: BinaryPrim, ins: &[Aval]) -> RuleResult {
    let (x, y) = (arg(prim, ins, 0)?, arg(prim, ins, 1)?);
    Ok(vec![elementwise(prim, &[x, y])?])
}

pub fn compare(prim: &Prim, ins: &[Aval]) -> RuleResult {
    let (x, y) = (arg(prim, ins, 0)?, arg(prim, ins, 1)?);
    Ok(vec![Aval::new(&common_shape(prim, &[x, y])?, DType::Bool)])
}

/// `select_n(which, *cases)`: the cases' aval.
pub fn select(prim: &Prim, ins: &[Aval]) -> RuleResult {
    let which = arg(prim, ins, 0)?;
    arg(prim, ins, 1)?;
    let cases: Vec<&Aval> = ins[1..].iter().collect();
    let mut all: Vec<&Aval> = cases.clone();
    all.push(which);
    let shape = common_shape(prim, &all)?;
    Ok(vec![Aval::new(&shape, operand_dtype(&cases)).weak(cases.iter().all(|a| a.weak))])
}

/// `clamp(min, x, max)`: `x`'s aval.
pub fn clamp(prim: &Prim, ins: &[Aval]) -> RuleResult {
    let x = arg(prim, ins, 1)?;
    Ok(vec![x.clone()])
}

/// The operand's aval unchanged (`integer_pow`, `stop_gradient`, `random_clone`).
pub fn same(prim: &Prim, ins: &[Aval]) -> RuleResult {
    Ok(vec![arg(prim, ins, 0)?.clone()])
}

pub fn convert(prim: &Prim, ins: &[Aval], dtype: DType, weak: bool) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    Ok(vec![x.with_dtype(dtype).weak(weak)])
}
