//! The derivative rules of the factorizations (`lu`, `qr`, `eigh`, `svd`, `triangular_solve`,
//! `expm`, `pinv`), as jax/_src/lax/linalg.py writes them, for [`super::derivatives`].

use std::rc::Rc;

use super::derivatives::*;
use crate::interp::Interp;
use crate::jax::ad::*;
use crate::jax::array::Array;
use crate::jax::aval::Aval;
use crate::jax::dtypes::DType;
use crate::jax::ir::{BinaryPrim, CmpPrim, EighInput, LinalgOp, Prim, UnaryPrim};

/// What the rules of `lu` (JAX's `_lu_jvp_rule`, for square matrices) need: the packed
/// factors `lu`, the masks of their triangles, and the row permutation as a matrix `P`
/// (`P a = L U`).
pub(super) struct LuFactors {
    lu: Rc<Array>,
    /// 1 strictly below the diagonal.
    strictly_lower: Rc<Array>,
    /// 1 on and above the diagonal.
    upper: Rc<Array>,
    l: Rc<Array>,
    u: Rc<Array>,
    permutation: Rc<Array>,
}

impl LuFactors {
    pub(super) fn new(interp: &mut Interp, a: &Rc<Array>, lu: &Rc<Array>) -> AdResult<LuFactors> {
        let nd = a.aval.ndim();
        let m = a.aval.shape[nd - 1];
        if a.aval.shape[nd - 2] != m {
            return Err(AdError::NoRule("lu of a matrix that is not square".into()));
        }
        let strictly_lower = diagonal_mask(interp, &lu.aval, true, 0.0)?;
        let with_diagonal = diagonal_mask(interp, &lu.aval, true, 1.0)?;
        let upper = mat_t(interp, &with_diagonal)?;
        let below = keep_where(interp, lu, &strictly_lower)?;
        let eye = diagonal_mask(interp, &lu.aval, false, 1.0)?;
        let l = binary(interp, BinaryPrim::Add, &below, &eye)?;
        let u = keep_where(interp, lu, &upper)?;
        // P[..., i, j] = (permutation[..., i] == j)
        let order = linalg(interp, LinalgOp::LuPermutation, std::slice::from_ref(a))?;
        let spread = spread_vector(interp, &order, &a.aval.shape, false)?;
        let columns = Prim::Iota { dtype: DType::I32, shape: a.aval.shape.to_vec(), dimension: nd - 1 };
        let columns = bind(interp, columns, &[])?;
        let same = compare(interp, CmpPrim::Eq, &spread, &columns)?;
        let permutation = mask_as(interp, &same, a.aval.dtype, false)?;
        Ok(LuFactors { lu: lu.clone(), strictly_lower, upper, l, u, permutation })
    }

    /// `L · tril(M, -1) + triu(M) · U` with `M = L⁻¹ P da U⁻¹`.
    pub(super) fn jvp(&self, interp: &mut Interp, ta: &Rc<Array>) -> AdResult<Rc<Array>> {
        let x = matmul(interp, &self.permutation, ta)?;
        let la = Triangle { lower: true, transpose_a: false, unit_diagonal: true }.solve(interp, &self.lu, &x)?;
        // la · U⁻¹ = (U⁻ᵀ · laᵀ)ᵀ
        let la_t = mat_t(interp, &la)?;
        let m_t = Triangle { lower: false, transpose_a: true, unit_diagonal: false }.solve(interp, &self.lu, &la_t)?;
        let middle = mat_t(interp, &m_t)?;
        let below = keep_where(interp, &middle, &self.strictly_lower)?;
        let above = keep_where(interp, &middle, &self.upper)?;
        let l_dot = matmul(interp, &self.l, &below)?;
        let u_dot = matmul(interp, &above, &self.u)?;
        binary(interp, BinaryPrim::Add, &l_dot, &u_dot)
    }

