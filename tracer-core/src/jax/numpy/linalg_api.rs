//! The `jax.numpy.linalg` functions JAX writes in terms of other primitives (`lstsq`,
//! `matrix_rank`, `matrix_power`, `cond`, `svdvals` and `norm`'s orders), composed here from
//! the same primitives as in jax/_src/numpy/linalg.py: their values come from the kernels
//! of the SVD, `inv`, products and reductions, and their derivatives from those
//! primitives' rules, as JAX's do (docs/evaluator.md).

use super::*;

mod lu;
pub(super) mod results;
pub(crate) use lu::*;

pub(super) fn call(interp: &mut Interp, f: JaxFn, p: &Args) -> PyResult<Value> {
    use JaxFn as F;
    let Some(first) = p.get(
        0,
        if f == F::LinalgMatrixRank {
            "M"
        } else if f == F::LinalgLstsq {
            "a"
        } else {
            "x"
        },
    ) else {
        return Err(interp.type_error(format!("{}() missing 1 required positional argument", f.name())));
    };
    let first = arr_or_unknown!(interp, first);
    match f {
        F::LinalgLstsq => lstsq(interp, first, p),
        F::LinalgMatrixRank => matrix_rank(interp, first, p),
        F::LinalgMatrixPower => matrix_power(interp, first, p.get(1, "n")),
        F::LinalgCond => cond(interp, first, p.get(1, "p")),
        F::LinalgSvdvals => {
            let x = as_inexact(interp, &first)?;
            if x.aval.ndim() < 2 {
                return Ok(Value::opaque("svdvals of a vector"));
            }
            svd_values(interp, &x).map(Value::Array)
        }
        _ => {
            let keepdims = match p.get(usize::MAX, "keepdims") {
                Some(v) => interp.truthy(v)?,
                None => false,
            };
            norm(interp, first, p.get(1, "ord"), p.get(2, "axis"), keepdims)
        }
    }
}

/// `promote_dtypes_inexact(x)`: integers and bools become the default float.
fn as_inexact(interp: &mut Interp, x: &Rc<Array>) -> PyResult<Rc<Array>> {
    if x.aval.dtype.is_inexact() {
        return Ok(x.clone());
    }
    let f = dtypes::default_float(cfg(interp));
    convert(interp, x, f, x.aval.weak)
}

/// `x` with its last two axes swapped (`x.mT`).
pub(super) fn swap_last_axes(interp: &mut Interp, x: &Rc<Array>) -> PyResult<Rc<Array>> {
    let nd = x.aval.ndim();
    let mut perm: Vec<usize> = (0..nd).collect();
    perm.swap(nd - 1, nd - 2);
    transpose(interp, x, Some(perm))
}

/// `x @ y` for stacks of matrices with the same batch axes (`dot_general` with those axes
/// as batch dimensions, as `jnp.matmul` binds it).
fn matmul_stacked(interp: &mut Interp, x: &Rc<Array>, y: &Rc<Array>) -> PyResult<Rc<Array>> {
    let nd = x.aval.ndim();
    if nd <= 2 {
        return matmul(interp, x, y, "matmul");
    }
    let batch: Vec<usize> = (0..nd - 2).collect();
    let prim = Prim::DotGeneral { lhs_contract: vec![nd - 1], rhs_contract: vec![nd - 2], lhs_batch: batch.clone(), rhs_batch: batch };
    apply1(interp, prim, &[x.clone(), y.clone()])
}

/// `(x + x.mT) / 2`: what `eigh`, and so `svd(hermitian=True)`, decomposes.
pub(super) fn symmetrize(interp: &mut Interp, x: &Rc<Array>) -> PyResult<Rc<Array>> {
    let xt = swap_last_axes(interp, x)?;
    let sum = binary_prim(interp, BinaryPrim::Add, x, &xt)?;
    let two = full(interp, &[], 2.0, x.aval.dtype)?;
    binary_prim(interp, BinaryPrim::Div, &sum, &two)
}

/// `svd(x, compute_uv=False)`: the singular values `[..., min(m, n)]`, descending.
fn svd_values(interp: &mut Interp, x: &Rc<Array>) -> PyResult<Rc<Array>> {
    apply1(interp, Prim::Linalg(LinalgOp::SvdValues), std::slice::from_ref(x))
}

