//! LU and what is built on it: `jax.scipy.linalg.lu`/`lu_factor`/`lu_solve`, `solve`, `inv`,
//! `det` and `slogdet` (a closed form for small matrices), and `expm`, with the same
//! primitives as jax/_src/scipy/linalg.py and jax/_src/numpy/linalg.py.

use super::*;

/// `jax.scipy.linalg.lu`, `lu_factor` and `lu_solve`, built on JAX's `lu` primitive as
/// jax/_src/scipy/linalg.py builds them (docs/evaluator.md).
pub(in crate::jax::numpy) fn call_lu(interp: &mut Interp, f: JaxFn, p: &Args) -> PyResult<Value> {
    if f == JaxFn::ScipyLuSolve {
        return lu_solve(interp, p);
    }
    if f == JaxFn::LaxLinalgLuPivotsToPermutation {
        let (Some(pivots), Some(size)) = (p.get(0, "pivots"), p.get(1, "permutation_size")) else {
            return Err(interp.type_error("lu_pivots_to_permutation() missing required arguments: 'pivots' and 'permutation_size'"));
        };
        let pivots = arr_or_unknown!(interp, pivots);
        let size = crate::interp::ops::as_int(size).and_then(|s| usize::try_from(s).ok());
        let k = pivots.aval.shape.last().copied();
        let (Some(size), Some(k), DType::I32) = (size, k, pivots.aval.dtype) else {
            return Ok(Value::opaque("lu_pivots_to_permutation of these arguments"));
        };
        if k > size {
            return Ok(Value::opaque("lu_pivots_to_permutation with more pivots than the size"));
        }
        let op = LinalgOp::PivotsToPermutation { size };
        return apply1(interp, Prim::Linalg(op), &[pivots]).map(Value::Array);
    }
    let name = if f == JaxFn::LaxLinalgLu { "x" } else { "a" };
    let Some(a) = p.get(0, name) else {
        return Err(interp.type_error(format!("{}() missing 1 required positional argument: '{name}'", f.name())));
    };
    let a = arr_or_unknown!(interp, a);
    if f == JaxFn::LaxLinalgLu && !a.aval.dtype.is_inexact() {
        return Ok(Value::opaque("lax.linalg.lu of integers"));
    }
    let a = as_inexact(interp, &a)?;
    let a = convert(interp, &a, a.aval.dtype, false)?;
    let nd = a.aval.ndim();
    if nd < 2 {
        return Ok(Value::opaque("lu of a vector"));
    }
    let (lu, pivots, permutation) = lu_outputs(interp, &a)?;
    if f == JaxFn::LaxLinalgLu {
        return Ok(Value::tuple(vec![Value::Array(lu), Value::Array(pivots), Value::Array(permutation)]));
    }
    if f == JaxFn::ScipyLuFactor {
        return Ok(Value::tuple(vec![Value::Array(lu), Value::Array(pivots)]));
    }
    // `lu` unpacks `m, n = np.shape(a)`: a single matrix only.
    if nd != 2 {
        return Ok(Value::opaque("lu of a stack of matrices"));
    }
    let permute_l = match p.get(1, "permute_l") {
        Some(v) => interp.truthy(v)?,
        None => false,
    };
    let (m, n) = (a.aval.shape[0], a.aval.shape[1]);
    let k = m.min(n);
    let dt = a.aval.dtype;
    // p = (permutation[None, :] == arange(m)[:, None]).astype(dtype)
    let columns = apply1(interp, Prim::BroadcastInDim { shape: vec![m, m], broadcast_dimensions: vec![1] }, &[permutation])?;
    let rows = apply1(interp, Prim::Iota { dtype: DType::I32, shape: vec![m, m], dimension: 0 }, &[])?;
    let same = compare_arrays(interp, CmpPrim::Eq, &columns, &rows)?;
    let permutation_matrix = convert(interp, &same, dt, false)?;
    // l = tril(lu, -1)[:, :k] + eye(m, k); u = triu(lu)[:k, :]
    let below = triangle(interp, &lu, true, -1)?;
    let below = leading_block(interp, &below, m, k)?;
    let eye = Array::built(Aval::new(&[m, k], dt), || {
        ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[m, k]), |ix| f64::from(u8::from(ix[0] == ix[1])))
    });
    let l = binary_prim(interp, BinaryPrim::Add, &below, &eye)?;
    let upper = triangle(interp, &lu, false, 0)?;
    let u = leading_block(interp, &upper, k, n)?;
    if permute_l {
        let pl = matmul(interp, &permutation_matrix, &l, "matmul")?;
        return Ok(Value::tuple(vec![Value::Array(pl), Value::Array(u)]));
    }
    Ok(Value::tuple(vec![Value::Array(permutation_matrix), Value::Array(l), Value::Array(u)]))
}

