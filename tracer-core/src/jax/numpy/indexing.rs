//! Indexing: `x[idx]` (basic, integer-array and boolean-mask indexing), the gather modes
//! and fills of `.at[]` and `take_along_axis`, and the indexing functions of the surface
//! (`take`, `take_along_axis`, `diagonal`, `lax.dynamic_slice` and its update).

use super::*;

/// The indexing functions of the surface dispatch (`dispatch::family` routes them here).
pub(super) fn serve(interp: &mut Interp, cx: &Call) -> PyResult<Value> {
    use JaxFn as F;
    let Call { f, p, c, .. } = *cx;
    match f {
        F::Take => {
            let a = arr!(interp, cx, 0, "a");
            let mut ix = arr!(interp, cx, 1, "indices");
            let axis = single_axis(interp, p.get(2, "axis"), a.aval.ndim())?;
            let (src, n) = match axis {
                Some(ax) => (a.clone(), a.aval.shape[ax]),
                // `axis=None` takes from the flattened array.
                None => {
                    let n = a.aval.shape.iter().product();
                    (reshape_raw(interp, &a, &[n])?, n)
                }
            };
            // `jnp.take`'s modes: "fill" (the default) counts negative indices from the end
            // and fills what is still out of bounds; "clip" clamps the indices as given; "wrap"
            // takes them modulo the axis' length.
            let (mode, fill_value, item) = match p.get(4, "mode") {
                None => (IndexMode::FillOrDrop, Some(FillValue::Float(f64::NAN)), IndexItem::Array),
                Some(Value::Str(m)) => match &**m {
                    "fill" => (IndexMode::FillOrDrop, Some(FillValue::Float(f64::NAN)), IndexItem::Array),
                    "clip" => (IndexMode::Clip, None, IndexItem::RawArray),
                    "wrap" => {
                        let len = Array::scalar(n as f64, ix.aval.dtype, true);
                        ix = floor_divide_or_remainder(interp, BinOp::Mod, &ix, &len)?;
                        (IndexMode::PromiseInBounds, None, IndexItem::Array)
                    }
                    "raise" => {
                        return Err(interp.raise(
                            "NotImplementedError",
                            Code::PythonException,
                            "The 'raise' mode to jnp.take is not supported.",
                        ))
                    }
                    other => return Err(interp.value_error(format!("Invalid mode '{other}' for np.take"))),
                },
                Some(_) => return Ok(Value::opaque("jnp.take with a mode object")),
            };
            let fill_value = match (fill_value, fill_arg(p.get(7, "fill_value"))) {
                (None, _) => None,
                (Some(_), Some(Some(f))) => Some(f),
                (Some(_), Some(None)) => return Ok(Value::opaque("jnp.take with an unknown fill_value")),
                (Some(_), None) => Some(default_fill(a.aval.dtype)),
            };
            let prim = |index| Prim::Gather { mode, fill_value, index };
            match axis {
                Some(ax) => {
                    let mut shape: Vec<usize> = a.aval.shape[..ax].to_vec();
                    shape.extend(ix.aval.shape.iter().copied());
                    shape.extend(a.aval.shape[ax + 1..].iter().copied());
                    let mut index: Vec<IndexItem> =
                        a.aval.shape[..ax].iter().map(|&n| IndexItem::Slice { start: 0, len: n, step: 1 }).collect();
                    index.push(item);
                    apply1(interp, prim(index), &[src, ix]).map(Value::Array)
                }
                None => apply1(interp, prim(vec![item]), &[src, ix.clone()]).map(Value::Array),
            }
        }
        F::TakeAlongAxis => {
            let a = arr!(interp, cx, 0, "arr");
            let ix = arr!(interp, cx, 1, "indices");
            let nd = a.aval.ndim();
            let axis = match p.get(2, "axis") {
                Some(Value::Int(k)) => Some(normalize_axis(interp, *k, nd)?),
                _ => None,
            };
            let fits = ix.aval.ndim() == nd
                && ix.aval.dtype.is_integer()
                && (0..nd).all(|d| Some(d) == axis || ix.aval.shape[d] == a.aval.shape[d] || ix.aval.shape[d] == 1);
            let (Some(axis), true) = (axis, fits) else {
                return apply1(interp, Prim::opaque("take_along_axis", a.aval.with_shape(&ix.aval.shape)), &[a.clone(), ix.clone()])
                    .map(Value::Array);
            };
            // `mode=None` is "fill" with JAX's default fill for the dtype.
            let Some((mode, fill_value)) =
                gather_mode(interp, p.get(3, "mode"), p.get(4, "fill_value"), a.aval.dtype, IndexMode::FillOrDrop)?
            else {
                return Ok(Value::opaque("take_along_axis with an unknown mode or fill_value"));
            };
            // A gather with `ix` along `axis` and the position itself along every other axis.
            let shape: Vec<usize> = (0..nd).map(|d| if d == axis { ix.aval.shape[d] } else { a.aval.shape[d] }).collect();
            let mut ins = vec![a.clone()];
            for d in 0..nd {
                if d == axis {
                    ins.push(ix.clone());
                    continue;
                }
                let mut s = vec![1; nd];
                s[d] = shape[d];
                ins.push(Array::built(Aval::new(&s, DType::I32), || ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&s), |i| i[d] as f64)));
            }
            let prim = Prim::Gather { mode, fill_value, index: vec![IndexItem::Array; nd] };
            apply1(interp, prim, &ins).map(Value::Array)
        }
        F::LaxDynamicSlice | F::LaxDynamicSliceInDim => {
            let a = arr!(interp, cx, 0, "operand");
            // `dynamic_slice_in_dim` counts a negative axis from the end; past the rank it is
            // JAX's IndexError, not modelled.
            let nd = a.aval.ndim() as i64;
            let axis = match p.get(3, "axis").and_then(crate::interp::ops::as_int).unwrap_or(0) {
                ax if ax < 0 => ax + nd,
                ax => ax,
            };
            if f == F::LaxDynamicSliceInDim && !(0..nd).contains(&axis) {
                return Ok(Value::opaque("dynamic_slice_in_dim"));
            }
            let axis = axis as usize;
            let shape: Vec<usize> = if f == F::LaxDynamicSlice {
                match shape_arg(interp, p.get(2, "slice_sizes").unwrap_or(&Value::None))? {
                    Some(s) => s,
                    None => return Ok(Value::opaque("dynamic_slice")),
                }
            } else {
                let size = p.get(2, "slice_size").and_then(crate::interp::ops::as_int).unwrap_or(1);
                let Ok(size) = usize::try_from(size) else { return Ok(Value::opaque("dynamic_slice_in_dim")) };
                let mut s = a.aval.shape.to_vec();
                s[axis] = size;
                s
            };
            let starts = if f == F::LaxDynamicSlice {
                start_indices(interp, p.get(1, "start_indices"), &a)?
            } else {
                match p.get(1, "start_index").map(|v| operand(interp, v)).transpose()? {
                    Some(Operand::Array(i)) if i.aval.ndim() == 0 && i.aval.dtype.is_integer() && axis < a.aval.ndim() => {
                        let zero = Array::scalar(0.0, i.aval.dtype, i.aval.weak);
                        Some((0..a.aval.ndim()).map(|d| if d == axis { i.clone() } else { zero.clone() }).collect())
                    }
                    _ => None,
                }
            };
            let mut inputs = vec![a.clone()];
            inputs.extend(starts.unwrap_or_default());
            apply1(interp, Prim::DynamicSlice { sizes: shape.clone() }, &inputs).map(Value::Array)
        }
        F::LaxDynamicUpdateSlice => {
            // Python binds the arguments before lax looks at any of them.
            if p.get(2, "start_indices").is_none() {
                let missing = ["operand", "update", "start_indices"].iter().enumerate().filter(|(i, n)| p.get(*i, n).is_none());
                let names: Vec<&str> = missing.map(|(_, n)| *n).collect();
                return Err(interp.type_error(crate::interp::call::missing_arguments("dynamic_update_slice", &names)));
            }
            let a = arr!(interp, cx, 0, "operand");
            let u = arr!(interp, cx, 1, "update");
            let starts = start_indices(interp, p.get(2, "start_indices"), &a)?;
            if u.aval.ndim() != a.aval.ndim() || u.aval.shape.iter().zip(a.aval.shape.iter()).any(|(x, y)| x > y) {
                return Err(interp.raise(
                    "TypeError",
                    Code::ShapeMismatch,
                    format!(
                        "dynamic_update_slice update shape must be smaller than operand shape, got update shape {} for operand shape {}.",
                        u.aval.shape_tuple(),
                        a.aval.shape_tuple()
                    ),
                ));
            }
            // lax promotes nothing: a weakly typed Python scalar aside, the dtypes must agree.
            if u.aval.dtype != a.aval.dtype && !u.aval.weak && !a.aval.weak {
                return Err(interp.raise(
                    "TypeError",
                    Code::DtypeMismatch,
                    format!(
                        "lax.dynamic_update_slice requires arguments to have the same dtypes, got {}, {}.",
                        a.aval.dtype.name(),
                        u.aval.dtype.name()
                    ),
                ));
            }
            let mut inputs = vec![a.clone(), u];
            inputs.extend(starts.unwrap_or_default());
            apply1(interp, Prim::DynamicUpdateSlice, &inputs).map(Value::Array)
        }
        F::Diagonal => {
            // `_default_diag` (JAX's path on CPU): the two axes moved last, then
            // `a[..., i, j]` with `i = arange(size)`, `j = arange(|offset|, |offset| + size)`
            // (swapped for a negative offset).
            let a = arr!(interp, cx, 0, "a");
            let nd = a.aval.ndim();
            if nd < 2 {
                return Err(interp.value_error("diagonal requires an array of at least two dimensions."));
            }
            let offset = match p.get(1, "offset") {
                None => 0,
                Some(v) => match interp.index_of(v)? {
                    Some(k) => k,
                    None => return Ok(Value::opaque("diagonal with an offset that is not an int")),
                },
            };
            let axis = |interp: &mut Interp, i: usize, name: &str, default: i64| -> PyResult<usize> {
                let k = match p.get(i, name) {
                    None => default,
                    Some(v) => interp.index_of(v)?.unwrap_or(default),
                };
                normalize_axis(interp, k, nd)
            };
            let (ax1, ax2) = (axis(interp, 2, "axis1", 0)?, axis(interp, 3, "axis2", 1)?);
            if ax1 == ax2 {
                return Ok(Value::opaque("diagonal of one axis twice"));
            }
            let (n1, n2) = (a.aval.shape[ax1] as i64, a.aval.shape[ax2] as i64);
            let size = (n1 + offset.min(0)).min(n2 - offset.max(0)).max(0) as usize;
            let mut perm: Vec<usize> = (0..nd).filter(|&d| d != ax1 && d != ax2).collect();
            perm.extend([ax1, ax2]);
            let moved = if perm.iter().enumerate().all(|(i, &d)| i == d) {
                a.clone()
            } else {
                apply1(interp, Prim::Transpose { permutation: perm }, &[a.clone()])?
            };
            let index_dtype = dtypes::default_int(c);
            let iota = |from: usize| {
                Array::built(Aval::new(&[size], index_dtype), || {
                    ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[size]), |k| (from + k[0]) as f64)
                })
            };
            let (i, j) = (iota(0), iota(offset.unsigned_abs() as usize));
            let (rows, cols) = if offset >= 0 { (i, j) } else { (j, i) };
            getitem(interp, &moved, &Value::tuple(vec![Value::Ellipsis, Value::Array(rows), Value::Array(cols)]))
        }
        // `dispatch::family` sends only the functions above here.
        _ => Ok(cx.unrouted()),
    }
}

