//! Linear algebra and products on the surface: `dot`/`matmul`/`einsum`/`tensordot`
//! (products.rs), `trace`, and `jnp.linalg`/`jax.scipy.linalg` (`solve`, `inv`, `cholesky`,
//! `det`, `eigh`, `svd`, `qr`, ...); the compositions live in linalg_api.rs.

use super::*;

/// The linalg functions of the surface dispatch (`dispatch::family` routes them here).
pub(super) fn serve(interp: &mut Interp, cx: &Call) -> PyResult<Value> {
    use JaxFn as F;
    let Call { f, args, kwargs, p, c, .. } = *cx;
    match f {
        F::Dot | F::Matmul | F::Vdot | F::Inner => {
            let a = arr!(interp, cx, 0, "a");
            let b = arr!(interp, cx, 1, "b");
            if a.aval.ndim() == 0 || b.aval.ndim() == 0 {
                if f == F::Matmul {
                    return matmul(interp, &a, &b, "matmul").map(Value::Array);
                }
                return binary_prim(interp, BinaryPrim::Mul, &a, &b).map(Value::Array);
            }
            match f {
                F::Matmul => matmul(interp, &a, &b, "matmul"),
                F::Vdot => {
                    let (n, m) = (a.aval.size() as usize, b.aval.size() as usize);
                    let (a, b) = (reshape_raw(interp, &a, &[n])?, reshape_raw(interp, &b, &[m])?);
                    products::dot(interp, &a, &b)
                }
                F::Inner => {
                    let (la, lb) = (a.aval.ndim() - 1, b.aval.ndim() - 1);
                    products::contract(interp, &a, &b, vec![la], vec![lb])
                }
                _ => products::dot(interp, &a, &b),
            }
            .map(Value::Array)
        }
        F::Outer => {
            let a = arr!(interp, cx, 0, "a");
            let b = arr!(interp, cx, 1, "b");
            let (n, m) = (a.aval.size() as usize, b.aval.size() as usize);
            let a2 = reshape_raw(interp, &a, &[n, 1])?;
            let b2 = reshape_raw(interp, &b, &[1, m])?;
            binary_prim(interp, BinaryPrim::Mul, &a2, &b2).map(Value::Array)
        }
        F::Einsum => {
            if args.is_empty() && !kwargs.iter().any(|(k, _)| k.as_ref() == "subscripts") {
                return Err(interp.type_error("einsum() missing 1 required positional argument: 'subscripts'"));
            }
            let Value::Str(spec) = cx.first() else {
                return Ok(Value::opaque("einsum"));
            };
            let mut ops = Vec::new();
            for v in &args[1..] {
                ops.push(arr_or_unknown!(interp, v));
            }
            let preferred = dtype_arg(interp, p.get(usize::MAX, "preferred_element_type"))?;
            products::einsum(interp, &spec, &ops, preferred)
        }
        F::Tensordot => {
            let a = arr!(interp, cx, 0, "a");
            let b = arr!(interp, cx, 1, "b");
            let axes = p.get(2, "axes").cloned().unwrap_or(Value::Int(2));
            let (na, nb) = (a.aval.ndim(), b.aval.ndim());
            let (la, lb): (Vec<usize>, Vec<usize>) = match &axes {
                Value::Int(k) => {
                    if *k < 0 || *k as usize > na.min(nb) {
                        let message = format!(
                            "Number of tensordot axes (axes {k}) exceeds input ranks ({} and {})",
                            shape_tuple(&a.aval.shape),
                            shape_tuple(&b.aval.shape)
                        );
                        return Err(interp.type_error(message));
                    }
                    let k = *k as usize;
                    ((na - k..na).collect(), (0..k).collect())
                }
                other => {
                    let pair = interp.iterate(other)?;
                    let conv = |interp: &mut Interp, v: &Value, nd: usize| -> PyResult<Option<Vec<usize>>> {
                        if let Value::Int(i) = v {
                            return Ok(Some(vec![normalize_axis(interp, *i, nd)?]));
                        }
                        let mut axes = Vec::new();
                        for x in interp.iterate(v)? {
                            let Some(i) = crate::interp::ops::as_int(&x) else { return Ok(None) };
                            axes.push(normalize_axis(interp, i, nd)?);
                        }
                        Ok(Some(axes))
                    };
                    let (Some(x), Some(y)) = (pair.first(), pair.get(1)) else {
                        return Err(
                            interp.type_error("tensordot axes argument must be an int, a pair of ints, or a pair of lists/tuples of ints.")
                        );
                    };
                    let (Some(x), Some(y)) = (conv(interp, x, na)?, conv(interp, y, nb)?) else {
                        return Ok(Value::opaque("tensordot with axes not known"));
                    };
                    (x, y)
                }
            };
            products::contract(interp, &a, &b, la, lb).map(Value::Array)
        }
        F::Trace => {
            let a = arr!(interp, cx, 0, "a");
            let nd = a.aval.ndim();
            let int_arg = |i: usize, name: &str, default: i64| match p.get(i, name) {
                None => Some(default),
                Some(v) => crate::interp::ops::as_int(v),
            };
            let (Some(offset), Some(axis1), Some(axis2)) = (int_arg(1, "offset", 0), int_arg(2, "axis1", 0), int_arg(3, "axis2", 1)) else {
                // An offset or axis that is not a Python int: not modelled.
                let shape = a.aval.shape.iter().skip(2).copied().collect::<Vec<_>>();
                return apply1(interp, Prim::opaque("trace", a.aval.with_shape(&shape)), &[a.clone()]).map(Value::Array);
            };
            let (ax1, ax2) = (normalize_axis(interp, axis1, nd)?, normalize_axis(interp, axis2, nd)?);
            if ax1 == ax2 {
                return Err(interp.value_error(format!("axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")));
            }
            let dt = dtype_arg(interp, p.get(4, "dtype"))?;
            trace(interp, &a, offset, ax1, ax2, dt).map(Value::Array)
        }
        F::LinalgNorm | F::LinalgLstsq | F::LinalgMatrixRank | F::LinalgMatrixPower | F::LinalgCond | F::LinalgSvdvals => {
            linalg_api::call(interp, f, &p)
        }
        F::ScipyExpm => linalg_api::expm(interp, &p),
        F::ScipyLu | F::ScipyLuFactor | F::ScipyLuSolve | F::LaxLinalgLu | F::LaxLinalgLuPivotsToPermutation => {
            linalg_api::call_lu(interp, f, &p)
        }
        F::LaxDotGeneral => {
            let a = arr!(interp, cx, 0, "lhs");
            let b = arr!(interp, cx, 1, "rhs");
            let Some(numbers) = p.get(2, "dimension_numbers") else {
                return Err(interp.type_error("dot_general() missing 1 required positional argument: 'dimension_numbers'"));
            };
            let preferred = dtype_arg(interp, p.get(4, "preferred_element_type"))?.map(|d| dtypes::canonicalize(d, c));
            products::lax_dot_general(interp, &a, &b, numbers, preferred)
        }
        F::LinalgSolve => {
            let (a, b) = (arr!(interp, cx, 0, "a"), arr!(interp, cx, 1, "b"));
            let dt = float_of(interp, &[a.clone(), b.clone()]);
            if a.aval.ndim() < 2 {
                return Err(
                    interp.value_error(format!("left hand array must be at least two dimensional; got a.shape={}", a.aval.shape_tuple()))
                );
            }
            // JAX >= 0.5: `b` is a vector only when it is 1-D (`(m,m),(m)->(m)`), otherwise a
            // stack of matrices (`(m,m),(m,n)->(m,n)`) whose batch axes broadcast with `a`'s.
            let nd = a.aval.ndim();
            let (m, rows) = (a.aval.shape[nd - 1], a.aval.shape[nd - 2]);
            let vector = b.aval.ndim() == 1;
            let signature = if vector { "(m,m),(m)->(m)" } else { "(m,m),(m,n)->(m,n)" };
            let bm = if vector { b.aval.shape.first().copied() } else { b.aval.shape.get(b.aval.ndim().wrapping_sub(2)).copied() };
            for other in [Some(rows), bm] {
                if let Some(k) = other.filter(|&k| k != m) {
                    return Err(interp.value_error(format!(
                        "inconsistent size for core dimension 'm': {k} vs {m} on vectorized function with excluded=frozenset() and signature='{signature}'"
                    )));
                }
            }
            let b_batch: &[usize] = if vector { &[] } else { &b.aval.shape[..b.aval.ndim().saturating_sub(2)] };
            let batch = broadcast_shapes(&[&a.aval.shape[..nd - 2], b_batch]).map_err(|msg| interp.value_error(msg))?;
            let (a2, b2) = (convert(interp, &a, dt, false)?, convert(interp, &b, dt, false)?);
            let b2 = if vector { reshape_raw(interp, &b2, &[m, 1])? } else { b2 };
            let n = b2.aval.shape.last().copied().unwrap_or(1);
            let out: Vec<usize> = batch.iter().copied().chain([m, n]).collect();
            // jnp.vectorize broadcasts both operands to the batch axes.
            let a2 = broadcast_to_shape(interp, &a2, &[batch.as_slice(), &[m, m]].concat())?;
            let b2 = broadcast_to_shape(interp, &b2, &out)?;
            let x = linalg_api::solve_system(interp, &a2, &b2)?;
            if vector {
                return reshape_raw(interp, &x, &out[..out.len() - 1]).map(Value::Array);
            }
            Ok(Value::Array(x))
        }
        F::ScipyChoSolve | F::ScipySolveTriangular => {
            let (a, b) = if f == F::ScipyChoSolve {
                let factor = p.get(0, "c_and_lower").cloned().unwrap_or(Value::None);
                let parts = interp.iterate(&factor)?;
                let c0 = parts.first().cloned().unwrap_or(Value::None);
                (arr_or_unknown!(interp, &c0), arr!(interp, cx, 1, "b"))
            } else {
                (arr!(interp, cx, 0, "a"), arr!(interp, cx, 1, "b"))
            };
            let dt = float_of(interp, &[a.clone(), b.clone()]);
            let n = a.aval.shape.last().copied().unwrap_or(0);
            if a.aval.ndim() < 2 || a.aval.shape[a.aval.ndim() - 2] != n {
                return Err(interp.raise(
                    "ValueError",
                    Code::ShapeMismatch,
                    format!("The last two dimensions of a must be square; got a.shape={}", a.aval.shape_tuple()),
                ));
            }
            // JAX's `jnp.vectorize` signatures: `b` is a (stack of) vector(s) when it is 1-D, or
            // has one axis fewer than `a` and ends in `n`; otherwise a stack of `(n, k)`
            // matrices. The batch axes of `a` and `b` broadcast.
            let (a_nd, b_nd) = (a.aval.ndim(), b.aval.ndim());
            let vector = b_nd == 1 || (a_nd == b_nd + 1 && b.aval.shape.last() == Some(&n));
            let (signature, core) = if vector { ("(n,n),(n)->(n)", 1) } else { ("(n,n),(n,k)->(n,k)", 2) };
            if b_nd < core {
                return Ok(Value::opaque("solve of a scalar"));
            }
            let bn = b.aval.shape[b_nd - core];
            if bn != n {
                return Err(interp.value_error(format!(
                    "inconsistent size for core dimension 'n': {bn} vs {n} on vectorized function with excluded=frozenset() and signature='{signature}'"
                )));
            }
            let batch = broadcast_shapes(&[&a.aval.shape[..a_nd - 2], &b.aval.shape[..b_nd - core]]).map_err(|m| interp.value_error(m))?;
            let (a2, b2) = (convert(interp, &a, dt, false)?, convert(interp, &b, dt, false)?);
            // The triangular solves JAX binds: `solve_triangular`'s one, and `cho_solve`'s two
            // (`c x = b` through `cᵀ`: lower `L y = b, Lᵀ x = y`; upper `Uᵀ y = b, U x = y`).
            let solves: Vec<(bool, bool)> = if f == F::ScipyChoSolve {
                let factor = p.get(0, "c_and_lower").cloned().unwrap_or(Value::None);
                let parts = interp.iterate(&factor)?;
                let lower = match parts.get(1) {
                    Some(v) => interp.truthy(v)?,
                    None => false,
                };
                vec![(lower, !lower), (lower, lower)]
            } else {
                let lower = match p.get(3, "lower") {
                    Some(v) => interp.truthy(v)?,
                    None => false,
                };
                let trans = match p.get(2, "trans") {
                    Some(Value::Str(t)) => &**t != "N",
                    Some(v) => crate::interp::ops::as_int(v).unwrap_or(0) != 0,
                    None => false,
                };
                vec![(lower, trans)]
            };
            let unit_diagonal = match p.get(4, "unit_diagonal") {
                Some(v) if f == F::ScipySolveTriangular => interp.truthy(v)?,
                _ => false,
            };
            // Both broadcast to the batch axes, a vector `b` as `b[..., None]`.
            let a_shape: Vec<usize> = batch.iter().copied().chain([n, n]).collect();
            let a2 = broadcast_to_shape(interp, &a2, &a_shape)?;
            let b_core = &b2.aval.shape[b_nd - core..];
            let b_shape: Vec<usize> = batch.iter().chain(b_core).copied().collect();
            let b2 = broadcast_to_shape(interp, &b2, &b_shape)?;
            let out_shape = b_shape.clone();
            let b3 = if vector { reshape_raw(interp, &b2, &[b_shape.as_slice(), &[1]].concat())? } else { b2 };
            let mut x = b3;
            for (lower, transpose_a) in solves {
                let op = LinalgOp::TriangularSolve { lower, transpose_a, unit_diagonal };
                x = apply1(interp, Prim::Linalg(op), &[a2.clone(), x])?;
            }
            if vector {
                x = reshape_raw(interp, &x, &out_shape)?;
            }
            Ok(Value::Array(x))
        }
        F::LinalgInv | F::ScipyInv | F::LinalgCholesky | F::ScipyCholesky | F::ScipyChoFactor => {
            // `jax.scipy.linalg.inv` is `jnp.linalg.inv`.
            let f = if f == F::ScipyInv { F::LinalgInv } else { f };
            let a = arr!(interp, cx, 0, "a");
            let dt = float_of(interp, &[a.clone()]);
            let nd = a.aval.ndim();
            if f == F::LinalgInv && (nd < 2 || a.aval.shape[nd - 1] != a.aval.shape[nd - 2]) {
                return Err(interp.value_error(format!("Argument to inv must have shape [..., n, n], got {}.", a.aval.shape_tuple())));
            }
            let a2 = convert(interp, &a, dt, false)?;
            let lower = p.get(1, "lower").cloned().unwrap_or(Value::Bool(false));
            // jax.scipy.linalg's factor is upper triangular unless `lower=True`.
            let upper = matches!(f, F::ScipyCholesky | F::ScipyChoFactor) && !matches!(lower, Value::Bool(true));
            let square = nd >= 2 && a.aval.shape[nd - 1] == a.aval.shape[nd - 2];
            let out = if !square {
                apply1(interp, Prim::opaque(if f == F::LinalgInv { "inv" } else { "cholesky" }, a.aval.with_dtype(dt)), &[a2])?
            } else {
                if f == F::LinalgInv {
                    return linalg_api::inv(interp, &a2).map(Value::Array);
                }
                let op = LinalgOp::Cholesky;
                let mut perm: Vec<usize> = (0..nd).collect();
                perm.swap(nd - 1, nd - 2);
                // `cholesky(a.mT).mT`, as jax.scipy.linalg factors the upper triangle (the
                // kernel symmetrises either way; the derivative sees the transposed tangent).
                let a2 = if upper { apply1(interp, Prim::Transpose { permutation: perm.clone() }, &[a2.clone()])? } else { a2 };
                let out = apply1(interp, Prim::Linalg(op), &[a2])?;
                if upper {
                    apply1(interp, Prim::Transpose { permutation: perm }, &[out.clone()])?
                } else {
                    out
                }
            };
            if f == F::ScipyChoFactor {
                return Ok(Value::tuple(vec![Value::Array(out), lower]));
            }
            Ok(Value::Array(out))
        }
        F::LinalgPinv => {
            let a = arr!(interp, cx, 0, "a");
            let dt = float_of(interp, &[a.clone()]);
            let mut s = a.aval.shape.to_vec();
            let nd = s.len();
            if nd >= 2 {
                s.swap(nd - 1, nd - 2);
            }
            let (rtol, rcond) = (p.get(1, "rtol"), p.get(usize::MAX, "rcond"));
            if rtol.is_some() && rcond.is_some() {
                return Err(interp.value_error("pinv: only one of rtol and rcond may be specified."));
            }
            let hermitian = match p.get(2, "hermitian") {
                Some(v) => interp.truthy(v)?,
                None => false,
            };
            let mut a2 = convert(interp, &a, dt, false)?;
            let square = nd >= 2 && a.aval.shape[nd - 1] == a.aval.shape[nd - 2];
            // JAX's cutoff is `rtol · s_max`, `rtol` defaulting to `10 · max(m, n) · eps`;
            // a given one (broadcast over the batch axes) is the kernel's second operand.
            // `hermitian=True` decomposes the symmetrised matrix (`svd` through `eigh`), and
            // so does its derivative. 16-bit floats raise JAX's error when it is bound.
            let mut inputs = Vec::new();
            if let Some(r) = rtol.or(rcond) {
                let r = arr_or_unknown!(interp, r);
                let batch = &a.aval.shape[..nd.saturating_sub(2)];
                if broadcast_shapes(&[r.aval.shape.as_slice(), batch]).ok().as_deref() == Some(batch) {
                    let r = convert(interp, &r, dt, false)?;
                    inputs.push(broadcast_to_shape(interp, &r, batch)?);
                }
            }
            let computed = nd >= 2 && (!hermitian || square) && inputs.len() == usize::from(rtol.or(rcond).is_some());
            if hermitian && square {
                a2 = linalg_api::symmetrize(interp, &a2)?;
            }
            inputs.insert(0, a2);
            if !computed {
                // Not computed, a vector among them (JAX's unpacking error is not modelled).
                return apply1(interp, Prim::opaque("pinv", Aval::new(&s, dt)), &inputs).map(Value::Array);
            }
            apply1(interp, Prim::Linalg(LinalgOp::Pinv { double: dt == DType::F64 }), &inputs).map(Value::Array)
        }
        F::LinalgDet | F::ScipyDet | F::LinalgSlogdet => {
            // `jax.scipy.linalg.det` is `jnp.linalg.det`.
            let f = if f == F::ScipyDet { F::LinalgDet } else { f };
            let a = arr!(interp, cx, 0, "a");
            let dt = float_of(interp, &[a.clone()]);
            let nd = a.aval.ndim();
            if nd < 2 || a.aval.shape[nd - 1] != a.aval.shape[nd - 2] {
                let name = if f == F::LinalgDet { "_det()" } else { "slogdet" };
                return Err(interp.value_error(format!("Argument to {name} must have shape [..., n, n], got {}", a.aval.shape_tuple())));
            }
            let a = convert(interp, &a, dt, false)?;
            if f == F::LinalgSlogdet {
                let (sign, log) = linalg_api::slogdet(interp, &a)?;
                return linalg_api::results::named(interp, "SlogdetResult", vec![Value::Array(sign), Value::Array(log)]);
            }
            linalg_api::det(interp, &a).map(Value::Array)
        }
        F::LinalgEigh | F::LinalgEigvalsh => {
            let a = arr!(interp, cx, 0, "a");
            let dt = float_of(interp, &[a.clone()]);
            let nd = a.aval.ndim();
            let w: Vec<usize> = a.aval.shape[..nd.saturating_sub(1)].to_vec();
            let symmetrize = match p.get(2, "symmetrize_input") {
                Some(v) => interp.truthy(v)?,
                None => true,
            };
            let square = nd >= 2 && a.aval.shape[nd - 1] == a.aval.shape[nd - 2];
            let a2 = convert(interp, &a, dt, false)?;
            // `UPLO=None` is `lower=True`; with `symmetrize_input=False` LAPACK reads that
            // triangle only.
            let triangle = match p.get(1, "UPLO") {
                None => EighInput::Lower,
                Some(Value::Str(s)) if &**s == "L" => EighInput::Lower,
                Some(Value::Str(s)) if &**s == "U" => EighInput::Upper,
                Some(other) => {
                    let shown = match other {
                        Value::Str(s) => s.to_string(),
                        other => interp.repr(other)?,
                    };
                    return Err(interp.value_error(format!("UPLO must be one of None, 'L', or 'U', got {shown}")));
                }
            };
            // JAX's `eigh_jvp_rule` decomposes `symmetrize(a)`: a differentiated `eigh` of one
            // triangle gives the eigenpairs of `(a + aᵀ) / 2` as its primal outputs, not those
            // of the triangle. Whether JAX differentiates it depends on whether `a` depends on
            // the differentiated inputs, which is not known here: under `grad`/`jvp` a traced
            // operand's values are not computed.
            let differentiated = matches!(a.kind, ArrayKind::Tracer(_))
                && interp.jax.traces.iter().any(|t| matches!(t.kind, crate::jax::TraceKind::Grad | crate::jax::TraceKind::Jvp));
            let input = match (symmetrize, differentiated) {
                (true, _) => Some(EighInput::Symmetrized),
                (false, false) => Some(triangle),
                (false, true) => None,
            };
            let (wv, v) = if let (true, Some(input)) = (square, input) {
                let wv = apply1(interp, Prim::Linalg(LinalgOp::EighValues { input }), &[a2.clone()])?;
                let v = apply1(interp, Prim::Linalg(LinalgOp::EighVectors { input }), &[a2])?;
                (wv, v)
            } else {
                let wv = apply1(interp, Prim::opaque("eigh", Aval::new(&w, dt)), &[a2.clone()])?;
                let v = apply1(interp, Prim::opaque("eigh", a.aval.with_dtype(dt)), &[a2])?;
                (wv, v)
            };
            if f == F::LinalgEigvalsh {
                return Ok(Value::Array(wv));
            }
            linalg_api::results::named(interp, "EighResult", vec![Value::Array(wv), Value::Array(v)])
        }
        F::LinalgSvd | F::LinalgQr => {
            let a = arr!(interp, cx, 0, "a");
            let dt = float_of(interp, &[a.clone()]);
            let nd = a.aval.ndim();
            if nd < 2 {
                return Ok(Value::opaque("svd of a vector"));
            }
            let (m, n) = (a.aval.shape[nd - 2], a.aval.shape[nd - 1]);
            let a2 = convert(interp, &a, dt, false)?;
            if f == F::LinalgQr {
                let mode = match p.get(1, "mode") {
                    Some(Value::Str(mode)) => mode.to_string(),
                    _ => "reduced".to_string(),
                };
                if !matches!(mode.as_str(), "reduced" | "complete" | "r" | "raw") {
                    return Err(interp.value_error(format!("Unsupported QR decomposition mode '{mode}'")));
                }
                if mode == "raw" {
                    // `geqrf`'s packed factors, transposed, and the reflectors' scale factors.
                    let packed = apply1(interp, Prim::Linalg(LinalgOp::Geqrf), &[a2.clone()])?;
                    let taus = apply1(interp, Prim::Linalg(LinalgOp::GeqrfTaus), &[a2])?;
                    let h = linalg_api::swap_last_axes(interp, &packed)?;
                    return linalg_api::results::named(interp, "QRResult", vec![Value::Array(h), Value::Array(taus)]);
                }
                let full = mode == "complete";
                let (q_prim, r_prim) = (Prim::Linalg(LinalgOp::QrQ { full }), Prim::Linalg(LinalgOp::QrR { full }));
                let r = apply1(interp, r_prim, &[a2.clone()])?;
                if mode == "r" {
                    return Ok(Value::Array(r));
                }
                let q = apply1(interp, q_prim, &[a2])?;
                return linalg_api::results::named(interp, "QRResult", vec![Value::Array(q), Value::Array(r)]);
            }
            let full = match p.get(1, "full_matrices") {
                Some(v) => interp.truthy(v)?,
                None => true,
            };
            let compute_uv = match p.get(2, "compute_uv") {
                Some(v) => interp.truthy(v)?,
                None => true,
            };
            // `hermitian=True` goes through `eigh` of the symmetrised matrix in JAX: the SVD
            // of that matrix, whose singular values are the eigenvalues' magnitudes; its
            // vectors, defined up to sign, may differ from JAX's in sign (as `svd`'s do).
            let hermitian = match p.get(3, "hermitian") {
                Some(v) => interp.truthy(v)?,
                None => false,
            };
            let a2 = if hermitian && m == n { linalg_api::symmetrize(interp, &a2)? } else { a2 };
            let computed = !hermitian || m == n;
            let svd = |interp: &mut Interp, op: LinalgOp, a: &Rc<Array>| {
                let a = std::slice::from_ref(a);
                if computed {
                    apply1(interp, Prim::Linalg(op), a)
                } else {
                    apply_opaque1(interp, "svd", &Prim::Linalg(op), a)
                }
            };
            let s = svd(interp, LinalgOp::SvdValues, &a2)?;
            if !compute_uv {
                return Ok(Value::Array(s));
            }
            let u = svd(interp, LinalgOp::SvdU { full }, &a2)?;
            let vh = svd(interp, LinalgOp::SvdVh { full }, &a2)?;
            linalg_api::results::named(interp, "SVDResult", vec![Value::Array(u), Value::Array(s), Value::Array(vh)])
        }
        // `dispatch::family` sends only the functions above here.
        _ => Ok(cx.unrouted()),
    }
}

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
        apply1(interp, prim, &[])
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