/// The three outputs of JAX's `lu` primitive on `a[..., m, n]`: the packed factors, the
/// pivots (`int32[..., min(m, n)]`) and the permutation (`int32[..., m]`).
pub(super) fn lu_outputs(interp: &mut Interp, a: &Rc<Array>) -> PyResult<(Rc<Array>, Rc<Array>, Rc<Array>)> {
    let lu = apply1(interp, Prim::Linalg(LinalgOp::Lu), std::slice::from_ref(a))?;
    let pivots = apply1(interp, Prim::Linalg(LinalgOp::LuPivots), std::slice::from_ref(a))?;
    let permutation = apply1(interp, Prim::Linalg(LinalgOp::LuPermutation), std::slice::from_ref(a))?;
    Ok((lu, pivots, permutation))
}

/// `jnp.tril(x, k)` (`lower`) or `jnp.triu(x, k)` of a stack of matrices: a select against
/// the constant mask, as JAX's `_tril`/`_triu` are.
pub(super) fn triangle(interp: &mut Interp, x: &Rc<Array>, lower: bool, k: i64) -> PyResult<Rc<Array>> {
    let nd = x.aval.ndim();
    let mask = Array::built(x.aval.with_dtype(DType::Bool).weak(false), || {
        ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&x.aval.shape), |ix| {
            let d = ix[nd - 1] as i64 - ix[nd - 2] as i64;
            f64::from(u8::from(if lower { d <= k } else { d >= k }))
        })
    });
    let zeros = full(interp, &x.aval.shape, 0.0, x.aval.dtype)?;
    apply1(interp, Prim::Select, &[mask, zeros, x.clone()])
}

/// `x[..., :rows, :cols]`.
pub(super) fn leading_block(interp: &mut Interp, x: &Rc<Array>, rows: usize, cols: usize) -> PyResult<Rc<Array>> {
    let nd = x.aval.ndim();
    if x.aval.shape[nd - 2] == rows && x.aval.shape[nd - 1] == cols {
        return Ok(x.clone());
    }
    let mut limit = x.aval.shape.to_vec();
    limit[nd - 2] = rows;
    limit[nd - 1] = cols;
    let prim = Prim::Slice { start: vec![0; nd], limit: limit.clone(), strides: vec![1; nd] };
    apply1(interp, prim, std::slice::from_ref(x))
}

/// `x[..., rows[..., i], :]`: the rows of each matrix of `x[..., n, c]` in the order
/// `rows[..., n]` gives (a gather, as JAX's `x[permutation, :]`).
pub(super) fn take_rows(interp: &mut Interp, x: &Rc<Array>, rows: &Rc<Array>) -> PyResult<Rc<Array>> {
    let nd = x.aval.ndim();
    let shape = x.aval.shape.to_vec();
    let mut ins = vec![x.clone()];
    for d in 0..nd {
        if d == nd - 2 {
            let column: Vec<usize> = rows.aval.shape.iter().copied().chain([1]).collect();
            ins.push(reshape_raw(interp, rows, &column)?);
            continue;
        }
        let mut s = vec![1; nd];
        s[d] = shape[d];
        ins.push(Array::built(Aval::new(&s, DType::I32), || ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&s), |i| i[d] as f64)));
    }
    let prim = Prim::Gather { mode: crate::jax::ir::IndexMode::PromiseInBounds, fill_value: None, index: vec![IndexItem::Array; nd] };
    apply1(interp, prim, &ins)
}

