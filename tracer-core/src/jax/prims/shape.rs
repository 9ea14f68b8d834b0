//! Abstract evaluation of the primitives that move elements without computing with them
//! (`broadcast_in_dim`, `reshape`, `transpose`, `slice`, `concatenate`, `pad`, ...) and of
//! `iota`: the output shape from the parameters, the operand's dtype and weak type.

use super::{arg, type_error, RuleError, RuleResult};
use crate::jax::aval::{shape_tuple, Aval};
use crate::jax::dtypes::DType;
use crate::jax::ir::Prim;

fn axis_error(prim: &Prim, what: &str, ndim: usize) -> RuleError {
    type_error(format!("{} got {what} for an operand of rank {ndim}", prim.name()))
}

pub fn broadcast_in_dim(prim: &Prim, ins: &[Aval], shape: &[usize], dims: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let fits = dims.len() == x.ndim()
        && dims.iter().zip(&x.shape).all(|(&d, &n)| shape.get(d).is_some_and(|&m| n == 1 || n == m))
        && dims.windows(2).all(|w| w[0] < w[1]);
    if !fits {
        return Err(type_error(format!(
            "broadcast_in_dim operand shape {} does not fit shape {} with broadcast_dimensions {}",
            x.shape_tuple(),
            shape_tuple(shape),
            shape_tuple(dims)
        )));
    }
    Ok(vec![x.with_shape(shape)])
}

pub fn reshape(prim: &Prim, ins: &[Aval], new_sizes: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let size: u128 = new_sizes.iter().fold(1u128, |a, &d| a.saturating_mul(d as u128));
    if size != x.size() {
        return Err(type_error(format!(
            "reshape total size must be unchanged, got new_sizes {} (of size {size}) for shape {} (of size {}).",
            shape_tuple(new_sizes),
            x.shape_tuple(),
            x.size()
        )));
    }
    Ok(vec![x.with_shape(new_sizes)])
}

pub fn transpose(prim: &Prim, ins: &[Aval], perm: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let mut seen = vec![false; x.ndim()];
    let valid = perm.len() == x.ndim() && perm.iter().all(|&p| p < seen.len() && !std::mem::replace(&mut seen[p], true));
    if !valid {
        return Err(type_error(format!(
            "transpose permutation isn't a permutation of operand dimensions, got permutation {} for operand shape {}.",
            shape_tuple(perm),
            x.shape_tuple()
        )));
    }
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
    Ok(vec![x.with_shape(&shape)])
}

pub fn squeeze(prim: &Prim, ins: &[Aval], dims: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if dims.iter().any(|&d| x.shape.get(d) != Some(&1)) {
        return Err(axis_error(prim, &format!("dimensions {} that are not axes of length 1", shape_tuple(dims)), x.ndim()));
    }
    let shape: Vec<usize> = x.shape.iter().enumerate().filter(|(i, _)| !dims.contains(i)).map(|(_, &n)| n).collect();
    Ok(vec![x.with_shape(&shape)])
}

pub fn rev(prim: &Prim, ins: &[Aval], dims: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if dims.iter().any(|&d| d >= x.ndim()) {
        return Err(axis_error(prim, &format!("dimensions {}", shape_tuple(dims)), x.ndim()));
    }
    Ok(vec![x.clone()])
}

pub fn slice(prim: &Prim, ins: &[Aval], start: &[usize], limit: &[usize], strides: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let n = x.ndim();
    let valid = start.len() == n
        && limit.len() == n
        && strides.len() == n
        && (0..n).all(|i| start[i] <= limit[i] && limit[i] <= x.shape[i] && strides[i] > 0);
    if !valid {
        return Err(type_error(format!(
            "slice start_indices {} and limit_indices {} do not fit operand shape {}",
            shape_tuple(start),
            shape_tuple(limit),
            x.shape_tuple()
        )));
    }
    let shape: Vec<usize> = (0..n).map(|i| (limit[i] - start[i]).div_ceil(strides[i])).collect();
    Ok(vec![x.with_shape(&shape)])
}

/// `dynamic_slice(operand, *start_indices)`.
pub fn dynamic_slice(prim: &Prim, ins: &[Aval], sizes: &[usize]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if sizes.len() != x.ndim() || sizes.iter().zip(&x.shape).any(|(s, n)| s > n) {
        return Err(type_error(format!(
            "slice slice_sizes must be less than or equal to operand shape, got slice_sizes {} for operand shape {}.",
            shape_tuple(sizes),
            x.shape_tuple()
        )));
    }
    Ok(vec![x.with_shape(sizes)])
}

/// `dynamic_update_slice(operand, update, *start_indices)`: the operand's aval.
pub fn dynamic_update_slice(prim: &Prim, ins: &[Aval]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    let update = arg(prim, ins, 1)?;
    if update.ndim() != x.ndim() || update.shape.iter().zip(&x.shape).any(|(u, n)| u > n) {
        return Err(type_error(format!(
            "dynamic_update_slice update shape must be smaller than operand shape, got update shape {} for operand shape {}.",
            update.shape_tuple(),
            x.shape_tuple()
        )));
    }
    Ok(vec![x.clone()])
}

pub fn concatenate(prim: &Prim, ins: &[Aval], dimension: usize) -> RuleResult {
    let first = arg(prim, ins, 0)?;
    if dimension >= first.ndim() {
        return Err(axis_error(prim, &format!("dimension {dimension}"), first.ndim()));
    }
    let mut shape = first.shape.to_vec();
    shape[dimension] = 0;
    for a in ins {
        let same_rest = a.ndim() == first.ndim() && (0..a.ndim()).all(|i| i == dimension || a.shape[i] == first.shape[i]);
        if !same_rest {
            return Err(type_error(format!(
                "Cannot concatenate arrays with shapes that differ in dimensions other than the one being concatenated: \
                 concatenating along dimension {dimension} for shapes {}.",
                ins.iter().map(|a| a.shape_tuple()).collect::<Vec<_>>().join(", ")
            )));
        }
        shape[dimension] += a.shape[dimension];
    }
    let weak = ins.iter().all(|a| a.weak);
    Ok(vec![Aval::new(&shape, first.dtype).weak(weak)])
}

/// `pad(operand, padding_value)`: each axis `lo + n + (n - 1) * interior + hi` long.
pub fn pad(prim: &Prim, ins: &[Aval], config: &[(i64, i64, i64)]) -> RuleResult {
    let x = arg(prim, ins, 0)?;
    if config.len() != x.ndim() {
        return Err(type_error(format!(
            "length of padding_config must equal the number of axes of operand, got padding_config {config:?} for operand shape {}",
            x.shape_tuple()
        )));
    }
    let mut shape = Vec::with_capacity(config.len());
    for (&n, &(lo, hi, interior)) in x.shape.iter().zip(config) {
        let n = n as i64;
        let len = lo + hi + n + (n - 1).max(0) * interior;
        if interior < 0 || len < 0 {
            return Err(type_error(format!("Dimension size after padding is not at least 0, got {len} for padding config {config:?}")));
        }
        shape.push(len as usize);
    }
    Ok(vec![x.with_shape(&shape)])
}

pub fn iota(dtype: DType, shape: &[usize], dimension: usize) -> RuleResult {
    if dimension >= shape.len() {
        return Err(type_error(format!(
            "iota dimension must be between 0 and len(shape), got dimension={dimension} for shape {}",
            shape_tuple(shape)
        )));
    }
    Ok(vec![Aval::new(shape, dtype)])
}
