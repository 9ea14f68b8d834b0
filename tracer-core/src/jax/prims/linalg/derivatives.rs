//! The derivative rules of the dense linear-algebra primitives (`Prim::Linalg`): the rules of
//! jax/_src/numpy/linalg.py and jax/_src/lax/linalg.py, written with the same primitives (so
//! they are differentiable in turn, except through `cofactor`). The operands are stacks of
//! matrices `[..., m, m]`. The factorizations' rules are in [`super::factorizations`].

use std::rc::Rc;

use super::factorizations::*;
use crate::interp::Interp;
use crate::jax::ad::*;
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use crate::jax::ir::{BinaryPrim, CmpPrim, Eqn, LinalgOp, Prim, UnaryPrim};
use crate::jax::numpy::linalg_api;
use crate::jax::prims::{Jvping, Tangents, Transposing};
use crate::jax::surface::JaxFn;

/// Whether a `cholesky` equation symmetrises its input: `jnp.linalg.cholesky` does (its
/// derivative sees `(da + daᵀ) / 2`), `jax.scipy.linalg.cholesky` and `cho_factor` do not
/// (`symmetrize_input=False`), and their derivatives see the tangent as it is.
fn symmetrised(eqn: &Eqn) -> bool {
    !matches!(eqn.api, Some(JaxFn::ScipyCholesky | JaxFn::ScipyChoFactor))
}

pub(super) fn linalg(interp: &mut Interp, op: LinalgOp, ins: &[Rc<Array>]) -> AdResult<Rc<Array>> {
    bind(interp, Prim::Linalg(op), ins)
}

/// `l⁻¹ b`, or `l⁻ᵀ b` when `transpose`, for a lower-triangular `l` (a `triangular_solve`).
pub(super) fn lower_solve(interp: &mut Interp, l: &Rc<Array>, b: &Rc<Array>, transpose: bool) -> AdResult<Rc<Array>> {
    let op = LinalgOp::TriangularSolve { lower: true, transpose_a: transpose, unit_diagonal: false };
    linalg(interp, op, &[l.clone(), b.clone()])
}

/// `x` with its last two axes swapped (`x.mT`).
pub(super) fn mat_t(interp: &mut Interp, x: &Rc<Array>) -> AdResult<Rc<Array>> {
    let nd = x.aval.ndim();
    if nd < 2 {
        return Err(AdError::NoRule("a matrix of rank below 2".into()));
    }
    let mut perm: Vec<usize> = (0..nd).collect();
    perm.swap(nd - 1, nd - 2);
    bind(interp, Prim::Transpose { permutation: perm }, std::slice::from_ref(x))
}

/// The product of `x[..., m, k]` and `y[..., k, n]` with the same batch axes.
pub(super) fn matmul(interp: &mut Interp, x: &Rc<Array>, y: &Rc<Array>) -> AdResult<Rc<Array>> {
    let nd = x.aval.ndim();
    if nd < 2 || y.aval.ndim() != nd || x.aval.shape[..nd - 2] != y.aval.shape[..nd - 2] {
        return Err(AdError::NoRule("a product of matrices with different batch axes".into()));
    }
    let batch: Vec<usize> = (0..nd - 2).collect();
    let prim = Prim::DotGeneral { lhs_contract: vec![nd - 1], rhs_contract: vec![nd - 2], lhs_batch: batch.clone(), rhs_batch: batch };
    bind(interp, prim, &[x.clone(), y.clone()])
}

/// `[m, m]` of `dtype` broadcast to `like`'s shape: 1 below the diagonal when `lower`, and
/// `diagonal` on it (JAX's `eye` for a trace, and `phi`'s mask in the Cholesky rule).
pub(super) fn diagonal_mask(interp: &mut Interp, like: &Aval, lower: bool, diagonal: f64) -> AdResult<Rc<Array>> {
    let nd = like.ndim();
    let m = like.shape[nd - 1];
    let rows = bind(interp, Prim::Iota { dtype: DType::I32, shape: vec![m, m], dimension: 0 }, &[])?;
    let cols = bind(interp, Prim::Iota { dtype: DType::I32, shape: vec![m, m], dimension: 1 }, &[])?;
    let on = compare(interp, CmpPrim::Eq, &rows, &cols)?;
    let mut mask = mask_as(interp, &on, like.dtype, false)?;
    if diagonal != 1.0 {
        mask = binary(interp, BinaryPrim::Mul, &mask, &konst(diagonal, &mask.aval))?;
    }
    if lower {
        let below = compare(interp, CmpPrim::Gt, &rows, &cols)?;
        let below = mask_as(interp, &below, like.dtype, false)?;
        mask = binary(interp, BinaryPrim::Add, &mask, &below)?;
    }
    broadcast_to(interp, &mask, &like.shape)
}