/// `jax.scipy.linalg.lu_solve((lu, piv), b, trans=0)`: the pivots made a permutation, then
/// per matrix (JAX's `_lu_solve_core`) `b`'s rows permuted and the two triangular solves,
/// or for `trans` 1 and 2 the transposed solves and the inverse permutation.
pub(super) fn lu_solve(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    let Some(factors) = p.get(0, "lu_and_piv").cloned() else {
        return Err(interp.type_error("lu_solve() missing 2 required positional arguments: 'lu_and_piv' and 'b'"));
    };
    let Some(b) = p.get(1, "b") else {
        return Err(interp.type_error("lu_solve() missing 1 required positional argument: 'b'"));
    };
    let parts = interp.iterate(&factors)?;
    let [lu, pivots] = parts.as_slice() else {
        return Ok(Value::opaque("lu_solve of a pair that is not (lu, piv)"));
    };
    let (lu, pivots, b) = (arr_or_unknown!(interp, lu), arr_or_unknown!(interp, pivots), arr_or_unknown!(interp, b));
    let trans = match p.get(2, "trans") {
        None => 0,
        Some(v) => match crate::interp::ops::as_int(v) {
            Some(t) => t,
            None => return Ok(Value::opaque("lu_solve with this trans")),
        },
    };
    if !(0..=2).contains(&trans) {
        return Err(interp.value_error(format!("'trans' value must be 0, 1, or 2, got {trans}")));
    }
    let dt = float_of(interp, &[lu.clone(), b.clone()]);
    let (lu, b) = (convert(interp, &lu, dt, false)?, convert(interp, &b, dt, false)?);
    let (lu_nd, b_nd) = (lu.aval.ndim(), b.aval.ndim());
    if lu_nd < 2 || pivots.aval.ndim() < 1 || b_nd < 1 || !pivots.aval.dtype.is_integer() {
        return Ok(Value::opaque("lu_solve of these shapes"));
    }
    let m = lu.aval.shape[lu_nd - 2];
    let k = pivots.aval.shape[pivots.aval.ndim() - 1];
    if k > m {
        return Ok(Value::opaque("lu_solve with more pivots than rows"));
    }
    let pivots = convert(interp, &pivots, DType::I32, false)?;
    let permutation = apply1(interp, Prim::Linalg(LinalgOp::PivotsToPermutation { size: m }), &[pivots])?;
    // `jnp.vectorize` over `(n,n),(n),(n)->(n)` when `b` is a (stack of) vector(s), else
    // `(n,n),(n),(n,k)->(n,k)`.
    let vector = b_nd == 1 || (lu_nd == b_nd + 1 && lu.aval.shape[lu_nd - 1] == b.aval.shape[b_nd - 1]);
    let (signature, core) = if vector { ("(n,n),(n),(n)->(n)", 1) } else { ("(n,n),(n),(n,k)->(n,k)", 2) };
    if b_nd < core {
        return Ok(Value::opaque("lu_solve of a scalar"));
    }
    let n = lu.aval.shape[lu_nd - 1];
    for size in [m, permutation.aval.shape[permutation.aval.ndim() - 1], b.aval.shape[b_nd - core]] {
        if size != n {
            return Err(interp.value_error(format!(
                "inconsistent size for core dimension 'n': {size} vs {n} on vectorized function with excluded=frozenset() and signature='{signature}'"
            )));
        }
    }
    let batch = broadcast_shapes(&[
        &lu.aval.shape[..lu_nd - 2],
        &permutation.aval.shape[..permutation.aval.ndim() - 1],
        &b.aval.shape[..b_nd - core],
    ])
    .map_err(|message| interp.value_error(message))?;
    let lu = broadcast_to_shape(interp, &lu, &[batch.as_slice(), &[n, n]].concat())?;
    let permutation = broadcast_to_shape(interp, &permutation, &[batch.as_slice(), &[n]].concat())?;
    let b_shape: Vec<usize> = batch.iter().chain(&b.aval.shape[b_nd - core..]).copied().collect();
    let b = broadcast_to_shape(interp, &b, &b_shape)?;
    let x = if vector { reshape_raw(interp, &b, &[b_shape.as_slice(), &[1]].concat())? } else { b };
    let mut x = lu_solve_core(interp, &lu, &permutation, &x, trans != 0)?;
    if vector {
        x = reshape_raw(interp, &x, &b_shape)?;
    }
    Ok(Value::Array(x))
}