/// `int(x)` / `float(x)` on an array.
/// `fill_value=` of a gather: `None` when not given, `Some(None)` when given but not a
/// Python scalar tracelens knows.
pub(super) fn fill_arg(v: Option<&Value>) -> Option<Option<FillValue>> {
    Some(match v? {
        Value::Bool(b) => Some(FillValue::Bool(*b)),
        Value::Int(i) => Some(FillValue::Int(i128::from(*i))),
        Value::Float(f) => Some(FillValue::Float(*f)),
        _ => None,
    })
}

/// The fill JAX's `jnp` functions resolve for `fill_value=None` in "fill" mode (`_gather`
/// and `jnp.take`): NaN for inexact dtypes, the minimum of a signed and the maximum of an
/// unsigned integer dtype, `True`.
pub fn default_fill(dtype: DType) -> FillValue {
    if dtype.is_bool() {
        FillValue::Bool(true)
    } else if dtype.is_integer() {
        let bound = if dtype.is_signed_integer() { f64::NEG_INFINITY } else { f64::INFINITY };
        match dtype {
            DType::I64 => FillValue::Int(i128::from(i64::MIN)),
            DType::U64 => FillValue::Int(i128::from(u64::MAX)),
            _ => FillValue::Int(super::eval::float_to_int(bound, dtype) as i128),
        }
    } else {
        FillValue::Float(f64::NAN)
    }
}