/// `g[...]` broadcast over the last two axes of `like` (a cotangent of `det`/`slogdet`).
pub(super) fn spread_over_matrices(interp: &mut Interp, g: &Rc<Array>, like: &Aval) -> AdResult<Rc<Array>> {
    let dims: Vec<usize> = (0..g.aval.ndim()).collect();
    broadcast_in_dim(interp, g, &like.shape, &dims)
}

/// The matrix operand of a linear-algebra equation (the kernels need at least two axes).
pub(super) fn square_operand(op: LinalgOp, ins: &[Rc<Array>]) -> AdResult<Rc<Array>> {
    match ins.first() {
        Some(a) if a.aval.ndim() >= 2 => Ok(a.clone()),
        _ => Err(AdError::NoRule(format!("{} of a vector", Prim::Linalg(op).name()))),
    }
}

/// `(x + x.mT) / 2`
pub(super) fn symmetric_part(interp: &mut Interp, x: &Rc<Array>) -> AdResult<Rc<Array>> {
    let xt = mat_t(interp, x)?;
    let sum = binary(interp, BinaryPrim::Add, x, &xt)?;
    binary(interp, BinaryPrim::Mul, &sum, &konst(0.5, &sum.aval))
}

pub(super) fn sum_matrices(interp: &mut Interp, x: &Rc<Array>) -> AdResult<Rc<Array>> {
    let nd = x.aval.ndim();
    reduce_sum(interp, x, &[nd - 2, nd - 1])
}

/// JAX has no derivative for `geqrf` (`jnp.linalg.qr(a, mode="raw")`) and raises.
pub(super) fn no_geqrf_rule(interp: &Interp, op: LinalgOp) -> AdResult<()> {
    if let LinalgOp::Geqrf | LinalgOp::GeqrfTaus = op {
        return no_rule_in_jax(interp, &Prim::Linalg(op));
    }
    Ok(())
}