/// JAX's `_lu_solve_core` on stacks: `x[..., m, n]` solved with the packed factors
/// `lu[..., m, m]` and the row permutation `permutation[..., m]` (all with the same batch
/// axes): `b`'s rows permuted and the unit-lower and upper triangular solves, or for
/// `transpose` (`trans` 1) the transposed solves and then the inverse permutation.
pub(crate) fn lu_solve_core(
    interp: &mut Interp,
    lu: &Rc<Array>,
    permutation: &Rc<Array>,
    b: &Rc<Array>,
    transpose: bool,
) -> PyResult<Rc<Array>> {
    let solve = |interp: &mut Interp, x: &Rc<Array>, lower: bool, transpose_a: bool| {
        let op = LinalgOp::TriangularSolve { lower, transpose_a, unit_diagonal: lower };
        apply1(interp, Prim::Linalg(op), &[lu.clone(), x.clone()])
    };
    if !transpose {
        let x = take_rows(interp, b, permutation)?;
        let x = solve(interp, &x, true, false)?;
        return solve(interp, &x, false, false);
    }
    let x = solve(interp, b, false, true)?;
    let x = solve(interp, &x, true, true)?;
    // The inverse permutation: `sort_key_val(permutation, iota)`'s values.
    let last = permutation.aval.ndim() - 1;
    let iota = apply1(interp, Prim::Iota { dtype: DType::I32, shape: permutation.aval.shape.to_vec(), dimension: last }, &[])?;
    let inverse = apply1(interp, Prim::Sort { dimension: last, num_keys: 1 }, &[permutation.clone(), iota])?;
    take_rows(interp, &x, &inverse)
}

/// `jnp.linalg.solve(a, b)` of `a[..., m, m]` and `b[..., m, n]` with the same batch axes and
/// float dtype, as JAX's `lax.linalg._solve` binds it: `lu` of `stop_gradient(a)`, and a
/// `custom_linear_solve` whose solve is `lu_solve` with those factors. The last equation
/// stands for JAX's `custom_linear_solve`: its value is the `lu_solve` bound before it, and
/// its derivatives are JAX's rules for it (the tangent `solve(db - da · x)`, the transpose
/// the solve with `aᵀ`), which reach `a` through the product as JAX's `matvec` does.
pub(crate) fn solve_system(interp: &mut Interp, a: &Rc<Array>, b: &Rc<Array>) -> PyResult<Rc<Array>> {
    let frozen = apply1(interp, Prim::StopGradient, std::slice::from_ref(a))?;
    let (lu, _, permutation) = lu_outputs(interp, &frozen)?;
    solve_with_factors(interp, a, &lu, &permutation, b, false)
}

/// The `custom_linear_solve` of [`solve_system`] with the factors of `a` already computed:
/// `a x = b`, or `aᵀ x = b` when `transpose` (its transpose, which JAX binds with
/// `transpose_solve`, `lu_solve(..., trans=1)`).
pub(crate) fn solve_with_factors(
    interp: &mut Interp,
    a: &Rc<Array>,
    lu: &Rc<Array>,
    permutation: &Rc<Array>,
    b: &Rc<Array>,
    transpose: bool,
) -> PyResult<Rc<Array>> {
    let x = lu_solve_core(interp, lu, permutation, b, transpose)?;
    let ins = [a.clone(), lu.clone(), permutation.clone(), b.clone(), x];
    apply1(interp, Prim::Linalg(LinalgOp::LinearSolve { transpose }), &ins)
}

/// `jnp.linalg.inv(a)` of a float `a[..., m, m]`: `solve(a, eye(m))` with the identity
/// broadcast to `a`'s batch axes, as JAX writes it.
pub(crate) fn inv(interp: &mut Interp, a: &Rc<Array>) -> PyResult<Rc<Array>> {
    let m = a.aval.shape[a.aval.ndim() - 1];
    let eye = Array::built(Aval::new(&[m, m], a.aval.dtype), || {
        ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[m, m]), |ix| f64::from(u8::from(ix[0] == ix[1])))
    });
    let eye = broadcast_to_shape(interp, &eye, &a.aval.shape)?;
    solve_system(interp, a, &eye)
}

