//! Abstract evaluation of the reductions and of the primitives that order along one axis
//! (`reduce_sum`, `argmax`, `cumsum`, `sort`, `top_k`).

use super::{arg, type_error, RuleResult};
use crate::jax::aval::{shape_tuple, Aval};
use crate::jax::dtypes::DType;
use crate::jax::ir::Prim;

fn without_axes(x: &Aval, axes: &[usize]) -> Vec<usize> {
    x.shape.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &n)| n).collect()
}

pub fn reduce(prim: &Prim, ins: &[Aval], axes: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if axes.iter().any(|&a| a >= x.ndim()) {
        return Err(type_error(format!("{} axes {} out of range for operand shape {}", prim.name(), shape_tuple(axes), x.shape_tuple())));
    }
    Ok(vec![x.with_shape(&without_axes(x, axes))])
}

pub fn arg_reduce(prim: &Prim, ins: &[Aval], axis: usize, index_dtype: DType) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if axis >= x.ndim() || x.shape[axis] == 0 {
        return Err(type_error(format!("{} requires a non-empty axis {axis} of operand shape {}", prim.name(), x.shape_tuple())));
    }
    Ok(vec![Aval::new(&without_axes(x, &[axis]), index_dtype)])
}

pub fn cumulative(prim: &Prim, ins: &[Aval], axis: usize) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if axis >= x.ndim() {
        return Err(type_error(format!("{} axis {axis} out of range for operand shape {}", prim.name(), x.shape_tuple())));
    }
    Ok(vec![x.clone()])
}

/// `sort(*operands)` along `dimension` by the first `num_keys`: here one equation gives the
/// last operand sorted (the values a `sort` of keys and values is bound for).
pub fn sort(prim: &Prim, ins: &[Aval], dimension: usize, _num_keys: usize) -> RuleResult {
    let first = arg(prim, ins, 0)?;
    if dimension >= first.ndim() || ins.iter().any(|a| a.shape != first.shape) {
        return Err(type_error(format!(
            "sort operands must have the same shape and a dimension {dimension} below their rank, got {}",
            ins.iter().map(|a| a.shape_tuple()).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(vec![ins[ins.len() - 1].clone()])
}

/// `top_k`'s values (or, with `indices`, their `int32` indices): the last axis cut to `k`.
pub fn top_k(prim: &Prim, ins: &[Aval], k: usize, indices: bool) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let Some(&last) = x.shape.last() else {
        return Err(type_error("top_k operand must have >= 1 dimension, got ()"));
    };
    if k > last {
        return Err(type_error(format!("k argument to top_k must be no larger than minor dimension; {k} vs {}", x.shape_tuple())));
    }
    let mut shape = x.shape.to_vec();
    *shape.last_mut().unwrap_or(&mut 0) = k;
    Ok(vec![if indices { Aval::new(&shape, DType::I32) } else { x.with_shape(&shape) }])
}