    /// The transpose of `jvp`: `Pᵀ L⁻ᵀ (tril(Lᵀ g, -1) + triu(g Uᵀ)) U⁻ᵀ`.
    pub(super) fn transpose(&self, interp: &mut Interp, g: &Rc<Array>) -> AdResult<Rc<Array>> {
        let l_t = mat_t(interp, &self.l)?;
        let from_l = matmul(interp, &l_t, g)?;
        let from_l = keep_where(interp, &from_l, &self.strictly_lower)?;
        let u_t = mat_t(interp, &self.u)?;
        let from_u = matmul(interp, g, &u_t)?;
        let from_u = keep_where(interp, &from_u, &self.upper)?;
        let middle = binary(interp, BinaryPrim::Add, &from_l, &from_u)?;
        // middle · U⁻ᵀ = (U⁻¹ · middleᵀ)ᵀ
        let middle_t = mat_t(interp, &middle)?;
        let solved_t = Triangle { lower: false, transpose_a: false, unit_diagonal: false }.solve(interp, &self.lu, &middle_t)?;
        let solved = mat_t(interp, &solved_t)?;
        let x = Triangle { lower: true, transpose_a: true, unit_diagonal: true }.solve(interp, &self.lu, &solved)?;
        let p_t = mat_t(interp, &self.permutation)?;
        matmul(interp, &p_t, &x)
    }
}

/// The Fréchet derivative of `expm` at `a` in the direction `e`: the upper right block of
/// `expm([[a, e], [0, a]])` (Van Loan's identity, which `jax.scipy.linalg.expm_frechet`'s
/// block method also uses). JAX differentiates its Padé approximation instead; the two agree
/// to the approximation's accuracy, a few ulp. Its transpose is the same at `aᵀ`. The block
/// is not capped at `max_squarings`, and is not upper triangular.
pub(super) fn expm_frechet(interp: &mut Interp, double: bool, a: &Rc<Array>, e: &Rc<Array>) -> AdResult<Rc<Array>> {
    let nd = a.aval.ndim();
    let n = a.aval.shape[nd - 1];
    let e = broadcast_to(interp, e, &a.aval.shape)?;
    let top = bind_strong(interp, Prim::Concatenate { dimension: nd - 1 }, &[a.clone(), e])?;
    let zero = zeros(interp, &a.aval)?;
    let bottom = bind_strong(interp, Prim::Concatenate { dimension: nd - 1 }, &[zero, a.clone()])?;
    let block = bind_strong(interp, Prim::Concatenate { dimension: nd - 2 }, &[top, bottom])?;
    let op = LinalgOp::Expm { double, upper_triangular: false, max_squarings: u32::MAX };
    let exp = linalg(interp, op, &[block])?;
    let mut start = vec![0; nd];
    start[nd - 1] = n;
    let mut limit = exp.aval.shape.to_vec();
    limit[nd - 2] = n;
    bind_strong(interp, Prim::Slice { start, limit, strides: vec![1; nd] }, &[exp])
}

/// The parameters of a `triangular_solve` equation.
#[derive(Clone, Copy)]
pub(super) struct Triangle {
    pub(super) lower: bool,
    pub(super) transpose_a: bool,
    pub(super) unit_diagonal: bool,
}

impl Triangle {
    pub(super) fn solve(self, interp: &mut Interp, a: &Rc<Array>, b: &Rc<Array>) -> AdResult<Rc<Array>> {
        let op = LinalgOp::TriangularSolve { lower: self.lower, transpose_a: self.transpose_a, unit_diagonal: self.unit_diagonal };
        linalg(interp, op, &[a.clone(), b.clone()])
    }

    /// `x` with every element outside the triangle the solve reads set to zero (the
    /// diagonal too when it is taken as ones): JAX's `tril`/`triu` of `a`'s tangent.
    pub(super) fn mask(self, interp: &mut Interp, x: &Rc<Array>) -> AdResult<Rc<Array>> {
        let lower = diagonal_mask(interp, &x.aval, true, if self.unit_diagonal { 0.0 } else { 1.0 })?;
        let mask = if self.lower { lower } else { mat_t(interp, &lower)? };
        keep_where(interp, x, &mask)
    }

    /// `op(m)`: `m`, or `mᵀ` when the solve transposes `a`.
    pub(super) fn apply(self, interp: &mut Interp, m: &Rc<Array>) -> AdResult<Rc<Array>> {
        if self.transpose_a {
            mat_t(interp, m)
        } else {
            Ok(m.clone())
        }
    }
}