/// `x[..., start:limit]` along the last axis.
fn last_axis_slice(interp: &mut Interp, x: &Rc<Array>, start: usize, limit: usize) -> PyResult<Rc<Array>> {
    let nd = x.aval.ndim();
    let mut starts = vec![0; nd];
    let mut limits = x.aval.shape.to_vec();
    starts[nd - 1] = start;
    limits[nd - 1] = limit;
    let mut shape = limits.clone();
    shape[nd - 1] = limit - start;
    apply1(interp, Prim::Slice { start: starts, limit: limits, strides: vec![1; nd] }, std::slice::from_ref(x))
}

/// `x[..., i]` (the last axis dropped).
fn last_axis_element(interp: &mut Interp, x: &Rc<Array>, i: usize) -> PyResult<Rc<Array>> {
    let one = last_axis_slice(interp, x, i, i + 1)?;
    let shape: Vec<usize> = x.aval.shape[..x.aval.ndim() - 1].to_vec();
    reshape_raw(interp, &one, &shape)
}

/// `jnp.where(cond, on_true, on_false)` for operands of one dtype.
fn select(interp: &mut Interp, cond: &Rc<Array>, on_true: &Rc<Array>, on_false: &Rc<Array>) -> PyResult<Rc<Array>> {
    let shapes = [cond.aval.shape.as_slice(), on_true.aval.shape.as_slice(), on_false.aval.shape.as_slice()];
    let shape = broadcast_shapes(&shapes).map_err(|m| interp.value_error(m))?;
    let c = broadcast_to_shape(interp, cond, &shape)?;
    let t = broadcast_to_shape(interp, on_true, &shape)?;
    let e = broadcast_to_shape(interp, on_false, &shape)?;
    apply1(interp, Prim::Select, &[c, e, t.clone()])
}

