//! CPU kernels of the dense linear-algebra primitives (`Prim::Linalg`: `jnp.linalg.solve`,
//! `inv`, `cholesky`, `det`, `slogdet`), batched over the leading axes. They follow the
//! LAPACK routines JAX calls on CPU (`getrf` with partial pivoting, `getrs`'s triangular
//! solves, `potrf`) step for step where that decides a value, so singular and indefinite
//! inputs give JAX's infinities and NaNs rather than an error (docs/evaluator.md).

use ndarray::{ArrayD, Axis, IxDyn};

use super::array::NdData;
use super::ir::LinalgOp;

/// The value of `op` on `ins` (already converted to the float dtype), in f64; the caller
/// rounds it to the output dtype. `None` when the shapes do not fit, which the jax.numpy
/// layer has ruled out.
pub fn kernel(op: LinalgOp, ins: &[std::rc::Rc<NdData>], out_shape: &[usize]) -> Option<NdData> {
    let a = ins.first()?;
    let nd = a.ndim();
    if nd < 2 || a.shape()[nd - 1] != a.shape()[nd - 2] {
        return None;
    }
    let m = a.shape()[nd - 1];
    let values: Vec<f64> = match op {
        LinalgOp::Solve => {
            let b = ins.get(1)?;
            if out_shape.len() < 2 || b.ndim() < 2 {
                return None;
            }
            let n = out_shape[out_shape.len() - 1];
            let batch = &out_shape[..out_shape.len() - 2];
            let a = a.broadcast(IxDyn(&[batch, &[m, m]].concat()))?;
            let b = b.broadcast(IxDyn(&[batch, &[m, n]].concat()))?;
            a.matrices()
                .zip(b.matrices())
                .flat_map(|(mut lu, mut x)| {
                    let pivots = lu_factor(&mut lu, m);
                    lu_solve(&lu, &pivots, &mut x, m, n);
                    x
                })
                .collect()
        }
        LinalgOp::Inv => a
            .view()
            .matrices()
            .flat_map(|mut lu| {
                let pivots = lu_factor(&mut lu, m);
                let mut x: Vec<f64> = (0..m * m).map(|i| f64::from(u8::from(i / m == i % m))).collect();
                lu_solve(&lu, &pivots, &mut x, m, m);
                x
            })
            .collect(),
        LinalgOp::Cholesky => a.view().matrices().flat_map(|a| cholesky(&a, m)).collect(),
        LinalgOp::Cofactor => a.view().matrices().flat_map(|a| cofactors(&a, m)).collect(),
        LinalgOp::Det | LinalgOp::SlogdetSign | LinalgOp::SlogdetLogAbs => a
            .view()
            .matrices()
            .map(|mut lu| {
                let pivots = lu_factor(&mut lu, m);
                determinant(op, &lu, &pivots, m)
            })
            .collect(),
    };
    ArrayD::from_shape_vec(IxDyn(out_shape), values).ok()
}

/// The trailing matrices of an array, each copied out in row-major order, in batch order.
trait Matrices {
    fn matrices(&self) -> std::vec::IntoIter<Vec<f64>>;
}

impl Matrices for ndarray::ArrayViewD<'_, f64> {
    fn matrices(&self) -> std::vec::IntoIter<Vec<f64>> {
        let nd = self.ndim();
        let batch: usize = self.shape()[..nd - 2].iter().product();
        let (r, c) = (self.shape()[nd - 2], self.shape()[nd - 1]);
        let matrices: Vec<Vec<f64>> = match self.to_shape(IxDyn(&[batch, r, c])) {
            Ok(f) => f.axis_iter(Axis(0)).map(|m| m.iter().copied().collect()).collect(),
            Err(_) => Vec::new(),
        };
        matrices.into_iter()
    }
}