/// JAX's `_triangular_solve_jvp_rule_a` and the solve's linearity in `b`:
/// `dx = op(a)⁻¹ (db - op(tri(da)) · x)`.
pub(super) fn triangular_solve_jvp(
    interp: &mut Interp,
    triangle: Triangle,
    a: &Rc<Array>,
    out: &Rc<Array>,
    ts: &[Option<Rc<Array>>],
) -> AdResult<Vec<Option<Rc<Array>>>> {
    let mut rhs = ts.get(1).cloned().flatten();
    if let Some(ta) = ts.first().cloned().flatten() {
        let da = triangle.mask(interp, &ta)?;
        let da = triangle.apply(interp, &da)?;
        let p = matmul(interp, &da, out)?;
        rhs = Some(match rhs {
            Some(r) => binary(interp, BinaryPrim::Sub, &r, &p)?,
            None => unary(interp, UnaryPrim::Neg, &p)?,
        });
    }
    let Some(rhs) = rhs else { return Ok(vec![None]) };
    Ok(vec![Some(triangle.solve(interp, a, &rhs)?)])
}

/// `ct_b = op(a)⁻ᵀ g`; `ct_a = tri(-ct_b · xᵀ)`, transposed when the solve transposes `a`
/// (JAX's `_triangular_solve_transpose_rule` and the transpose of the JVP in `a`).
pub(super) fn triangular_solve_transpose(
    interp: &mut Interp,
    triangle: Triangle,
    a: &Rc<Array>,
    out: &Rc<Array>,
    g: &Rc<Array>,
    active: &[bool],
) -> AdResult<Vec<Option<Rc<Array>>>> {
    let flipped = Triangle { transpose_a: !triangle.transpose_a, ..triangle };
    let ct_b = flipped.solve(interp, a, g)?;
    let mut cts = vec![None, None];
    if active.first().copied().unwrap_or(false) {
        let xt = mat_t(interp, out)?;
        let p = matmul(interp, &ct_b, &xt)?;
        let p = unary(interp, UnaryPrim::Neg, &p)?;
        let p = triangle.apply(interp, &p)?;
        cts[0] = Some(triangle.mask(interp, &p)?);
    }
    if active.get(1).copied().unwrap_or(false) {
        cts[1] = Some(ct_b);
    }
    Ok(cts)
}

/// `x` where `mask` (0 or 1, of `x`'s dtype) is 1, and +0 elsewhere: JAX's `tril`/`triu`,
/// a `select`, so a zeroed negative element is +0, not the -0 of a product.
pub(super) fn keep_where(interp: &mut Interp, x: &Rc<Array>, mask: &Rc<Array>) -> AdResult<Rc<Array>> {
    let pred = compare(interp, CmpPrim::Ne, mask, &konst(0.0, &mask.aval))?;
    let zero = zeros(interp, &x.aval)?;
    bind(interp, Prim::Select, &[pred, zero, x.clone()])
}

/// `v[..., k]` as the rows (`along_rows`: `v[..., None, :]`) or the columns
/// (`v[..., :, None]`) of `[..., r, c]`.
pub(super) fn spread_vector(interp: &mut Interp, v: &Rc<Array>, shape: &[usize], along_rows: bool) -> AdResult<Rc<Array>> {
    let nd = shape.len();
    let dims: Vec<usize> = (0..nd - 2).chain([if along_rows { nd - 1 } else { nd - 2 }]).collect();
    broadcast_in_dim(interp, v, shape, &dims)
}

/// The diagonal of the square matrices `x[..., k, k]`, as `[..., k]`.
pub(super) fn matrix_diagonal(interp: &mut Interp, x: &Rc<Array>) -> AdResult<Rc<Array>> {
    let eye = diagonal_mask(interp, &x.aval, false, 1.0)?;
    let p = binary(interp, BinaryPrim::Mul, x, &eye)?;
    reduce_sum(interp, &p, &[x.aval.ndim() - 2])
}

/// The factors of `eigh`, the thin `svd` and the reduced `qr` of `a`, as the rules need them.
pub(super) struct Factors {
    /// `eigh`'s eigenvectors, `svd`'s thin `U`, `qr`'s reduced `Q`.
    left: Rc<Array>,
    /// `eigh`'s eigenvalues, `svd`'s singular values (`[..., k]`), `qr`'s reduced `R`.
    middle: Rc<Array>,
    /// `svd`'s thin `V` (`Vhᵀ`); `eigh`'s eigenvectors again; unused for `qr`.
    right: Rc<Array>,
}