/// `jnp.linalg.lstsq(a, b, rcond)`, as JAX's `_lstsq`: from the thin SVD of `a`, the
/// singular values below `rcond · s[0]` (or zero) dropped; residuals for every column of
/// `b` (JAX's default `numpy_resid=False`), the rank in the default integer dtype.
fn lstsq(interp: &mut Interp, a: Rc<Array>, p: &Args) -> PyResult<Value> {
    let Some(b) = p.get(1, "b") else { return Err(interp.type_error("lstsq() missing 1 required positional argument: 'b'")) };
    let b = arr_or_unknown!(interp, b);
    let dt = float_of(interp, &[a.clone(), b.clone()]);
    let (a, b) = (convert(interp, &a, dt, false)?, convert(interp, &b, dt, false)?);
    if a.aval.ndim() == 0 || b.aval.ndim() == 0 {
        return Ok(Value::opaque("lstsq of a scalar"));
    }
    if a.aval.shape[0] != b.aval.shape[0] {
        return Err(interp.value_error("Leading dimensions of input arrays must match"));
    }
    if a.aval.ndim() != 2 {
        let message = format!("{}-dimensional array given. Array must be two-dimensional", a.aval.ndim());
        return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
    }
    if b.aval.ndim() > 2 {
        let message = format!("{}-dimensional array given. Array must be one or two-dimensional", b.aval.ndim());
        return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
    }
    let vector = b.aval.ndim() == 1;
    let (m, n) = (a.aval.shape[0], a.aval.shape[1]);
    let b2 = if vector { reshape_raw(interp, &b, &[m, 1])? } else { b.clone() };
    let columns = b2.aval.shape[1];
    let int = dtypes::default_int(cfg(interp));
    let (x, rank, s) = if m == 0 || n == 0 {
        (full(interp, &[n, columns], 0.0, dt)?, full(interp, &[], 0.0, int)?, full(interp, &[0], 0.0, dt)?)
    } else {
        let rcond = match p.get(2, "rcond") {
            None => full(interp, &[], dt.epsilon() * m.max(n) as f64, dt)?,
            Some(v) => {
                let r = arr_or_unknown!(interp, v);
                let r = convert(interp, &r, dt, false)?;
                let zero = full(interp, &[], 0.0, dt)?;
                let negative = compare_arrays(interp, CmpPrim::Lt, &r, &zero)?;
                let eps = full(interp, &[], dt.epsilon(), dt)?;
                select(interp, &negative, &eps, &r)?
            }
        };
        if rcond.aval.ndim() != 0 {
            return Ok(Value::opaque("lstsq with an array of rcond"));
        }
        let k = m.min(n);
        let u = apply1(interp, Prim::Linalg(LinalgOp::SvdU { full: false }), std::slice::from_ref(&a))?;
        let s = svd_values(interp, &a)?;
        let vt = apply1(interp, Prim::Linalg(LinalgOp::SvdVh { full: false }), std::slice::from_ref(&a))?;
        // mask = (s > 0) & (s >= rcond * s[0])
        let largest = last_axis_slice(interp, &s, 0, 1)?;
        let cutoff = binary_prim(interp, BinaryPrim::Mul, &rcond, &largest)?;
        let zero = full(interp, &[], 0.0, dt)?;
        let positive = compare_arrays(interp, CmpPrim::Gt, &s, &zero)?;
        let kept = compare_arrays(interp, CmpPrim::Ge, &s, &cutoff)?;
        let mask = binary_prim(interp, BinaryPrim::And, &positive, &kept)?;
        let rank = reduce(interp, &mask, ReduceOp::Sum, None, false, None)?;
        let one = full(interp, &[], 1.0, dt)?;
        let safe = select(interp, &mask, &s, &one)?;
        let inverse = binary_prim(interp, BinaryPrim::Div, &one, &safe)?;
        let s_inv = select(interp, &mask, &inverse, &zero)?;
        let s_inv = reshape_raw(interp, &s_inv, &[k, 1])?;
        let ut = swap_last_axes(interp, &u)?;
        let utb = matmul(interp, &ut, &b2, "matmul")?;
        let scaled = binary_prim(interp, BinaryPrim::Mul, &s_inv, &utb)?;
        let v = swap_last_axes(interp, &vt)?;
        (matmul(interp, &v, &scaled, "matmul")?, rank, s)
    };
    // resid = norm(b - a @ x, axis=0) ** 2
    let estimate = matmul(interp, &a, &x, "matmul")?;
    let r = binary_prim(interp, BinaryPrim::Sub, &b2, &estimate)?;
    let squares = binary_prim(interp, BinaryPrim::Mul, &r, &r)?;
    let sum = reduce(interp, &squares, ReduceOp::Sum, Some(vec![0]), false, None)?;
    let length = unary_prim(interp, UnaryPrim::Sqrt, &sum)?;
    let resid = apply1(interp, Prim::IntegerPow(2), std::slice::from_ref(&length))?;
    let x = if vector { reshape_raw(interp, &x, &[n])? } else { x };
    Ok(Value::tuple(vec![Value::Array(x), Value::Array(resid), Value::Array(rank), Value::Array(s)]))
}