/// `a[..., i, j]` (a `slice` and a `squeeze`, as JAX binds a static index).
pub(super) fn entry(interp: &mut Interp, a: &Rc<Array>, i: usize, j: usize) -> PyResult<Rc<Array>> {
    let nd = a.aval.ndim();
    let mut start = vec![0; nd];
    let mut limit = a.aval.shape.to_vec();
    (start[nd - 2], start[nd - 1], limit[nd - 2], limit[nd - 1]) = (i, j, i + 1, j + 1);
    let mut shape = limit.clone();
    (shape[nd - 2], shape[nd - 1]) = (1, 1);
    let one = apply1(interp, Prim::Slice { start, limit, strides: vec![1; nd] }, std::slice::from_ref(a))?;
    apply1(interp, Prim::Squeeze { dimensions: vec![nd - 2, nd - 1] }, &[one])
}

/// The product of `a`'s entries at `(row, col)` pairs, left to right.
pub(super) fn entry_product(interp: &mut Interp, a: &Rc<Array>, at: &[(usize, usize)]) -> PyResult<Rc<Array>> {
    let mut p = entry(interp, a, at[0].0, at[0].1)?;
    for &(i, j) in &at[1..] {
        let e = entry(interp, a, i, j)?;
        p = binary_prim(interp, BinaryPrim::Mul, &p, &e)?;
    }
    Ok(p)
}

/// JAX's `_det_2x2` (`a00 a11 - a01 a10`) and, for `n = 3`, `_det_3x3` (the six products
/// of Sarrus' rule summed in JAX's order), which `jnp.linalg.det` uses for those sizes.
pub(super) fn det_formula(interp: &mut Interp, a: &Rc<Array>, n: usize) -> PyResult<Rc<Array>> {
    if n == 2 {
        let p = entry_product(interp, a, &[(0, 0), (1, 1)])?;
        let q = entry_product(interp, a, &[(0, 1), (1, 0)])?;
        return binary_prim(interp, BinaryPrim::Sub, &p, &q);
    }
    let terms: [(BinaryPrim, [(usize, usize); 3]); 6] = [
        (BinaryPrim::Add, [(0, 0), (1, 1), (2, 2)]),
        (BinaryPrim::Add, [(0, 1), (1, 2), (2, 0)]),
        (BinaryPrim::Add, [(0, 2), (1, 0), (2, 1)]),
        (BinaryPrim::Sub, [(0, 2), (1, 1), (2, 0)]),
        (BinaryPrim::Sub, [(0, 0), (1, 2), (2, 1)]),
        (BinaryPrim::Sub, [(0, 1), (1, 0), (2, 2)]),
    ];
    let mut sum = entry_product(interp, a, &terms[0].1)?;
    for (op, at) in &terms[1..] {
        let p = entry_product(interp, a, at)?;
        sum = binary_prim(interp, *op, &sum, &p)?;
    }
    Ok(sum)
}

/// `x[..., i, i]` of a stack of square matrices (`jnp.diagonal`, a gather on CPU).
pub(super) fn diagonal(interp: &mut Interp, x: &Rc<Array>) -> PyResult<Rc<Array>> {
    let nd = x.aval.ndim();
    let n = x.aval.shape[nd - 1];
    let batch = &x.aval.shape[..nd - 2];
    let mut ins = vec![x.clone()];
    for (d, &size) in batch.iter().enumerate() {
        let mut s = vec![1; nd - 1];
        s[d] = size;
        ins.push(Array::built(Aval::new(&s, DType::I32), || ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&s), |i| i[d] as f64)));
    }
    let iota = Array::built(Aval::new(&[n], DType::I32), || ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[n]), |i| i[0] as f64));
    ins.extend([iota.clone(), iota]);
    let prim = Prim::Gather { mode: crate::jax::ir::IndexMode::PromiseInBounds, fill_value: None, index: vec![IndexItem::Array; nd] };
    apply1(interp, prim, &ins)
}

/// `count_nonzero(mask, axis=-1)` as int32.
pub(super) fn count_true(interp: &mut Interp, mask: &Rc<Array>) -> PyResult<Rc<Array>> {
    let ints = convert(interp, mask, DType::I32, false)?;
    let last = ints.aval.ndim() - 1;
    reduce(interp, &ints, ReduceOp::Sum, Some(vec![last]), false, None)
}