/// LU factorisation with partial pivoting in place (`m`×`m`, row-major), as LAPACK's
/// `getrf`: in each column the first row of largest magnitude becomes the pivot; a zero
/// pivot leaves its column unscaled (no error, as JAX gives none). Returns the row swapped
/// with each row, in order.
fn lu_factor(a: &mut [f64], m: usize) -> Vec<usize> {
    let mut pivots = Vec::with_capacity(m);
    for j in 0..m {
        let mut p = j;
        for i in j + 1..m {
            if a[i * m + j].abs() > a[p * m + j].abs() {
                p = i;
            }
        }
        pivots.push(p);
        if p != j {
            for k in 0..m {
                a.swap(p * m + k, j * m + k);
            }
        }
        let pivot = a[j * m + j];
        if pivot != 0.0 {
            for i in j + 1..m {
                a[i * m + j] /= pivot;
            }
        }
        for i in j + 1..m {
            let l = a[i * m + j];
            for k in j + 1..m {
                a[i * m + k] -= l * a[j * m + k];
            }
        }
    }
    pivots
}

/// Solves `A X = B` in place for `B` (`m`×`n`, row-major) from `A`'s LU factors, as LAPACK's
/// `getrs`: the row swaps, then `trsm` with the unit lower and the upper triangle, column by
/// column, skipping zero entries as `trsm` does (so a zero pivot gives `inf`/`nan` only where
/// LAPACK's does).
fn lu_solve(lu: &[f64], pivots: &[usize], b: &mut [f64], m: usize, n: usize) {
    for (j, &p) in pivots.iter().enumerate() {
        if p != j {
            for c in 0..n {
                b.swap(p * n + c, j * n + c);
            }
        }
    }
    for c in 0..n {
        for k in 0..m {
            let bk = b[k * n + c];
            if bk != 0.0 {
                for i in k + 1..m {
                    b[i * n + c] -= bk * lu[i * m + k];
                }
            }
        }
        for k in (0..m).rev() {
            if b[k * n + c] != 0.0 {
                b[k * n + c] /= lu[k * m + k];
                let bk = b[k * n + c];
                for i in 0..k {
                    b[i * n + c] -= bk * lu[i * m + k];
                }
            }
        }
    }
}

/// `det`, or one half of `slogdet`, from the LU factors: the product of the pivots with the
/// sign of the row permutation, as `jnp.linalg.det` computes it; a zero pivot gives a
/// determinant of 0 (sign 0, log of the magnitude -inf).
fn determinant(op: LinalgOp, lu: &[f64], pivots: &[usize], m: usize) -> f64 {
    let swaps = pivots.iter().enumerate().filter(|(j, &p)| *j != p).count();
    let diagonal = (0..m).map(|j| lu[j * m + j]);
    let parity = if swaps % 2 == 0 { 1.0 } else { -1.0 };
    let singular = (0..m).any(|j| lu[j * m + j] == 0.0);
    match op {
        LinalgOp::Det if singular => 0.0,
        LinalgOp::Det => parity * diagonal.product::<f64>(),
        LinalgOp::SlogdetSign if singular => 0.0,
        LinalgOp::SlogdetSign => parity * diagonal.map(f64::signum).product::<f64>(),
        LinalgOp::SlogdetLogAbs if singular => f64::NEG_INFINITY,
        _ => diagonal.map(|d| d.abs().ln()).sum(),
    }
}

/// The cofactor matrix of `a` (`m`×`m`, row-major): `C[i][j] = (-1)^(i+j) · det(a without
/// row i and column j)`, the derivative of `det(a)` with respect to `a[i][j]`. It is
/// `det(a) · inv(a)ᵀ` when `a` is invertible, computed so; a singular `a` takes each minor's
/// determinant instead, so a matrix of rank `m - 1` gets its nonzero cofactors and one of
/// lower rank zeros, as JAX's `_cofactor_solve` gives them (no NaN from `0 · inf`).
fn cofactors(a: &[f64], m: usize) -> Vec<f64> {
    if m == 1 {
        return vec![1.0];
    }
    let mut lu = a.to_vec();
    let pivots = lu_factor(&mut lu, m);
    let det = determinant(LinalgOp::Det, &lu, &pivots, m);
    if det != 0.0 && det.is_finite() {
        let mut inv: Vec<f64> = (0..m * m).map(|i| f64::from(u8::from(i / m == i % m))).collect();
        lu_solve(&lu, &pivots, &mut inv, m, m);
        return (0..m * m).map(|k| det * inv[(k % m) * m + k / m]).collect();
    }
    let n = m - 1;
    let mut out = Vec::with_capacity(m * m);
    for i in 0..m {
        for j in 0..m {
            let mut minor: Vec<f64> =
                (0..m).filter(|&r| r != i).flat_map(|r| (0..m).filter(move |&c| c != j).map(move |c| a[r * m + c])).collect();
            let pivots = lu_factor(&mut minor, n);
            let sign = if (i + j) % 2 == 0 { 1.0 } else { -1.0 };
            // `+ 0.0`: a zero cofactor is +0, as JAX gives it.
            out.push(sign * determinant(LinalgOp::Det, &minor, &pivots, n) + 0.0);
        }
    }
    out
}