/// The JVP rule of the linear-algebra primitive `op` (JAX's rules in jax/_src/lax/linalg.py).
pub(crate) fn linalg_jvp(interp: &mut Interp, op: LinalgOp, j: Jvping) -> Tangents {
    use LinalgOp as L;
    let Jvping { eqn, ins, out, ts } = j;
    let symmetrise = symmetrised(eqn);
    no_geqrf_rule(interp, op)?;
    let a = &square_operand(op, ins)?;
    match op {
        L::TriangularSolve { lower, transpose_a, unit_diagonal } => {
            return triangular_solve_jvp(interp, Triangle { lower, transpose_a, unit_diagonal }, a, out, ts);
        }
        L::Lu => {
            let Some(ta) = ts.first().cloned().flatten() else { return Ok(vec![None]) };
            let lu = LuFactors::new(interp, a, out)?;
            return lu.jvp(interp, &ta).map(|t| vec![Some(t)]);
        }
        L::LuPivots | L::LuPermutation | L::PivotsToPermutation { .. } => return Ok(vec![None]),
        L::Expm { double, .. } => {
            let Some(ta) = ts.first().cloned().flatten() else { return Ok(vec![None]) };
            return expm_frechet(interp, double, a, &ta).map(|t| vec![Some(t)]);
        }
        L::EighValues { .. }
        | L::EighVectors { .. }
        | L::SvdValues
        | L::SvdU { .. }
        | L::SvdVh { .. }
        | L::QrQ { .. }
        | L::QrR { .. }
        | L::Pinv { .. } => {
            let Some(ta) = ts.first().cloned().flatten() else { return Ok(vec![None]) };
            if let L::Pinv { .. } = op {
                return pinv_jvp(interp, a, out, &ta).map(|t| vec![Some(t)]);
            }
            return decomposition_jvp(interp, op, a, &ta).map(|t| vec![Some(t)]);
        }
        _ => {}
    }
    let t = match op {
        // JAX's `custom_linear_solve` rule: dx = solve(db - op(da) · x), op(da) being daᵀ
        // for the transposed solve, with the same factors (a `custom_linear_solve` again, so
        // its own derivative in `a` follows).
        L::LinearSolve { transpose } => {
            let (Some(lu), Some(permutation)) = (ins.get(1), ins.get(2)) else {
                return Err(AdError::NoRule("custom_linear_solve without its factors".into()));
            };
            let mut rhs = ts.get(3).cloned().flatten();
            if let Some(ta) = &ts[0] {
                let ta = if transpose { mat_t(interp, ta)? } else { ta.clone() };
                let p = matmul(interp, &ta, out)?;
                rhs = Some(match rhs {
                    Some(r) => binary(interp, BinaryPrim::Sub, &r, &p)?,
                    None => unary(interp, UnaryPrim::Neg, &p)?,
                });
            }
            let Some(rhs) = rhs else { return Ok(vec![None]) };
            linalg_api::solve_with_factors(interp, a, lu, permutation, &rhs, transpose)?
        }
        // The formula's derivative, bound before it, is its own.
        L::DetFused { .. } => return Ok(vec![ts.get(1).cloned().flatten()]),
        L::CofactorJvp => {
            if ts[0].is_some() {
                return Err(AdError::NoRule("cofactor_jvp with respect to the matrix".into()));
            }
            let Some(t) = ts.get(1).cloned().flatten() else { return Ok(vec![None]) };
            linalg(interp, L::CofactorJvp, &[a.clone(), t])?
        }
        L::SlogdetSign => return Ok(vec![None]),
        _ => {
            let Some(ta) = &ts[0] else { return Ok(vec![None]) };
            match op {
                // The cofactors' derivative (the Hessian of `det` applied to `da`).
                L::Cofactor => linalg(interp, L::CofactorJvp, &[a.clone(), ta.clone()])?,
                // JAX's `_det_jvp`: trace(adj(a) · da), the cofactors times the tangent.
                L::Det => {
                    let cof = linalg(interp, L::Cofactor, std::slice::from_ref(a))?;
                    let p = binary(interp, BinaryPrim::Mul, &cof, ta)?;
                    sum_matrices(interp, &p)?
                }
                // JAX's `_slogdet_jvp`: trace(solve(a, da)).
                L::SlogdetLogAbs => {
                    let s = linalg_api::solve_system(interp, a, ta)?;
                    let eye = diagonal_mask(interp, &a.aval, false, 1.0)?;
                    let p = binary(interp, BinaryPrim::Mul, &s, &eye)?;
                    sum_matrices(interp, &p)?
                }
                // JAX's `_cholesky_jvp_rule` on the symmetrised tangent: L · phi(L⁻¹ σ L⁻ᵀ),
                // `phi` keeping the lower triangle with the diagonal halved.
                L::Cholesky => {
                    let sym = if symmetrise { symmetric_part(interp, ta)? } else { ta.clone() };
                    let y = lower_solve(interp, out, &sym, false)?;
                    let yt = mat_t(interp, &y)?;
                    let x = lower_solve(interp, out, &yt, false)?;
                    let phi = diagonal_mask(interp, &out.aval, true, 0.5)?;
                    let p = binary(interp, BinaryPrim::Mul, &x, &phi)?;
                    matmul(interp, out, &p)?
                }
                _ => return Err(AdError::NoRule(Prim::Linalg(op).name())),
            }
        }
    };
    Ok(vec![Some(t)])
}