/// `jnp.linalg.matrix_rank(M, rtol=None, *, hermitian=False, tol=None)`: the singular values
/// above `rtol` (as JAX compares them: an absolute bound when given, else
/// `max(s) · max(m, n) · eps`), counted in the default integer dtype.
fn matrix_rank(interp: &mut Interp, m: Rc<Array>, p: &Args) -> PyResult<Value> {
    let (rtol, tol) = (p.get(1, "rtol"), p.get(usize::MAX, "tol"));
    if rtol.is_some() && tol.is_some() {
        return Err(interp.value_error("matrix_rank: only one of tol or rtol may be specified."));
    }
    let rtol = rtol.or(tol);
    let hermitian = match p.get(usize::MAX, "hermitian") {
        Some(v) => interp.truthy(v)?,
        None => false,
    };
    let m = as_inexact(interp, &m)?;
    let nd = m.aval.ndim();
    if nd < 2 {
        // (M != 0).any().astype(int32)
        let zero = full(interp, &[], 0.0, m.aval.dtype)?;
        let nonzero = compare_arrays(interp, CmpPrim::Ne, &m, &zero)?;
        let any = reduce(interp, &nonzero, ReduceOp::Or, None, false, None)?;
        return convert(interp, &any, DType::I32, false).map(Value::Array);
    }
    let square = m.aval.shape[nd - 1] == m.aval.shape[nd - 2];
    if hermitian && !square {
        return Ok(Value::opaque("matrix_rank(hermitian=True) of a non-square matrix"));
    }
    let decomposed = if hermitian { symmetrize(interp, &m)? } else { m.clone() };
    let s = svd_values(interp, &decomposed)?;
    let dt = s.aval.dtype;
    let bound = match rtol {
        Some(v) => {
            let r = arr_or_unknown!(interp, v);
            convert(interp, &r, dt, false)?
        }
        None => {
            if s.aval.shape[nd - 2] == 0 {
                return Err(interp.value_error("zero-size array to reduction operation max which has no identity"));
            }
            let largest = reduce(interp, &s, ReduceOp::Max, Some(vec![nd - 2]), false, None)?;
            let size = full(interp, &[], m.aval.shape[nd - 1].max(m.aval.shape[nd - 2]) as f64, dt)?;
            let scaled = binary_prim(interp, BinaryPrim::Mul, &largest, &size)?;
            let eps = full(interp, &[], dt.epsilon(), dt)?;
            binary_prim(interp, BinaryPrim::Mul, &scaled, &eps)?
        }
    };
    let expanded: Vec<usize> = bound.aval.shape.iter().copied().chain([1]).collect();
    let bound = reshape_raw(interp, &bound, &expanded)?;
    let above = compare_arrays(interp, CmpPrim::Gt, &s, &bound)?;
    let last = above.aval.ndim() - 1;
    reduce(interp, &above, ReduceOp::Sum, Some(vec![last]), false, None).map(Value::Array)
}

/// `jnp.linalg.matrix_power(a, n)` by repeated squaring, in JAX's order of products (so a
/// float32 result rounds as JAX's does); `inv(a)` first for a negative `n`.
fn matrix_power(interp: &mut Interp, a: Rc<Array>, n: Option<&Value>) -> PyResult<Value> {
    let nd = a.aval.ndim();
    if nd < 2 {
        let message = format!("{nd}-dimensional array given. Array must be at least two-dimensional");
        return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
    }
    let size = a.aval.shape[nd - 1];
    if a.aval.shape[nd - 2] != size {
        return Err(interp.raise("TypeError", Code::ShapeMismatch, "Last 2 dimensions of the array must be square"));
    }
    let n = match n {
        Some(Value::Int(n)) => *n,
        Some(Value::Bool(b)) => i64::from(*b),
        Some(other) => {
            let shown = interp.repr(other)?;
            return Err(interp.type_error(format!("exponent must be an integer, got {shown}")));
        }
        None => return Err(interp.type_error("matrix_power() missing 1 required positional argument: 'n'")),
    };
    if n == 0 {
        let eye = Array::built(Aval::new(&[size, size], a.aval.dtype), || {
            ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[size, size]), |ix| f64::from(u8::from(ix[0] == ix[1])))
        });
        return broadcast_to_shape(interp, &eye, &a.aval.shape).map(Value::Array);
    }
    let mut base = a.clone();
    if n < 0 {
        let dt = float_of(interp, &[a.clone()]);
        let a2 = convert(interp, &a, dt, false)?;
        base = inv(interp, &a2)?;
    }
    let mut n = n.unsigned_abs();
    match n {
        1 => return Ok(Value::Array(base)),
        2 => return matmul_stacked(interp, &base, &base).map(Value::Array),
        3 => {
            let square = matmul_stacked(interp, &base, &base)?;
            return matmul_stacked(interp, &square, &base).map(Value::Array);
        }
        _ => {}
    }
    let (mut z, mut result): (Option<Rc<Array>>, Option<Rc<Array>>) = (None, None);
    while n > 0 {
        let next = match &z {
            None => base.clone(),
            Some(z) => matmul_stacked(interp, z, z)?,
        };
        let bit = n % 2;
        n /= 2;
        if bit == 1 {
            result = Some(match &result {
                None => next.clone(),
                Some(r) => matmul_stacked(interp, r, &next)?,
            });
        }
        z = Some(next);
    }
    Ok(result.map_or_else(|| Value::opaque("matrix_power"), Value::Array))
}