pub(super) fn factors(interp: &mut Interp, op: LinalgOp, a: &Rc<Array>) -> AdResult<Factors> {
    use LinalgOp as L;
    match op {
        L::EighValues { .. } | L::EighVectors { .. } => {
            // JAX's `eigh_jvp_rule` decomposes `symmetrize(a)`, whichever triangle the
            // primitive reads (its tangent is then `a_dot` as it is).
            let input = EighInput::Symmetrized;
            let v = linalg(interp, L::EighVectors { input }, std::slice::from_ref(a))?;
            let w = linalg(interp, L::EighValues { input }, std::slice::from_ref(a))?;
            Ok(Factors { left: v.clone(), middle: w, right: v })
        }
        L::SvdValues | L::SvdU { .. } | L::SvdVh { .. } => {
            let u = linalg(interp, L::SvdU { full: false }, std::slice::from_ref(a))?;
            let s = linalg(interp, L::SvdValues, std::slice::from_ref(a))?;
            let vh = linalg(interp, L::SvdVh { full: false }, std::slice::from_ref(a))?;
            let v = mat_t(interp, &vh)?;
            Ok(Factors { left: u, middle: s, right: v })
        }
        _ => {
            let q = linalg(interp, L::QrQ { full: false }, std::slice::from_ref(a))?;
            let r = linalg(interp, L::QrR { full: false }, std::slice::from_ref(a))?;
            Ok(Factors { left: q.clone(), middle: r, right: q })
        }
    }
}

/// `F[..., i, j] = 1 / (w_j - w_i)` off the diagonal and 0 on it, JAX's `Fmat` of
/// `eigh_jvp_rule` (infinite for a repeated eigenvalue, as in JAX).
pub(super) fn eigen_gaps(interp: &mut Interp, w: &Rc<Array>, like: &Aval) -> AdResult<Rc<Array>> {
    let rows = spread_vector(interp, w, &like.shape, true)?;
    let cols = spread_vector(interp, w, &like.shape, false)?;
    let eye = diagonal_mask(interp, like, false, 1.0)?;
    let d = binary(interp, BinaryPrim::Sub, &rows, &cols)?;
    let d = binary(interp, BinaryPrim::Add, &eye, &d)?;
    let f = binary(interp, BinaryPrim::Div, &konst(1.0, &d.aval), &d)?;
    binary(interp, BinaryPrim::Sub, &f, &eye)
}

/// `F[..., i, j] = 1 / (s_j² - s_i²)` off the diagonal and 0 on it, JAX's `F` of
/// `_svd_jvp_rule` (infinite for a repeated singular value, as in JAX).
pub(super) fn singular_gaps(interp: &mut Interp, s: &Rc<Array>, like: &Aval) -> AdResult<Rc<Array>> {
    let rows = spread_vector(interp, s, &like.shape, true)?;
    let cols = spread_vector(interp, s, &like.shape, false)?;
    let sum = binary(interp, BinaryPrim::Add, &rows, &cols)?;
    let diff = binary(interp, BinaryPrim::Sub, &rows, &cols)?;
    let d = binary(interp, BinaryPrim::Mul, &sum, &diff)?;
    let eye = diagonal_mask(interp, like, false, 1.0)?;
    let d = binary(interp, BinaryPrim::Add, &d, &eye)?;
    let f = binary(interp, BinaryPrim::Div, &konst(1.0, &d.aval), &d)?;
    binary(interp, BinaryPrim::Sub, &f, &eye)
}

/// JAX's `_pinv_jvp` (Golub and Pereyra): with `P = pinv(a)`,
/// `dP = -P·da·P + P·Pᵀ·daᵀ·(I - a·P) + (I - P·a)·daᵀ·Pᵀ·P`.
pub(super) fn pinv_jvp(interp: &mut Interp, a: &Rc<Array>, p: &Rc<Array>, ta: &Rc<Array>) -> AdResult<Rc<Array>> {
    let (complement_left, complement_right) = pinv_complements(interp, a, p)?;
    let pt = mat_t(interp, p)?;
    let tat = mat_t(interp, ta)?;
    let x = matmul(interp, p, ta)?;
    let first = matmul(interp, &x, p)?;
    let ppt = matmul(interp, p, &pt)?;
    let x = matmul(interp, &ppt, &tat)?;
    let second = matmul(interp, &x, &complement_left)?;
    let ptp = matmul(interp, &pt, p)?;
    let x = matmul(interp, &complement_right, &tat)?;
    let third = matmul(interp, &x, &ptp)?;
    let sum = binary(interp, BinaryPrim::Add, &second, &third)?;
    binary(interp, BinaryPrim::Sub, &sum, &first)
}

