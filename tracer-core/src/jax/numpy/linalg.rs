//! Linear algebra and products on the surface: `dot`/`matmul`/`einsum`/`tensordot`
//! (products.rs), `trace`, and `jnp.linalg`/`jax.scipy.linalg` (`solve`, `inv`, `cholesky`,
//! `det`, `eigh`, `svd`, `qr`, ...); the compositions live in linalg_api.rs.

use super::*;

/// `jnp.trace`: `axis1` and `axis2` moved last (a transpose only when they are not), the
/// elements off the `offset` diagonal replaced by zeros, then a sum over the last two axes
/// with `jnp.sum`'s dtype rules.
pub(super) fn trace(
    interp: &mut Interp,
    a: &Rc<Array>,
    offset: i64,
    axis1: usize,
    axis2: usize,
    dtype: Option<DType>,
) -> PyResult<Rc<Array>> {
    let nd = a.aval.ndim();
    let a = if (axis1, axis2) == (nd - 2, nd - 1) {
        a.clone()
    } else {
        let mut perm: Vec<usize> = (0..nd).filter(|&d| d != axis1 && d != axis2).collect();
        perm.extend([axis1, axis2]);
        transpose(interp, a, Some(perm))?
    };
    let plane = [a.aval.shape[nd - 2], a.aval.shape[nd - 1]];
    let iota = |interp: &mut Interp, dimension: usize| {
        let prim = Prim::Iota { dtype: DType::I32, shape: plane.to_vec(), dimension };
        bind1(interp, prim, &[], Aval::new(&plane, DType::I32))
    };
    let rows = iota(interp, 0)?;
    let cols = iota(interp, 1)?;
    let shifted = binary_prim(interp, BinaryPrim::Add, &rows, &Array::scalar(offset as f64, DType::I32, false))?;
    let on_diagonal = compare_arrays(interp, CmpPrim::Eq, &shifted, &cols)?;
    let zeros = full(interp, &a.aval.shape, 0.0, a.aval.dtype)?;
    let kept = where3(interp, &on_diagonal, &a, &zeros)?;
    reduce(interp, &kept, ReduceOp::Sum, Some(vec![nd - 2, nd - 1]), false, dtype)
}

/// The floating dtype a linear-algebra routine computes in.
pub(super) fn float_of(interp: &Interp, arrays: &[Rc<Array>]) -> DType {
    let wds: Vec<WeakDType> = arrays.iter().map(|a| a.aval.weak_dtype()).collect();
    let dt = promote(&wds, cfg(interp)).dtype;
    if dt.is_inexact() {
        dt
    } else {
        dtypes::default_float(cfg(interp))
    }
}