/// A norm's `ord` (`jnp.inf` included), or the string orders `'fro'`, `'f'`, `'nuc'`.
enum Order {
    Number(f64),
    Name(String),
}

fn order(v: &Value) -> Option<Order> {
    match v {
        Value::Int(i) => Some(Order::Number(*i as f64)),
        Value::Bool(b) => Some(Order::Number(f64::from(u8::from(*b)))),
        Value::Float(x) => Some(Order::Number(*x)),
        Value::Str(s) => Some(Order::Name(s.to_string())),
        _ => None,
    }
}

/// `str(ord)` for the messages of `norm`.
fn order_text(interp: &mut Interp, v: &Value) -> PyResult<String> {
    match v {
        Value::Str(s) => Ok(s.to_string()),
        other => interp.repr(other),
    }
}

/// `jnp.linalg.norm(x, ord, axis, keepdims)`: a vector norm over one axis, a matrix norm over
/// two (`'nuc'`, 2 and -2 from the singular values), with JAX's errors for other orders.
fn norm(interp: &mut Interp, x: Rc<Array>, ord: Option<&Value>, axis: Option<&Value>, keepdims: bool) -> PyResult<Value> {
    let x = as_inexact(interp, &x)?;
    let nd = x.aval.ndim();
    if axis.is_none() && ord.is_none() {
        return sum_of_squares_root(interp, &x, None, keepdims).map(Value::Array);
    }
    let axes = match axis {
        None => (0..nd).collect(),
        Some(_) => axes_arg(interp, axis, nd)?.unwrap_or_default(),
    };
    let Some(kind) = ord.map(order).unwrap_or(Some(Order::Number(2.0))) else {
        return Ok(Value::opaque("norm with this ord"));
    };
    let dt = x.aval.dtype;
    let abs = |interp: &mut Interp| unary_prim(interp, UnaryPrim::Abs, &x);
    match axes.as_slice() {
        [axis] => {
            let axes = Some(vec![*axis]);
            match kind {
                Order::Number(o) if o == 2.0 || ord.is_none() => sum_of_squares_root(interp, &x, axes, keepdims).map(Value::Array),
                Order::Number(o) if o == f64::INFINITY => {
                    let a = abs(interp)?;
                    let r = reduce(interp, &a, ReduceOp::Max, axes, keepdims, None)?;
                    at_least_zero(interp, &r).map(Value::Array)
                }
                Order::Number(o) if o == f64::NEG_INFINITY => {
                    let a = abs(interp)?;
                    reduce(interp, &a, ReduceOp::Min, axes, keepdims, None).map(Value::Array)
                }
                Order::Number(o) if o == 0.0 => {
                    let zero = full(interp, &[], 0.0, dt)?;
                    let nonzero = compare_arrays(interp, CmpPrim::Ne, &x, &zero)?;
                    reduce(interp, &nonzero, ReduceOp::Sum, axes, keepdims, Some(dt)).map(Value::Array)
                }
                Order::Number(o) if o == 1.0 => {
                    let a = abs(interp)?;
                    reduce(interp, &a, ReduceOp::Sum, axes, keepdims, None).map(Value::Array)
                }
                Order::Number(o) => {
                    // sum(|x| ** ord) ** (1 / ord), both powers of arrays of x's dtype.
                    let a = abs(interp)?;
                    let power = full(interp, &[], o, dt)?;
                    let powered = binary_prim(interp, BinaryPrim::Pow, &a, &power)?;
                    let sum = reduce(interp, &powered, ReduceOp::Sum, axes, keepdims, None)?;
                    let inverse = full(interp, &[], 1.0 / eval::round_to(o, dt), dt)?;
                    binary_prim(interp, BinaryPrim::Pow, &sum, &inverse).map(Value::Array)
                }
                Order::Name(name) => {
                    let mut message = format!("Invalid order '{name}' for vector norm.");
                    if name == "inf" {
                        message += "Use 'jax.numpy.inf' instead.";
                    } else if name == "-inf" {
                        message += "Use '-jax.numpy.inf' instead.";
                    }
                    Err(interp.value_error(message))
                }
            }
        }
        [row, col] => {
            let (row, col) = (*row, *col);
            let duplicate = row == col;
            match kind {
                // JAX: ±1 and ±inf reduce one axis and then the other; every other matrix
                // order fails on a repeated axis (a reduction's or a transpose's error).
                Order::Number(o) if duplicate && !(o.abs() == 1.0 || o.is_infinite()) => Ok(Value::opaque("norm over a repeated axis")),
                Order::Name(_) if duplicate => Ok(Value::opaque("norm over a repeated axis")),
                Order::Name(n) if n == "fro" || n == "f" => {
                    sum_of_squares_root(interp, &x, Some(vec![row, col]), keepdims).map(Value::Array)
                }
                Order::Number(_) if ord.is_none() => sum_of_squares_root(interp, &x, Some(vec![row, col]), keepdims).map(Value::Array),
                Order::Number(o) if o.abs() == 1.0 || o.is_infinite() => {
                    // The largest (smallest) absolute column sum for ±1, row sum for ±inf.
                    let (summed, mut other) = if o.abs() == 1.0 { (row, col) } else { (col, row) };
                    if !keepdims && other > summed {
                        other -= 1;
                    }
                    let a = abs(interp)?;
                    let sums = reduce(interp, &a, ReduceOp::Sum, Some(vec![summed]), keepdims, None)?;
                    if o > 0.0 {
                        let r = reduce(interp, &sums, ReduceOp::Max, Some(vec![other]), keepdims, None)?;
                        at_least_zero(interp, &r).map(Value::Array)
                    } else {
                        reduce(interp, &sums, ReduceOp::Min, Some(vec![other]), keepdims, None).map(Value::Array)
                    }
                }
                Order::Number(o) if o == 2.0 || o == -2.0 => singular_value_norm(interp, &x, row, col, Some(o > 0.0), keepdims),
                Order::Name(n) if n == "nuc" => singular_value_norm(interp, &x, row, col, None, keepdims),
                _ => {
                    let shown = order_text(interp, ord.unwrap_or(&Value::None))?;
                    Err(interp.value_error(format!("Invalid order '{shown}' for matrix norm.")))
                }
            }
        }
        _ => {
            let list: Vec<String> = axes.iter().map(|a| a.to_string()).collect();
            let tuple = if list.len() == 1 { format!("({},)", list[0]) } else { format!("({})", list.join(", ")) };
            Err(interp.value_error(format!(
                "Improper number of axes for norm: axis={tuple}. Pass one axis to compute a vector-norm, or two axes to compute a matrix-norm."
            )))
        }
    }
}