/// The transposes of the linearised rules above (JAX derives them by transposing the JVP).
pub(crate) fn linalg_transpose(interp: &mut Interp, op: LinalgOp, t: Transposing) -> Tangents {
    use LinalgOp as L;
    let Transposing { eqn, ins, out, g, active } = t;
    let symmetrise = symmetrised(eqn);
    no_geqrf_rule(interp, op)?;
    let a = &square_operand(op, ins)?;
    let mut cts: Vec<Option<Rc<Array>>> = vec![None; ins.len()];
    match op {
        L::TriangularSolve { lower, transpose_a, unit_diagonal } => {
            return triangular_solve_transpose(interp, Triangle { lower, transpose_a, unit_diagonal }, a, out, g, active);
        }
        L::Lu => {
            if active[0] {
                let lu = LuFactors::new(interp, a, out)?;
                cts[0] = Some(lu.transpose(interp, g)?);
            }
            return Ok(cts);
        }
        L::LuPivots | L::LuPermutation | L::PivotsToPermutation { .. } => return Ok(cts),
        L::Expm { double, .. } => {
            if active[0] {
                let at = mat_t(interp, a)?;
                cts[0] = Some(expm_frechet(interp, double, &at, g)?);
            }
            return Ok(cts);
        }
        L::Pinv { .. } => {
            if active[0] {
                cts[0] = Some(pinv_transpose(interp, a, out, g)?);
            }
            return Ok(cts);
        }
        L::EighValues { .. } | L::EighVectors { .. } | L::SvdValues | L::SvdU { .. } | L::SvdVh { .. } | L::QrQ { .. } | L::QrR { .. } => {
            if active[0] {
                cts[0] = Some(decomposition_transpose(interp, op, a, g)?);
            }
            return Ok(cts);
        }
        _ => {}
    }
    let ct_a = match op {
        // ct_b = op(a)⁻ᵀ g (the other solve with the same factors); ct_a = -ct_b · xᵀ, or
        // -x · ct_bᵀ for the transposed solve.
        L::LinearSolve { transpose } => {
            let (Some(lu), Some(permutation)) = (ins.get(1), ins.get(2)) else {
                return Err(AdError::NoRule("custom_linear_solve without its factors".into()));
            };
            let ct_b = linalg_api::solve_with_factors(interp, a, lu, permutation, g, !transpose)?;
            if active.get(3).copied().unwrap_or(false) {
                cts[3] = Some(ct_b.clone());
            }
            if !active[0] {
                return Ok(cts);
            }
            let p = if transpose {
                let ct_bt = mat_t(interp, &ct_b)?;
                matmul(interp, out, &ct_bt)?
            } else {
                let xt = mat_t(interp, out)?;
                matmul(interp, &ct_b, &xt)?
            };
            unary(interp, UnaryPrim::Neg, &p)?
        }
        L::Cofactor => linalg(interp, L::CofactorJvp, &[a.clone(), g.clone()])?,
        L::DetFused { .. } => {
            if active.get(1).copied().unwrap_or(false) {
                cts[1] = Some(g.clone());
            }
            return Ok(cts);
        }
        L::CofactorJvp => {
            if active[0] {
                return Err(AdError::NoRule("cofactor_jvp with respect to the matrix".into()));
            }
            if active.get(1).copied().unwrap_or(false) {
                cts[1] = Some(linalg(interp, L::CofactorJvp, &[a.clone(), g.clone()])?);
            }
            return Ok(cts);
        }
        L::SlogdetSign => return Ok(cts),
        L::Det => {
            let cof = linalg(interp, L::Cofactor, std::slice::from_ref(a))?;
            let gs = spread_over_matrices(interp, g, &a.aval)?;
            binary(interp, BinaryPrim::Mul, &gs, &cof)?
        }
        L::SlogdetLogAbs => {
            let inv = linalg_api::inv(interp, a)?;
            let inv_t = mat_t(interp, &inv)?;
            let gs = spread_over_matrices(interp, g, &a.aval)?;
            binary(interp, BinaryPrim::Mul, &gs, &inv_t)?
        }
        // sym(L⁻ᵀ · phi(Lᵀ g) · L⁻¹)
        L::Cholesky => {
            let lt = mat_t(interp, out)?;
            let p = matmul(interp, &lt, g)?;
            let phi = diagonal_mask(interp, &out.aval, true, 0.5)?;
            let q = binary(interp, BinaryPrim::Mul, &p, &phi)?;
            let qt = mat_t(interp, &q)?;
            let w = lower_solve(interp, out, &qt, true)?;
            let wt = mat_t(interp, &w)?;
            let z = lower_solve(interp, out, &wt, true)?;
            if symmetrise {
                symmetric_part(interp, &z)?
            } else {
                z
            }
        }
        _ => return Err(AdError::NoRule(Prim::Linalg(op).name())),
    };
    if active[0] {
        cts[0] = Some(ct_a);
    }
    Ok(cts)
}