/// The lower Cholesky factor of the symmetrised `a` (`(a + aᵀ) / 2`, as `jnp.linalg.cholesky`
/// symmetrises its input), by LAPACK's `potrf` recurrence. A matrix that is not positive
/// definite gives NaN in the whole lower triangle and zeros above it, as JAX does.
fn cholesky(a: &[f64], m: usize) -> Vec<f64> {
    let mut l = vec![0.0; m * m];
    for j in 0..m {
        let mut d = a[j * m + j];
        for k in 0..j {
            d -= l[j * m + k] * l[j * m + k];
        }
        if d.is_nan() || d <= 0.0 {
            for i in 0..m {
                for k in 0..=i {
                    l[i * m + k] = f64::NAN;
                }
            }
            return l;
        }
        let djj = d.sqrt();
        l[j * m + j] = djj;
        for i in j + 1..m {
            let mut s = 0.5 * (a[i * m + j] + a[j * m + i]);
            for k in 0..j {
                s -= l[i * m + k] * l[j * m + k];
            }
            l[i * m + j] = s / djj;
        }
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    fn matrix(shape: &[usize], values: &[f64]) -> Rc<NdData> {
        Rc::new(ArrayD::from_shape_vec(IxDyn(shape), values.to_vec()).expect("shape"))
    }

    // Expected values are what JAX 0.10.2 prints for the same inputs (float64).
    #[test]
    fn singular_inputs_give_jaxs_infinities() {
        let zero = matrix(&[2, 2], &[0.0; 4]);
        let solved = kernel(LinalgOp::Solve, &[zero, matrix(&[2, 1], &[1.0, 1.0])], &[2, 1]).expect("solve");
        assert!(solved[[0, 0]].is_nan() && solved[[1, 0]] == f64::INFINITY, "{solved}");
        let inv = kernel(LinalgOp::Inv, &[matrix(&[2, 2], &[1.0, 2.0, 2.0, 4.0])], &[2, 2]).expect("inv");
        assert_eq!(inv.iter().copied().collect::<Vec<_>>(), [f64::NEG_INFINITY, f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY]);
        let det = kernel(LinalgOp::Det, &[matrix(&[2, 2], &[1.0, 2.0, 2.0, 4.0])], &[]).expect("det");
        assert_eq!(det.iter().copied().collect::<Vec<_>>(), [0.0]);
        let chol = kernel(LinalgOp::Cholesky, &[matrix(&[2, 2], &[1.0, 2.0, 2.0, 1.0])], &[2, 2]).expect("cholesky");
        let c: Vec<f64> = chol.iter().copied().collect();
        assert!(c[0].is_nan() && c[1] == 0.0 && c[2].is_nan() && c[3].is_nan(), "{c:?}");
    }

    // JAX 0.10.2: `jax.grad(jnp.linalg.det)` of these (float64).
    #[test]
    fn cofactors_of_singular_matrices_are_finite() {
        let cof = |values: &[f64], m: usize| -> Vec<f64> {
            kernel(LinalgOp::Cofactor, &[matrix(&[m, m], values)], &[m, m]).expect("cofactor").iter().copied().collect()
        };
        assert_eq!(cof(&[2.0, 1.0, 0.0, 3.0], 2), [3.0, 0.0, -1.0, 2.0]);
        let rank3 = [1.0, 2.0, 3.0, 4.0, 2.0, 4.0, 6.0, 8.0, 0.0, 1.0, 1.0, 2.0, 1.0, 0.0, 0.0, 1.0];
        let expected = [-2.0, -6.0, 2.0, 2.0, 1.0, 3.0, -1.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let got = cof(&rank3, 4);
        assert!(got.iter().zip(expected).all(|(g, e)| (g - e).abs() < 1e-12), "{got:?}");
        assert_eq!(cof(&[0.0; 16], 4), [0.0; 16]);
    }
}