/// `sqrt(sum(x * x, axes))`: the 2-norm of vectors, the Frobenius norm of matrices.
fn sum_of_squares_root(interp: &mut Interp, x: &Rc<Array>, axes: Option<Vec<usize>>, keepdims: bool) -> PyResult<Rc<Array>> {
    let squares = binary_prim(interp, BinaryPrim::Mul, x, x)?;
    let sum = reduce(interp, &squares, ReduceOp::Sum, axes, keepdims, None)?;
    unary_prim(interp, UnaryPrim::Sqrt, &sum)
}

/// `lax.max(r, 0)`: `amax(..., initial=0)`, which an empty axis leaves at 0.
fn at_least_zero(interp: &mut Interp, r: &Rc<Array>) -> PyResult<Rc<Array>> {
    let zero = full(interp, &[], 0.0, r.aval.dtype)?;
    binary_prim(interp, BinaryPrim::Max, r, &zero)
}

/// The matrix norms from the singular values over axes `row` and `col`: the largest
/// (`largest = Some(true)`, ord 2), the smallest (`Some(false)`, ord -2) or their sum
/// (`None`, the nuclear norm).
fn singular_value_norm(
    interp: &mut Interp,
    x: &Rc<Array>,
    row: usize,
    col: usize,
    largest: Option<bool>,
    keepdims: bool,
) -> PyResult<Value> {
    let nd = x.aval.ndim();
    let mut perm: Vec<usize> = (0..nd).filter(|&d| d != row && d != col).collect();
    perm.extend([row, col]);
    let moved = transpose(interp, x, Some(perm))?;
    let s = svd_values(interp, &moved)?;
    if largest == Some(false) && s.aval.shape[nd - 2] == 0 {
        return Err(interp.value_error("zero-size array to reduction operation min which has no identity"));
    }
    let last = Some(vec![nd - 2]);
    let y = match largest {
        Some(true) => {
            let r = reduce(interp, &s, ReduceOp::Max, last, false, None)?;
            at_least_zero(interp, &r)?
        }
        Some(false) => reduce(interp, &s, ReduceOp::Min, last, false, None)?,
        None => reduce(interp, &s, ReduceOp::Sum, last, false, None)?,
    };
    if !keepdims {
        return Ok(Value::Array(y));
    }
    let shape: Vec<usize> = (0..nd).map(|d| if d == row || d == col { 1 } else { x.aval.shape[d] }).collect();
    reshape_raw(interp, &y, &shape).map(Value::Array)
}