/// `mode=` and `fill_value=` of `.at[idx].get/set/...` and `take_along_axis`, as
/// `GatherScatterMode.from_any` reads the mode (`default` when it is `None`), with JAX's
/// `ValueError` for an unknown one. The fill only counts under `FillOrDrop`, where `None`
/// is JAX's default for the dtype. `None` overall for a mode or fill tracelens cannot read.
pub fn gather_mode(
    interp: &mut Interp,
    mode: Option<&Value>,
    fill: Option<&Value>,
    dtype: DType,
    default: IndexMode,
) -> PyResult<Option<(IndexMode, Option<FillValue>)>> {
    let mode = match mode {
        None => default,
        Some(Value::Str(m)) => match &**m {
            "clip" => IndexMode::Clip,
            "fill" | "drop" => IndexMode::FillOrDrop,
            "promise_in_bounds" => IndexMode::PromiseInBounds,
            other => return Err(interp.value_error(format!("Unknown gather mode \"{other}\""))),
        },
        Some(_) => return Ok(None),
    };
    if mode != IndexMode::FillOrDrop {
        return Ok(Some((mode, None)));
    }
    Ok(match fill_arg(fill) {
        None => Some((mode, Some(default_fill(dtype)))),
        Some(Some(f)) => Some((mode, Some(f))),
        Some(None) => None,
    })
}

