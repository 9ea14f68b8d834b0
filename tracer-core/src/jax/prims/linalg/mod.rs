//! The dense linear-algebra primitives ([`LinalgOp`]), each on the last two axes of its first
//! operand, batched over the leading ones: their abstract evaluation here, their CPU kernels
//! ([`kernels`], LAPACK's routines step for step) and their derivative rules
//! ([`derivatives`], with the factorizations' in [`factorizations`]).

pub mod batching;
pub mod derivatives;
pub mod factorizations;
pub mod kernels;

use smallvec::smallvec;

use super::{arg, type_error, RuleResult};
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use crate::jax::ir::{LinalgOp, Prim};

/// The batch shape and the matrix dimensions `(m, n)` of `a[..., m, n]`.
fn matrix<'a>(prim: &Prim, a: &'a Aval) -> Result<(&'a [usize], usize, usize), super::RuleError> {
    match a.shape.len().checked_sub(2) {
        Some(b) => Ok((&a.shape[..b], a.shape[b], a.shape[b + 1])),
        None => Err(type_error(format!("{} requires an operand of rank at least 2, got {}", prim.name(), a.long()))),
    }
}

fn square<'a>(prim: &Prim, a: &'a Aval) -> Result<(&'a [usize], usize), super::RuleError> {
    let (batch, m, n) = matrix(prim, a)?;
    if m != n {
        return Err(type_error(format!("{} requires a square matrix, got {}", prim.name(), a.long())));
    }
    Ok((batch, m))
}

fn with(batch: &[usize], core: &[usize]) -> Vec<usize> {
    batch.iter().chain(core).copied().collect()
}

pub fn abstract_eval(prim: &Prim, op: LinalgOp, ins: &[&Aval]) -> RuleResult {
    let a = arg(prim, ins, 0)?;
    let real = a.dtype.real_dtype();
    let out = match op {
        // The value the caller computed is passed on (its last operand).
        LinalgOp::LinearSolve { .. } => arg(prim, ins, 4)?.clone().weak(false),
        LinalgOp::Det | LinalgOp::DetFused { .. } | LinalgOp::SlogdetSign | LinalgOp::SlogdetLogAbs => {
            square(prim, a)?;
            arg(prim, ins, 1)?.clone()
        }
        LinalgOp::Cholesky | LinalgOp::Expm { .. } | LinalgOp::Cofactor | LinalgOp::CofactorJvp => {
            square(prim, a)?;
            a.with_dtype(a.dtype)
        }
        LinalgOp::TriangularSolve { .. } => {
            let (_, m) = square(prim, a)?;
            let b = arg(prim, ins, 1)?;
            if b.ndim() != a.ndim() || b.shape.get(b.ndim() - 2) != Some(&m) {
                return Err(type_error(format!("triangular_solve got a of shape {} and b of shape {}", a.shape_tuple(), b.shape_tuple())));
            }
            b.clone()
        }
        LinalgOp::EighValues { .. } => {
            let (batch, m) = square(prim, a)?;
            Aval::new(&with(batch, &[m]), real)
        }
        LinalgOp::EighVectors { .. } => {
            square(prim, a)?;
            a.with_dtype(a.dtype)
        }
        LinalgOp::SvdValues => {
            let (batch, m, n) = matrix(prim, a)?;
            Aval::new(&with(batch, &[m.min(n)]), real)
        }
        LinalgOp::SvdU { full } | LinalgOp::QrQ { full } => {
            let (batch, m, n) = matrix(prim, a)?;
            Aval::new(&with(batch, &[m, if full { m } else { m.min(n) }]), a.dtype)
        }
        LinalgOp::SvdVh { full } => {
            let (batch, m, n) = matrix(prim, a)?;
            Aval::new(&with(batch, &[if full { n } else { m.min(n) }, n]), a.dtype)
        }
        LinalgOp::QrR { full } => {
            let (batch, m, n) = matrix(prim, a)?;
            Aval::new(&with(batch, &[if full { m } else { m.min(n) }, n]), a.dtype)
        }
        LinalgOp::Geqrf | LinalgOp::Lu => {
            matrix(prim, a)?;
            a.clone()
        }
        LinalgOp::GeqrfTaus => {
            let (batch, m, n) = matrix(prim, a)?;
            Aval::new(&with(batch, &[m.min(n)]), a.dtype)
        }
        LinalgOp::Pinv { .. } => {
            let (batch, m, n) = matrix(prim, a)?;
            Aval::new(&with(batch, &[n, m]), a.dtype)
        }
        LinalgOp::LuPivots => {
            let (batch, m, n) = matrix(prim, a)?;
            Aval::new(&with(batch, &[m.min(n)]), DType::I32)
        }
        LinalgOp::LuPermutation => {
            let (batch, m, _) = matrix(prim, a)?;
            Aval::new(&with(batch, &[m]), DType::I32)
        }
        LinalgOp::PivotsToPermutation { size } => {
            let Some((_, batch)) = a.shape.split_last() else {
                return Err(type_error("Argument to lu_pivots_to_permutation must have rank >= 1, got ()"));
            };
            Aval::new(&with(batch, &[size]), DType::I32)
        }
    };
    Ok(smallvec![out])
}