/// `jnp.linalg.cond(x, p)`: `s[0] / s[-1]` for `p` None or 2 (an infinity or NaN as the
/// division gives it), otherwise `norm(x, p) · norm(inv(x), p)` with a NaN from a singular
/// `x` turned into `inf` (where `x` itself holds no NaN).
fn cond(interp: &mut Interp, x: Rc<Array>, p: Option<&Value>) -> PyResult<Value> {
    let nd = x.aval.ndim();
    let shape = x.aval.shape_tuple();
    if nd < 2 {
        return Err(interp.value_error(format!("jnp.linalg.cond: input array must be at least 2D; got arr.shape={shape}")));
    }
    let (rows, cols) = (x.aval.shape[nd - 2], x.aval.shape[nd - 1]);
    if rows == 0 || cols == 0 {
        return Err(interp.value_error(format!("jnp.linalg.cond: input array must not be empty; got arr.shape={shape}")));
    }
    let x = as_inexact(interp, &x)?;
    let kind = match p {
        None => Order::Number(2.0),
        Some(v) => match order(v) {
            Some(k) => k,
            None => return Ok(Value::opaque("cond with this p")),
        },
    };
    let k = rows.min(cols);
    let r = match kind {
        Order::Number(o) if o == 2.0 || o == -2.0 => {
            let s = svd_values(interp, &x)?;
            let (first, last) = (last_axis_element(interp, &s, 0)?, last_axis_element(interp, &s, k - 1)?);
            if o == 2.0 {
                return binary_prim(interp, BinaryPrim::Div, &first, &last).map(Value::Array);
            }
            binary_prim(interp, BinaryPrim::Div, &last, &first)?
        }
        _ => {
            if rows != cols {
                let shown = interp.repr(p.unwrap_or(&Value::None))?;
                return Err(interp.value_error(format!("jnp.linalg.cond: for p={shown}, array must be square; got arr.shape={shape}")));
            }
            let inverse = inv(interp, &x)?;
            let axes = Value::tuple(vec![Value::Int(-2), Value::Int(-1)]);
            let Value::Array(norm_x) = norm(interp, x.clone(), p, Some(&axes), false)? else {
                return Ok(Value::opaque("cond"));
            };
            let Value::Array(norm_inv) = norm(interp, inverse, p, Some(&axes), false)? else {
                return Ok(Value::opaque("cond"));
            };
            binary_prim(interp, BinaryPrim::Mul, &norm_x, &norm_inv)?
        }
    };
    // jnp.where(isnan(r) & ~isnan(x).any(axis=(-2, -1)), inf, r)
    let r_nan = compare_arrays(interp, CmpPrim::Ne, &r, &r)?;
    let x_nan = compare_arrays(interp, CmpPrim::Ne, &x, &x)?;
    let any = reduce(interp, &x_nan, ReduceOp::Or, Some(vec![nd - 2, nd - 1]), false, None)?;
    let clean = unary_prim(interp, UnaryPrim::Not, &any)?;
    let singular = binary_prim(interp, BinaryPrim::And, &r_nan, &clean)?;
    let inf = full(interp, &[], f64::INFINITY, r.aval.dtype)?;
    select(interp, &singular, &inf, &r).map(Value::Array)
}