/// The sign and log-magnitude of `det(a)` as JAX's `_slogdet_small` (`n` of 1 or 2: the
/// determinant's formula, then `sign` and `log(abs(...))`) or `_slogdet_lu` (`lu`, its
/// diagonal, the parity of the pivots and of the negative diagonal entries, `where(is_zero,
/// 0, ±1)` and `where(is_zero, -inf, sum(log(abs(diag))))`) computes them.
pub(super) fn slogdet_values(interp: &mut Interp, a: &Rc<Array>, n: usize) -> PyResult<(Rc<Array>, Rc<Array>)> {
    let dt = a.aval.dtype;
    if n <= 2 {
        let d = if n == 1 { entry(interp, a, 0, 0)? } else { det_formula(interp, a, 2)? };
        let magnitude = unary_prim(interp, UnaryPrim::Abs, &d)?;
        let sign = unary_prim(interp, UnaryPrim::Sign, &d)?;
        let log = unary_prim(interp, UnaryPrim::Log, &magnitude)?;
        return Ok((sign, log));
    }
    let (lu, pivots, _) = lu_outputs(interp, a)?;
    let diag = diagonal(interp, &lu)?;
    let last = diag.aval.ndim() - 1;
    let zero = full(interp, &[], 0.0, dt)?;
    let zeros = compare_arrays(interp, CmpPrim::Eq, &diag, &zero)?;
    let is_zero = reduce(interp, &zeros, ReduceOp::Or, Some(vec![last]), false, None)?;
    let iota = Array::built(Aval::new(&[n], DType::I32), || ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[n]), |i| i[0] as f64));
    let swapped = compare_arrays(interp, CmpPrim::Ne, &pivots, &iota)?;
    let swaps = count_true(interp, &swapped)?;
    let negative = compare_arrays(interp, CmpPrim::Lt, &diag, &zero)?;
    let negatives = count_true(interp, &negative)?;
    let parity = binary_prim(interp, BinaryPrim::Add, &swaps, &negatives)?;
    let two = full(interp, &[], 2.0, DType::I32)?;
    let odd = binary_prim(interp, BinaryPrim::Rem, &parity, &two)?;
    let minus_two = full(interp, &[], -2.0, DType::I32)?;
    let one = full(interp, &[], 1.0, DType::I32)?;
    let flip = binary_prim(interp, BinaryPrim::Mul, &minus_two, &odd)?;
    let flip = binary_prim(interp, BinaryPrim::Add, &flip, &one)?;
    let flip = convert(interp, &flip, dt, false)?;
    let sign = select(interp, &is_zero, &zero, &flip)?;
    let magnitude = unary_prim(interp, UnaryPrim::Abs, &diag)?;
    let logs = unary_prim(interp, UnaryPrim::Log, &magnitude)?;
    let sum = reduce(interp, &logs, ReduceOp::Sum, Some(vec![last]), false, None)?;
    let minus_inf = full(interp, &[], f64::NEG_INFINITY, dt)?;
    let logdet = select(interp, &is_zero, &minus_inf, &sum)?;
    Ok((sign, logdet))
}

/// `jnp.linalg.slogdet(a)` of a float `a[..., n, n]`. For `n` of 3 or more JAX's
/// `_slogdet_lu` is a `custom_jvp`: its value is computed on `stop_gradient(a)` and the two
/// last equations, `slogdet_sign` and `slogdet_logabsdet`, stand for the `custom_jvp_call`
/// (their value is the one before them, their derivative JAX's `_slogdet_jvp`). For 1 and 2
/// JAX's `_slogdet_small` rule is the derivative of its formula, which is bound as it is.
pub(crate) fn slogdet(interp: &mut Interp, a: &Rc<Array>) -> PyResult<(Rc<Array>, Rc<Array>)> {
    let nd = a.aval.ndim();
    let n = a.aval.shape[nd - 1];
    let batch = a.aval.with_shape(&a.aval.shape[..nd - 2]);
    if n == 0 {
        let sign = apply1(interp, Prim::opaque("slogdet", batch.clone()), std::slice::from_ref(a))?;
        let log = apply1(interp, Prim::opaque("slogdet", batch), std::slice::from_ref(a))?;
        return Ok((sign, log));
    }
    if n <= 2 {
        return slogdet_values(interp, a, n);
    }
    let frozen = apply1(interp, Prim::StopGradient, std::slice::from_ref(a))?;
    let (sign, log) = slogdet_values(interp, &frozen, n)?;
    let sign = apply1(interp, Prim::Linalg(LinalgOp::SlogdetSign), &[a.clone(), sign])?;
    let log = apply1(interp, Prim::Linalg(LinalgOp::SlogdetLogAbs), &[a.clone(), log])?;
    Ok((sign, log))
}