/// `a` read at `sources[d][i]` along each axis `d`: a gather whose index arrays are
/// constants (`tile`, `repeat`, `roll`); the output's shape is the lengths of `sources`.
pub(super) fn gather_per_axis(interp: &mut Interp, a: &Rc<Array>, sources: Vec<Vec<usize>>) -> PyResult<Rc<Array>> {
    let nd = sources.len();
    let shape: Vec<usize> = sources.iter().map(Vec::len).collect();
    if nd == 0 || nd != a.aval.ndim() {
        return apply1(interp, Prim::opaque("gather", a.aval.with_shape(&shape)), &[a.clone()]);
    }
    let mut ins = vec![a.clone()];
    for (d, src) in sources.into_iter().enumerate() {
        let mut s = vec![1; nd];
        s[d] = src.len();
        let data = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&s), src.into_iter().map(|x| x as f64).collect())
            .map_err(|e| interp.value_error(e.to_string()))?;
        ins.push(Array::ready(Aval::new(&s, DType::I32), data));
    }
    let prim = Prim::Gather { mode: crate::jax::ir::IndexMode::Clip, fill_value: None, index: vec![IndexItem::Array; nd] };
    apply1(interp, prim, &ins)
}

/// `x[idx]` on an array: basic indexing (ints, slices, None, Ellipsis), integer-array
/// indexing, and boolean masks (which need concrete values, TL108).
pub fn getitem(interp: &mut Interp, a: &Rc<Array>, idx: &Value) -> PyResult<Value> {
    // A NumPy array indexed by a tracer (`TABLE[token]` inside jit): NumPy converts the index
    // with `__array__`, which every JAX tracer refuses. An integer index computed under
    // `grad` is a concrete array in JAX (`taint.rs`), which NumPy reads.
    if a.numpy.get() {
        let items: &[Value] = match idx {
            Value::Tuple(t) => t,
            other => std::slice::from_ref(other),
        };
        if let Some(Value::Array(t)) = items.iter().find(|v| matches!(v, Value::Array(t) if t.refuses_numpy_conversion())) {
            return Err(super::conversion::numpy_conversion_error(interp, t));
        }
    }
    let me = Value::Array(a.clone());
    in_numpy_mode(interp, &[&me], |interp| getitem_inner(interp, a, idx))
}