/// `I - a·P` (`m`×`m`) and `I - P·a` (`n`×`n`).
pub(super) fn pinv_complements(interp: &mut Interp, a: &Rc<Array>, p: &Rc<Array>) -> AdResult<(Rc<Array>, Rc<Array>)> {
    let ap = matmul(interp, a, p)?;
    let eye = diagonal_mask(interp, &ap.aval, false, 1.0)?;
    let left = binary(interp, BinaryPrim::Sub, &eye, &ap)?;
    let pa = matmul(interp, p, a)?;
    let eye = diagonal_mask(interp, &pa.aval, false, 1.0)?;
    let right = binary(interp, BinaryPrim::Sub, &eye, &pa)?;
    Ok((left, right))
}

/// The transpose of `pinv_jvp`'s map: `-Pᵀ·g·Pᵀ + (I - a·P)·gᵀ·P·Pᵀ + Pᵀ·P·gᵀ·(I - P·a)`.
pub(super) fn pinv_transpose(interp: &mut Interp, a: &Rc<Array>, p: &Rc<Array>, g: &Rc<Array>) -> AdResult<Rc<Array>> {
    let (complement_left, complement_right) = pinv_complements(interp, a, p)?;
    let pt = mat_t(interp, p)?;
    let gt = mat_t(interp, g)?;
    let x = matmul(interp, &pt, g)?;
    let first = matmul(interp, &x, &pt)?;
    let ppt = matmul(interp, p, &pt)?;
    let x = matmul(interp, &complement_left, &gt)?;
    let second = matmul(interp, &x, &ppt)?;
    let ptp = matmul(interp, &pt, p)?;
    let x = matmul(interp, &ptp, &gt)?;
    let third = matmul(interp, &x, &complement_right)?;
    let sum = binary(interp, BinaryPrim::Add, &second, &third)?;
    binary(interp, BinaryPrim::Sub, &sum, &first)
}