/// `jnp.linalg.det(a)` of a float `a[..., n, n]`: JAX's formulas for `n` of 2 and 3;
/// otherwise its `custom_jvp` `_det`, `sign · exp(logabsdet)` from `slogdet`'s values on
/// `stop_gradient(a)`, then the `det` equation standing for the `custom_jvp_call` (its
/// value is the one before it, its derivative JAX's `_det_jvp`: the cofactors times the
/// tangent).
pub(crate) fn det(interp: &mut Interp, a: &Rc<Array>) -> PyResult<Rc<Array>> {
    let nd = a.aval.ndim();
    let n = a.aval.shape[nd - 1];
    let batch = a.aval.with_shape(&a.aval.shape[..nd - 2]);
    match n {
        0 => apply1(interp, Prim::opaque("det", batch), std::slice::from_ref(a)),
        2 | 3 => {
            let value = det_formula(interp, a, n)?;
            if !matches!(a.aval.dtype, DType::F32 | DType::F64) {
                return Ok(value);
            }
            // The value XLA's fused multiply-adds give; the derivative is the formula's.
            let op = LinalgOp::DetFused { double: a.aval.dtype == DType::F64 };
            apply1(interp, Prim::Linalg(op), &[a.clone(), value])
        }
        _ => {
            let frozen = apply1(interp, Prim::StopGradient, std::slice::from_ref(a))?;
            let (sign, log) = slogdet_values(interp, &frozen, n)?;
            let magnitude = unary_prim(interp, UnaryPrim::Exp, &log)?;
            let value = binary_prim(interp, BinaryPrim::Mul, &sign, &magnitude)?;
            apply1(interp, Prim::Linalg(LinalgOp::Det), &[a.clone(), value])
        }
    }
}

/// `jax.scipy.linalg.expm(A, *, upper_triangular=False, max_squarings=16)`: one `expm`
/// equation per call, batched over the leading axes as JAX's `jnp.vectorize` batches it,
/// whose kernel follows JAX's Padé approximation with scaling and squaring step by step
/// (JAX writes it with `lax.switch` on the degree and a `scan` of conditional squarings,
/// control flow whose branch depends on the values; docs/evaluator.md).
pub(in crate::jax::numpy) fn expm(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    let Some(a) = p.get(0, "A") else {
        return Err(interp.type_error("expm() missing 1 required positional argument: 'A'"));
    };
    let a = arr_or_unknown!(interp, a);
    let upper_triangular = match p.get(usize::MAX, "upper_triangular") {
        Some(v) => interp.truthy(v)?,
        None => false,
    };
    let max_squarings = match p.get(usize::MAX, "max_squarings") {
        None => 16,
        Some(v) => match crate::interp::ops::as_int(v).and_then(|n| u32::try_from(n).ok()) {
            Some(n) => n,
            None => return Ok(Value::opaque("expm with this max_squarings")),
        },
    };
    let nd = a.aval.ndim();
    if nd < 2 || a.aval.shape[nd - 1] != a.aval.shape[nd - 2] {
        if nd > 2 {
            let n = a.aval.shape[nd - 1];
            let other = a.aval.shape[nd - 2];
            return Err(interp.value_error(format!(
                "inconsistent size for core dimension 'n': {other} vs {n} on vectorized function with excluded=frozenset() and signature='(n,n)->(n,n)'"
            )));
        }
        return Err(interp.value_error("expected A to be a square matrix"));
    }
    let dt = a.aval.dtype;
    if !matches!(dt, DType::F32 | DType::F64) {
        return Err(interp.type_error(format!("A.dtype={} is not supported.", dt.name())));
    }
    let op = LinalgOp::Expm { double: dt == DType::F64, upper_triangular, max_squarings };
    apply1(interp, Prim::Linalg(op), &[a.clone()]).map(Value::Array)
}