pub(super) fn getitem_inner(interp: &mut Interp, a: &Rc<Array>, idx: &Value) -> PyResult<Value> {
    let items: Vec<Value> = match idx {
        Value::Tuple(t) => (**t).clone(),
        other => vec![other.clone()],
    };
    let mut out_shape: Vec<usize> = Vec::new();
    let mut dim = 0usize;
    let nd = a.aval.ndim();
    let consumed = items.iter().filter(|v| !matches!(v, Value::None | Value::Ellipsis)).count();
    if items.iter().filter(|v| matches!(v, Value::Ellipsis)).count() > 1 {
        return Err(interp.raise("IndexError", Code::ShapeMismatch, "an index can only have a single ellipsis ('...')"));
    }
    let mut advanced: Vec<Rc<Array>> = Vec::new();
    let mut static_only = true;
    let mut starts = Vec::new();
    let mut limits = Vec::new();
    let mut strides = Vec::new();
    // The same expression for `gather` (where an index array takes part).
    let mut plan: Vec<IndexItem> = Vec::new();
    for it in &items {
        match it {
            Value::None => {
                out_shape.push(1);
                plan.push(IndexItem::NewAxis);
            }
            Value::Ellipsis => {
                let skip = nd.saturating_sub(consumed);
                for _ in 0..skip {
                    plan.push(IndexItem::Slice { start: 0, len: a.aval.shape[dim], step: 1 });
                    out_shape.push(a.aval.shape[dim]);
                    starts.push(0);
                    limits.push(a.aval.shape[dim]);
                    strides.push(1);
                    dim += 1;
                }
            }
            Value::Slice(sl) => {
                if dim >= nd {
                    return Err(too_many_indices(interp, nd, consumed));
                }
                for part in sl.iter() {
                    if let Value::Array(t) = part {
                        if t.is_tracer() && t.known().is_none() {
                            return Err(interp.raise(
                                "IndexError",
                                Code::DynamicShape,
                                format!(
                                    "Slice entries must be static integers. Got slice({}, {}, {}) at position {dim}",
                                    slice_part(&sl[0]),
                                    slice_part(&sl[1]),
                                    slice_part(&sl[2])
                                ),
                            ));
                        }
                    }
                }
                let n = a.aval.shape[dim] as i64;
                let (start, stop, step) = interp.slice_indices(sl, n)?;
                let len = crate::interp::ops::range_len(start, stop, step).max(0) as usize;
                if step < 0 {
                    static_only = false;
                }
                out_shape.push(len);
                plan.push(IndexItem::Slice { start, len, step });
                starts.push(start.max(0) as usize);
                limits.push(if step > 0 { stop.max(start) as usize } else { (start + 1).max(0) as usize });
                strides.push(step.unsigned_abs() as usize);
                dim += 1;
            }
            Value::Int(_) | Value::Bool(_) => {
                if dim >= nd {
                    return Err(too_many_indices(interp, nd, consumed));
                }
                let i = crate::interp::ops::as_int(it).unwrap_or(0);
                let n = a.aval.shape[dim] as i64;
                // JAX does not raise on an out-of-bounds static index: gather clamps it (TL206).
                let j = if i < -n || i >= n {
                    if n == 0 {
                        return Ok(Value::opaque("an index into an empty axis"));
                    }
                    let clamped = if i < 0 { 0 } else { n - 1 };
                    let site = interp.site();
                    let msg = format!(
                        "clamped index: index {i} is out of bounds for axis {dim} with size {n}; JAX does not raise, it clamps the index to {clamped} and returns that element"
                    );
                    interp.warn(Code::ClampedIndex, site, msg, Vec::new());
                    clamped as usize
                } else if i < 0 {
                    (i + n) as usize
                } else {
                    i as usize
                };
                plan.push(IndexItem::Int(j as i64));
                starts.push(j);
                limits.push(j + 1);
                strides.push(1);
                dim += 1;
            }
            Value::Opaque(_) => return Ok(Value::opaque("index by an unknown value")),
            Value::Array(ix) if ix_is_bool(it) => {
                if ix.is_tracer() && ix.known().is_none() {
                    return Err(interp.raise(
                        "NonConcreteBooleanIndexError",
                        Code::DynamicShape,
                        format!("Array boolean indices must be concrete; got {}\n", ix.aval.short()),
                    ));
                }
                return Ok(Value::Array(Array::unknown(a.aval.with_shape(&[0]), "boolean mask"))).and_then(|_| {
                    match eval::force(ix, interp.budgets.max_elements) {
                        Some(d) => {
                            let count = d.iter().filter(|&&x| x != 0.0).count();
                            let mut s = vec![count];
                            s.extend(a.aval.shape[ix.aval.ndim().min(nd)..].iter().copied());
                            Ok(Value::Array(Array::unknown(a.aval.with_shape(&s), "boolean mask")))
                        }
                        None => Ok(Value::opaque("boolean mask with unknown values")),
                    }
                });
            }
            Value::List(_) | Value::Array(_) => {
                let ix = match operand(interp, it)? {
                    Operand::Array(x) => x,
                    Operand::Unknown => return Ok(Value::opaque("index")),
                };
                if ix.aval.dtype.is_bool() {
                    return getitem(interp, a, &Value::Array(ix));
                }
                if !ix.aval.dtype.is_integer() {
                    // An index of the wrong dtype is a dtype error.
                    return Err(interp.raise(
                        "TypeError",
                        Code::DtypeMismatch,
                        format!("Indexer must have integer or boolean type, got indexer with type {}", ix.aval.dtype.name()),
                    ));
                }
                if dim >= nd {
                    return Err(too_many_indices(interp, nd, consumed));
                }
                static_only = false;
                plan.push(IndexItem::Array);
                advanced.push(ix);
                starts.push(0);
                limits.push(a.aval.shape[dim]);
                strides.push(1);
                out_shape.push(usize::MAX);
                dim += 1;
            }
            // JAX 0.10.2's messages: a Python float is NumPy's float64 whatever x64 says.
            Value::Float(_) => {
                return Err(interp.raise(
                    "TypeError",
                    Code::DtypeMismatch,
                    "Indexer must have integer or boolean type, got indexer with type float64",
                ));
            }
            Value::Str(_) => {
                let shown = interp.repr(it).unwrap_or_default();
                return Err(interp.raise(
                    "TypeError",
                    Code::PythonException,
                    format!("JAX does not support string indexing; got idx={shown}"),
                ));
            }
            Value::Dict(_) => {
                let shown = interp.repr(it).unwrap_or_default();
                return Err(interp.raise(
                    "IndexError",
                    Code::PythonException,
                    format!(
                        "only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and integer or boolean arrays are valid indices. Got {shown}"
                    ),
                ));
            }
            _ => return Ok(Value::opaque("index of an unsupported kind")),
        }
    }
    while dim < nd {
        out_shape.push(a.aval.shape[dim]);
        starts.push(0);
        limits.push(a.aval.shape[dim]);
        strides.push(1);
        dim += 1;
    }
    if !advanced.is_empty() {
        let shapes: Vec<&[usize]> = advanced.iter().map(|x| x.aval.shape.as_slice()).collect();
        // The selection's IndexError, if any, before the rule's.
        crate::jax::prims::indexing::kernels::selection_shape(&a.aval.shape, &plan, &shapes)
            .map_err(|m| interp.raise("IndexError", Code::ShapeMismatch, m))?;
        let mut ins = vec![a.clone()];
        ins.extend(advanced);
        let prim = Prim::Gather { mode: crate::jax::ir::IndexMode::PromiseInBounds, fill_value: None, index: plan };
        return apply1(interp, prim, &ins).map(Value::Array);
    }
    let full_slice =
        starts.iter().zip(&limits).zip(&strides).zip(a.aval.shape.iter()).all(|(((&s, &l), &st), &d)| s == 0 && l == d && st == 1);
    let mut cur = a.clone();
    if !full_slice && static_only {
        cur = apply1(interp, Prim::Slice { start: starts, limit: limits, strides }, &[cur])?;
    } else if !static_only {
        // A negative step: the same selection as a gather without index arrays.
        // The selection's IndexError, if any, before the rule's.
        crate::jax::prims::indexing::kernels::selection_shape(&a.aval.shape, &plan, &[])
            .map_err(|m| interp.raise("IndexError", Code::ShapeMismatch, m))?;
        let prim = Prim::Gather { mode: crate::jax::ir::IndexMode::PromiseInBounds, fill_value: None, index: plan };
        return apply1(interp, prim, &[cur]).map(Value::Array);
    }
    let final_shape: Vec<usize> = out_shape;
    reshape_raw(interp, &cur, &final_shape).map(Value::Array)
}

pub(super) fn ix_is_bool(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.aval.dtype.is_bool())
}

pub(super) fn slice_part(v: &Value) -> String {
    match v {
        Value::None => "None".into(),
        Value::Int(i) => i.to_string(),
        Value::Array(a) if a.is_tracer() => format!("JitTracer({})", a.aval.long_weak()),
        _ => "?".into(),
    }
}

pub(super) fn too_many_indices(interp: &Interp, nd: usize, given: usize) -> Flow {
    interp.raise(
        "IndexError",
        Code::ShapeMismatch,
        format!("Too many indices: {nd}-dimensional array indexed with {given} regular indices."),
    )
}