/// JAX's rules for the decompositions (jax/_src/lax/linalg.py): `eigh_jvp_rule` on the
/// symmetrised tangent (`jnp.linalg.eigh` symmetrises its input), `_svd_jvp_rule` for the
/// singular values and the thin `U` and `Vh` (`full_matrices=False`; real matrices, so its
/// `dUdV_diag` term is zero), and `qr_jvp_rule` for the reduced `qr` of a matrix with
/// `m >= n`. The full `U`/`Vh`, and `qr` of a wide matrix or in `mode="complete"`, where
/// JAX raises NotImplementedError, have no rule: their derivative stays unknown.
pub(super) fn decomposition_jvp(interp: &mut Interp, op: LinalgOp, a: &Rc<Array>, ta: &Rc<Array>) -> AdResult<Rc<Array>> {
    use LinalgOp as L;
    let nd = a.aval.ndim();
    let (m, n) = (a.aval.shape[nd - 2], a.aval.shape[nd - 1]);
    match op {
        L::EighValues { input } | L::EighVectors { input } => {
            let f = factors(interp, op, a)?;
            let sym = if input == EighInput::Symmetrized { symmetric_part(interp, ta)? } else { ta.clone() };
            let vt = mat_t(interp, &f.left)?;
            let p = matmul(interp, &vt, &sym)?;
            let s = matmul(interp, &p, &f.left)?;
            if matches!(op, L::EighValues { .. }) {
                return matrix_diagonal(interp, &s);
            }
            let gaps = eigen_gaps(interp, &f.middle, &s.aval)?;
            let p = binary(interp, BinaryPrim::Mul, &gaps, &s)?;
            matmul(interp, &f.left, &p)
        }
        L::SvdValues => {
            let f = factors(interp, op, a)?;
            let ut = mat_t(interp, &f.left)?;
            let p = matmul(interp, &ut, ta)?;
            let s = matmul(interp, &p, &f.right)?;
            matrix_diagonal(interp, &s)
        }
        L::SvdU { full: false } | L::SvdVh { full: false } => {
            let f = factors(interp, op, a)?;
            let (u, s, v) = (&f.left, &f.middle, &f.right);
            let ut = mat_t(interp, u)?;
            let p = matmul(interp, &ut, ta)?;
            let ds = matmul(interp, &p, v)?;
            let gaps = singular_gaps(interp, s, &ds.aval)?;
            let (s_row, s_col) = (spread_vector(interp, s, &ds.aval.shape, true)?, spread_vector(interp, s, &ds.aval.shape, false)?);
            // dU = U (F ∘ (dS·S + S·dSᵀ)) [+ (I - UUᵀ) dA V S⁻¹ when m > n]
            // dV = V (F ∘ (S·dS + dSᵀ·S)) [+ (I - VVᵀ) dAᵀ U S⁻¹ when n > m]; dVh = dVᵀ.
            let along_u = matches!(op, L::SvdU { .. });
            let scaled = binary(interp, BinaryPrim::Mul, &ds, if along_u { &s_row } else { &s_col })?;
            let scaled_t = mat_t(interp, &scaled)?;
            let sum = binary(interp, BinaryPrim::Add, &scaled, &scaled_t)?;
            let inner = binary(interp, BinaryPrim::Mul, &gaps, &sum)?;
            let (basis, other) = if along_u { (u, v) } else { (v, u) };
            let mut d = matmul(interp, basis, &inner)?;
            if (along_u && m > n) || (!along_u && n > m) {
                let da = if along_u { ta.clone() } else { mat_t(interp, ta)? };
                let dav = matmul(interp, &da, other)?;
                let bt = mat_t(interp, basis)?;
                let p = matmul(interp, &bt, &dav)?;
                let p = matmul(interp, basis, &p)?;
                let rest = binary(interp, BinaryPrim::Sub, &dav, &p)?;
                let s_rows = spread_vector(interp, s, &rest.aval.shape, true)?;
                let rest = binary(interp, BinaryPrim::Div, &rest, &s_rows)?;
                d = binary(interp, BinaryPrim::Add, &d, &rest)?;
            }
            if along_u {
                Ok(d)
            } else {
                mat_t(interp, &d)
            }
        }
        L::QrQ { full } | L::QrR { full } if m >= n && (!full || m == n) => {
            let f = factors(interp, op, a)?;
            let (q, r) = (&f.left, &f.middle);
            // Y = da · R⁻¹, from Rᵀ Yᵀ = daᵀ.
            let upper_t = Triangle { lower: false, transpose_a: true, unit_diagonal: false };
            let dat = mat_t(interp, ta)?;
            let yt = upper_t.solve(interp, r, &dat)?;
            let y = mat_t(interp, &yt)?;
            let qt = mat_t(interp, q)?;
            let z = matmul(interp, &qt, &y)?;
            let below = diagonal_mask(interp, &z.aval, true, 0.0)?;
            let lo = keep_where(interp, &z, &below)?;
            let lo_t = mat_t(interp, &lo)?;
            let skew = binary(interp, BinaryPrim::Sub, &lo, &lo_t)?;
            if matches!(op, L::QrQ { .. }) {
                let d = binary(interp, BinaryPrim::Sub, &skew, &z)?;
                let p = matmul(interp, q, &d)?;
                binary(interp, BinaryPrim::Add, &p, &y)
            } else {
                let d = binary(interp, BinaryPrim::Sub, &z, &skew)?;
                matmul(interp, &d, r)
            }
        }
        _ => Err(AdError::NoRule(Prim::Linalg(op).name())),
    }
}

/// The transposes of `decomposition_jvp`'s linear maps.
pub(super) fn decomposition_transpose(interp: &mut Interp, op: LinalgOp, a: &Rc<Array>, g: &Rc<Array>) -> AdResult<Rc<Array>> {
    use LinalgOp as L;
    let nd = a.aval.ndim();
    let (m, n) = (a.aval.shape[nd - 2], a.aval.shape[nd - 1]);
    match op {
        // sym(V · (F ∘ Vᵀg) · Vᵀ), sym(V · diag(g) · Vᵀ); without the sym for a triangle.
        L::EighValues { input } | L::EighVectors { input } => {
            let f = factors(interp, op, a)?;
            let vt = mat_t(interp, &f.left)?;
            let inner = if matches!(op, L::EighValues { .. }) {
                let gs = spread_vector(interp, g, &a.aval.shape, true)?;
                let eye = diagonal_mask(interp, &a.aval, false, 1.0)?;
                binary(interp, BinaryPrim::Mul, &gs, &eye)?
            } else {
                let p = matmul(interp, &vt, g)?;
                let gaps = eigen_gaps(interp, &f.middle, &p.aval)?;
                binary(interp, BinaryPrim::Mul, &gaps, &p)?
            };
            let p = matmul(interp, &f.left, &inner)?;
            let p = matmul(interp, &p, &vt)?;
            if input == EighInput::Symmetrized {
                return symmetric_part(interp, &p);
            }
            Ok(p)
        }
        // U · diag(g) · Vᵀ
        L::SvdValues => {
            let f = factors(interp, op, a)?;
            let gs = spread_vector(interp, g, &f.left.aval.shape, true)?;
            let p = binary(interp, BinaryPrim::Mul, &f.left, &gs)?;
            let vh = mat_t(interp, &f.right)?;
            matmul(interp, &p, &vh)
        }
        // With K = F ∘ (Bᵀ G) for the basis B (U, or V with G = gᵀ for Vh): U · M · Vᵀ,
        // M = (K + Kᵀ)·S for U and S·(K + Kᵀ) for V, plus the part of G outside B's span.
        L::SvdU { full: false } | L::SvdVh { full: false } => {
            let f = factors(interp, op, a)?;
            let (u, s, v) = (&f.left, &f.middle, &f.right);
            let along_u = matches!(op, L::SvdU { .. });
            let g = if along_u { g.clone() } else { mat_t(interp, g)? };
            let (basis, other) = if along_u { (u, v) } else { (v, u) };
            let bt = mat_t(interp, basis)?;
            let h = matmul(interp, &bt, &g)?;
            let gaps = singular_gaps(interp, s, &h.aval)?;
            let k = binary(interp, BinaryPrim::Mul, &gaps, &h)?;
            let kt = mat_t(interp, &k)?;
            let sum = binary(interp, BinaryPrim::Add, &k, &kt)?;
            let spread = spread_vector(interp, s, &sum.aval.shape, along_u)?;
            let mid = binary(interp, BinaryPrim::Mul, &sum, &spread)?;
            let vt = mat_t(interp, v)?;
            let p = matmul(interp, u, &mid)?;
            let mut ct = matmul(interp, &p, &vt)?;
            if (along_u && m > n) || (!along_u && n > m) {
                let p = matmul(interp, basis, &h)?;
                let rest = binary(interp, BinaryPrim::Sub, &g, &p)?;
                let s_rows = spread_vector(interp, s, &rest.aval.shape, true)?;
                let rest = binary(interp, BinaryPrim::Div, &rest, &s_rows)?;
                let ot = mat_t(interp, other)?;
                let extra = if along_u {
                    matmul(interp, &rest, &ot)?
                } else {
                    let p = matmul(interp, &rest, &ot)?;
                    mat_t(interp, &p)?
                };
                ct = binary(interp, BinaryPrim::Add, &ct, &extra)?;
            }
            Ok(ct)
        }
        L::QrQ { full } | L::QrR { full } if m >= n && (!full || m == n) => {
            let f = factors(interp, op, a)?;
            let (q, r) = (&f.left, &f.middle);
            let qt = mat_t(interp, q)?;
            // The cotangents of Z = Qᵀ Y, of the skew part and of Y, from dQ = Q (skew - Z) + Y
            // or dR = (Z - skew) R.
            let (g_z, g_skew, mut g_y) = if matches!(op, L::QrQ { .. }) {
                let p = matmul(interp, &qt, g)?;
                (unary(interp, UnaryPrim::Neg, &p)?, p, Some(g.clone()))
            } else {
                let rt = mat_t(interp, r)?;
                let p = matmul(interp, g, &rt)?;
                (p.clone(), unary(interp, UnaryPrim::Neg, &p)?, None)
            };
            // skew = lo - loᵀ, lo = tril(Z, -1)
            let g_skew_t = mat_t(interp, &g_skew)?;
            let g_lo = binary(interp, BinaryPrim::Sub, &g_skew, &g_skew_t)?;
            let below = diagonal_mask(interp, &g_lo.aval, true, 0.0)?;
            let g_lo = keep_where(interp, &g_lo, &below)?;
            let g_z = binary(interp, BinaryPrim::Add, &g_z, &g_lo)?;
            let p = matmul(interp, q, &g_z)?;
            let total = match g_y.take() {
                Some(gy) => binary(interp, BinaryPrim::Add, &gy, &p)?,
                None => p,
            };
            // da = g_Y · R⁻ᵀ, from R daᵀ = g_Yᵀ.
            let upper = Triangle { lower: false, transpose_a: false, unit_diagonal: false };
            let tt = mat_t(interp, &total)?;
            let x = upper.solve(interp, r, &tt)?;
            mat_t(interp, &x)
        }
        _ => Err(AdError::NoRule(Prim::Linalg(op).name())),
    }
}
