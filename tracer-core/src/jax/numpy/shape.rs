//! Shape functions: `reshape`, `transpose`, `concatenate`/`stack`/`split`, `squeeze`,
//! `expand_dims`, `broadcast_to` (with `lax.broadcast_to`'s errors), `tile`/`repeat`, flips
//! and rotations, `diff`, `roll` and `pad` (pad.rs), `shape`/`ndim`/`size`.

use super::*;

/// The shape functions of the surface dispatch (`dispatch::family` routes them here).
pub(super) fn serve(interp: &mut Interp, cx: &Call) -> PyResult<Value> {
    use JaxFn as F;
    let Call { f, kwargs, p, .. } = *cx;
    match f {
        F::Reshape => {
            let a = arr!(interp, cx, 0, "a");
            let shape = p.get(1, "shape").cloned().unwrap_or(Value::None);
            reshape(interp, &a, &shape)
        }
        F::Ravel => {
            let a = arr!(interp, cx, 0, "a");
            let n = a.aval.size() as usize;
            reshape_raw(interp, &a, &[n]).map(Value::Array)
        }
        F::Transpose => {
            let a = arr!(interp, cx, 0, "a");
            let perm = match p.get(1, "axes") {
                Some(Value::None) | None => None,
                Some(v) => {
                    let mut perm = Vec::new();
                    for x in interp.iterate(v)? {
                        let Some(i) = interp.index_of(&x)? else { return Ok(Value::opaque("transpose by unknown axes")) };
                        perm.push(normalize_axis(interp, i, a.aval.ndim())?);
                    }
                    Some(perm)
                }
            };
            transpose(interp, &a, perm).map(Value::Array)
        }
        F::Swapaxes | F::Moveaxis => {
            let a = arr!(interp, cx, 0, "a");
            let nd = a.aval.ndim();
            let i = interp.index_of(p.get(1, "axis1").unwrap_or(&Value::Int(0)))?.unwrap_or(0);
            let j = interp.index_of(p.get(2, "axis2").unwrap_or(&Value::Int(0)))?.unwrap_or(0);
            let (i, j) = (normalize_axis(interp, i, nd)?, normalize_axis(interp, j, nd)?);
            let mut perm: Vec<usize> = (0..nd).collect();
            if f == F::Swapaxes {
                perm.swap(i, j);
            } else {
                let x = perm.remove(i);
                perm.insert(j, x);
            }
            transpose(interp, &a, Some(perm)).map(Value::Array)
        }
        F::ExpandDims => {
            let a = arr!(interp, cx, 0, "a");
            let ax = interp.index_of(p.get(1, "axis").unwrap_or(&Value::Int(0)))?.unwrap_or(0);
            expand_dims(interp, &a, ax).map(Value::Array)
        }
        F::Squeeze => {
            let a = arr!(interp, cx, 0, "a");
            let axes = axes_arg(interp, p.get(1, "axis"), a.aval.ndim())?;
            let axes = axes.unwrap_or_else(|| a.aval.shape.iter().enumerate().filter(|(_, &d)| d == 1).map(|(i, _)| i).collect());
            for &ax in &axes {
                if a.aval.shape[ax] != 1 {
                    return Err(interp.raise(
                        "ValueError",
                        Code::ShapeMismatch,
                        format!(
                            "cannot select an axis to squeeze out which has size not equal to one, got shape={} and dimensions={}",
                            a.aval.shape_tuple(),
                            shape_tuple(&axes)
                        ),
                    ));
                }
            }
            apply1(interp, Prim::Squeeze { dimensions: axes }, &[a.clone()]).map(Value::Array)
        }
        F::BroadcastTo => {
            let a = arr!(interp, cx, 0, "array");
            let Some(shape) = shape_arg(interp, p.get(1, "shape").unwrap_or(&Value::None))? else {
                return Ok(Value::opaque("broadcast_to"));
            };
            broadcast_to_checked(interp, &a, &shape).map(Value::Array)
        }
        F::Concatenate | F::Hstack | F::Vstack => {
            let Some(arrays) = array_list(interp, &cx.named(0, if f == F::Concatenate { "arrays" } else { "tup" }))? else {
                return Ok(Value::opaque("concatenate"));
            };
            // `hstack` makes each array at least 1-d, `vstack` at least 2-d, as JAX does.
            let min_ndim = match f {
                F::Hstack => 1,
                F::Vstack => 2,
                _ => 0,
            };
            let arrays = arrays
                .iter()
                .map(|a| {
                    let mut a = a.clone();
                    while a.aval.ndim() < min_ndim {
                        a = expand_dims(interp, &a, 0)?;
                    }
                    Ok(a)
                })
                .collect::<PyResult<Vec<_>>>()?;
            let axis = match f {
                F::Concatenate => p.get(1, "axis").map(|v| interp.index_of(v)).transpose()?.flatten().unwrap_or(0),
                F::Hstack => {
                    if arrays.first().map(|a| a.aval.ndim()).unwrap_or(1) == 1 {
                        0
                    } else {
                        1
                    }
                }
                _ => 0,
            };
            concatenate(interp, &arrays, axis).map(Value::Array)
        }
        F::Stack => {
            let Some(arrays) = array_list(interp, &cx.named(0, "arrays"))? else {
                return Ok(Value::opaque("stack"));
            };
            if arrays.is_empty() {
                return Err(interp.value_error("Need at least one array to stack."));
            }
            let shape0 = arrays[0].aval.shape.clone();
            if arrays.iter().any(|a| a.aval.shape != shape0) {
                let shapes = arrays.iter().map(|a| a.aval.shape_tuple()).collect::<Vec<_>>().join(", ");
                return Err(interp.raise(
                    "ValueError",
                    Code::ShapeMismatch,
                    format!("All input arrays must have the same shape. Got {shapes}."),
                ));
            }
            let axis = p.get(1, "axis").map(|v| interp.index_of(v)).transpose()?.flatten().unwrap_or(0);
            let expanded = arrays.iter().map(|a| expand_dims(interp, a, axis)).collect::<PyResult<Vec<_>>>()?;
            concatenate(interp, &expanded, axis).map(Value::Array)
        }
        F::Split | F::ArraySplit => {
            let a = arr!(interp, cx, 0, "ary");
            let axis = p.get(2, "axis").map(|v| interp.index_of(v)).transpose()?.flatten().unwrap_or(0);
            let ax = normalize_axis(interp, axis, a.aval.ndim())?;
            let n = a.aval.shape[ax];
            let sections = p.get(1, "indices_or_sections").cloned().unwrap_or(Value::Int(1));
            let bounds: Vec<usize> = match &sections {
                Value::Int(k) => {
                    // `divmod(size, sections)`: `split` needs no rest; `array_split` makes the
                    // first `rest` parts one longer.
                    if *k == 0 {
                        return Err(interp.raise("ZeroDivisionError", Code::PythonException, "integer division or modulo by zero"));
                    }
                    if *k < 0 {
                        return Ok(Value::opaque("array_split into a negative number of sections"));
                    }
                    // Each part is an array and a slice in the trace: a few hundred bytes.
                    const PART_BYTES: u128 = 512;
                    if !interp.afford((*k as u128).saturating_mul(PART_BYTES), "the parts of array_split")? {
                        return Ok(Value::opaque("array_split into more parts than the memory budget holds"));
                    }
                    let k = *k as usize;
                    let (part, rest) = (n / k, n % k);
                    if f == F::Split && rest != 0 {
                        let message = format!("array split does not result in an equal division: rest is {rest}");
                        return Err(interp.raise("ValueError", Code::ShapeMismatch, message));
                    }
                    (0..=k).map(|i| i * part + i.min(rest)).collect()
                }
                other => {
                    let mut b = vec![0];
                    // An index may be an item of an array (`np.cumsum(sizes)[:-1]`); one that
                    // is not known leaves the parts' sizes unknown.
                    for x in interp.iterate(other)? {
                        let Some(i) = interp.index_of(&x)? else {
                            return Ok(Value::opaque("split at indices that are not known"));
                        };
                        let i = if i < 0 { i + n as i64 } else { i };
                        b.push(i.clamp(0, n as i64) as usize);
                    }
                    b.push(n);
                    b
                }
            };
            let mut parts = Vec::new();
            for w in bounds.windows(2) {
                let mut s = a.aval.shape.to_vec();
                s[ax] = w[1].saturating_sub(w[0]);
                let mut start = vec![0; s.len()];
                start[ax] = w[0].min(w[1]);
                let limit: Vec<usize> = start.iter().zip(&s).map(|(b, n)| b + n).collect();
                let slice = Prim::Slice { start, limit, strides: vec![1; s.len()] };
                parts.push(Value::Array(apply1(interp, slice, &[a.clone()])?));
            }
            Ok(interp.new_list(parts))
        }
        F::Tile | F::Repeat => {
            let a = arr!(interp, cx, 0, "a");
            let reps = p.get(1, "reps").or_else(|| p.get(1, "repeats")).cloned().unwrap_or(Value::Int(1));
            let total = p.get(usize::MAX, "total_repeat_length").filter(|t| !t.is_none()).cloned();
            if f == F::Repeat && (total.is_some() || !matches!(reps, Value::Int(_) | Value::Bool(_))) {
                let axis = single_axis(interp, p.get(2, "axis"), a.aval.ndim())?;
                let total = match &total {
                    Some(t) => match interp.index_of(t)? {
                        Some(t) if t >= 0 => Some(t as usize),
                        _ => return Ok(Value::opaque("repeat to a length that is not known")),
                    },
                    None => None,
                };
                return super::repeat_counts::repeat_by_counts(interp, &a, &reps, axis, total);
            }
            let shape: Vec<usize> = if f == F::Tile {
                let r: Vec<usize> = interp
                    .iterate(&match reps.clone() {
                        Value::Int(_) => Value::tuple(vec![reps.clone()]),
                        r => r,
                    })?
                    .iter()
                    .map(|x| crate::interp::ops::as_int(x).unwrap_or(1).max(0) as usize)
                    .collect();
                let nd = r.len().max(a.aval.ndim());
                let mut s = vec![1; nd - a.aval.ndim()];
                s.extend(a.aval.shape.iter().copied());
                let mut rr = vec![1; nd - r.len()];
                rr.extend(r);
                match s.iter().zip(&rr).map(|(x, y)| x.checked_mul(*y)).collect::<Option<Vec<usize>>>() {
                    Some(shape) => shape,
                    None => return Ok(Value::opaque("tile of more elements than a shape holds")),
                }
            } else {
                let k = crate::interp::ops::as_int(&reps).unwrap_or(1).max(0) as usize;
                match single_axis(interp, p.get(2, "axis"), a.aval.ndim())? {
                    Some(ax) => {
                        let mut s = a.aval.shape.to_vec();
                        match s[ax].checked_mul(k) {
                            Some(n) => s[ax] = n,
                            None => return Ok(Value::opaque("repeat of more elements than a shape holds")),
                        }
                        s
                    }
                    None => match usize::try_from(a.aval.size()).ok().and_then(|n| n.checked_mul(k)) {
                        Some(n) => vec![n],
                        None => return Ok(Value::opaque("repeat of more elements than a shape holds")),
                    },
                }
            };
            // One index per output element, and one index list per axis as long as the axis:
            // never made past the element budget (an empty axis makes the output empty, not
            // the other axes' index lists short).
            let out_size = shape.iter().fold(1u128, |acc, &d| acc.saturating_mul(d as u128));
            let index_lists: u128 = shape.iter().map(|&d| d as u128).sum();
            if out_size.max(index_lists) > interp.budgets.max_elements as u128 {
                let aval = a.aval.with_shape(&shape);
                return Ok(if a.is_tracer() {
                    Value::opaque("a tiled array too large to index")
                } else {
                    Value::Array(Array::unknown(aval, array::TOO_LARGE))
                });
            }
            // Each output element reads one input element: a gather with constant indices.
            if f == F::Tile {
                let mut s = vec![1; shape.len() - a.aval.ndim()];
                s.extend(a.aval.shape.iter().copied());
                let a = reshape_raw(interp, &a, &s)?;
                let sources = shape.iter().zip(&s).map(|(&out, &n)| (0..out).map(|i| i % n.max(1)).collect()).collect();
                return gather_per_axis(interp, &a, sources).map(Value::Array);
            }
            let k = crate::interp::ops::as_int(&reps).unwrap_or(1).max(1) as usize;
            let (a, ax) = match single_axis(interp, p.get(2, "axis"), a.aval.ndim())? {
                Some(ax) => (a, ax),
                None => (reshape_raw(interp, &a, &[a.aval.size() as usize])?, 0),
            };
            let sources = (0..shape.len()).map(|d| (0..shape[d]).map(|i| if d == ax { i / k } else { i }).collect()).collect();
            gather_per_axis(interp, &a, sources).map(Value::Array)
        }
        F::Flip => {
            let a = arr!(interp, cx, 0, "m");
            let axes = axes_arg(interp, p.get(1, "axis"), a.aval.ndim())?.unwrap_or_else(|| (0..a.aval.ndim()).collect());
            apply1(interp, Prim::Rev { dimensions: axes }, &[a.clone()]).map(Value::Array)
        }
        F::Fliplr | F::Flipud => {
            let a = Value::Array(arr!(interp, cx, 0, "m"));
            let axis = Value::Int(if f == F::Fliplr { 1 } else { 0 });
            call(interp, F::Flip, vec![a, axis], Vec::new())
        }
        // `flip`s and a `transpose` of the two axes, by `k % 4`.
        F::Rot90 => {
            let m = arr!(interp, cx, 0, "m");
            let nd = m.aval.ndim();
            if nd < 2 {
                return Err(interp.value_error(format!(
                    "rot90 requires its first argument to have ndim at least two, but got first argument of shape {}, which has ndim {nd}",
                    m.aval.shape_tuple()
                )));
            }
            let k = match p.get(1, "k") {
                None => 1,
                Some(v) => match interp.index_of(v)? {
                    Some(k) => k,
                    None => return Ok(Value::opaque("rot90 with k not an int")),
                },
            };
            let axes = match p.get(2, "axes") {
                None => vec![0, 1],
                Some(v) => {
                    let items = interp.iterate(v)?;
                    let axes: Option<Vec<i64>> = items.iter().map(crate::interp::ops::as_int).collect();
                    match axes {
                        Some(a) if a.len() == 2 => a,
                        _ => return Ok(Value::opaque("rot90 with axes not a pair of ints")),
                    }
                }
            };
            let (ax1, ax2) = (normalize_axis(interp, axes[0], nd)?, normalize_axis(interp, axes[1], nd)?);
            if ax1 == ax2 {
                return Err(interp.value_error("Axes must be different"));
            }
            let flip = |interp: &mut Interp, x: Value, ax: usize| call(interp, F::Flip, vec![x, Value::Int(ax as i64)], Vec::new());
            let mut perm: Vec<Value> = (0..nd as i64).map(Value::Int).collect();
            perm.swap(ax1, ax2);
            let perm = Value::tuple(perm);
            match k.rem_euclid(4) {
                0 => Ok(Value::Array(m)),
                2 => {
                    let once = flip(interp, Value::Array(m), ax1)?;
                    flip(interp, once, ax2)
                }
                1 => {
                    let flipped = flip(interp, Value::Array(m), ax2)?;
                    call(interp, F::Transpose, vec![flipped, perm], Vec::new())
                }
                _ => {
                    let turned = call(interp, F::Transpose, vec![Value::Array(m), perm], Vec::new())?;
                    flip(interp, turned, ax2)
                }
            }
        }
        F::Diff => diff(interp, &p),
        F::Roll => {
            let a = arr!(interp, cx, 0, "a");
            let Some(shift) = p.get(1, "shift").cloned() else {
                return Err(interp.type_error("roll() missing 1 required positional argument: 'shift'"));
            };
            match pad::roll(interp, &a, &shift, p.get(2, "axis"))? {
                Some(rolled) => Ok(Value::Array(rolled)),
                // A shift given as an array (JAX's `dynamic_slice` form): shapes only.
                None => apply1(interp, Prim::opaque("roll", a.aval.clone()), &[a.clone()]).map(Value::Array),
            }
        }
        F::Pad => {
            let a = arr!(interp, cx, 0, "array");
            let Some(pad_width) = p.get(1, "pad_width").cloned() else {
                return Err(interp.type_error("pad() missing 1 required positional argument: 'pad_width'"));
            };
            let mode = match p.get(2, "mode") {
                None => "constant".to_string(),
                Some(Value::Str(m)) => m.to_string(),
                Some(_) => return Ok(Value::opaque("pad with a callable mode")),
            };
            let Some(widths) = pad::pairs(interp, &pad_width, a.aval.ndim(), "pad_width")? else {
                return Ok(Value::opaque("pad"));
            };
            let options: Kwargs = kwargs.iter().filter(|(k, _)| !matches!(k.as_ref(), "array" | "pad_width" | "mode")).cloned().collect();
            match pad::pad(interp, &a, &widths, &mode, &options)? {
                Some(padded) => Ok(Value::Array(padded)),
                None => {
                    // Shapes only (linear_ramp, or an argument not known).
                    let shape: Vec<usize> = a
                        .aval
                        .shape
                        .iter()
                        .zip(&widths)
                        .map(|(&d, &(l, r))| d.saturating_add(l.max(0) as usize).saturating_add(r.max(0) as usize))
                        .collect();
                    apply1(interp, Prim::opaque("pad", a.aval.with_shape(&shape)), &[a.clone()]).map(Value::Array)
                }
            }
        }
        F::AtLeast1d | F::AtLeast2d => {
            let a = arr!(interp, cx, 0, "x");
            let want = if f == F::AtLeast1d { 1 } else { 2 };
            if a.aval.ndim() >= want {
                return Ok(Value::Array(a));
            }
            let mut s = vec![1; want - a.aval.ndim()];
            s.extend(a.aval.shape.iter().copied());
            reshape_raw(interp, &a, &s).map(Value::Array)
        }
        // What these read is the static shape, a Python tuple or int even of a tracer
        // (`int(0.5 * jnp.size(x))` inside `jit`); of an array tracelens does not know, a
        // tracer among them, it is a value it does not know, never a tracer.
        F::Shape | F::Ndim | F::Size if matches!(cx.p.get(0, "a"), Some(Value::Opaque(_))) => {
            Ok(Value::opaque(format!("jax.numpy.{}() of an unknown array", f.name())))
        }
        F::Shape => {
            let a = arr!(interp, cx, 0, "a");
            Ok(Value::tuple(a.aval.shape.iter().map(|&d| Value::Int(d as i64)).collect()))
        }
        F::Ndim => Ok(Value::Int(arr!(interp, cx, 0, "a").aval.ndim() as i64)),
        F::Size => Ok(Value::Int(arr!(interp, cx, 0, "a").aval.size() as i64)),
        F::LaxBroadcastInDim => {
            let a = arr!(interp, cx, 0, "operand");
            let Some(shape) = shape_arg(interp, p.get(1, "shape").unwrap_or(&Value::None))? else {
                return Ok(Value::opaque("broadcast_in_dim"));
            };
            apply1(interp, Prim::opaque("broadcast_in_dim", a.aval.with_shape(&shape)), &[a.clone()]).map(Value::Array)
        }
        // `dispatch::family` sends only the functions above here.
        _ => Ok(cx.unrouted()),
    }
}

/// Why `lax.broadcast_to` refuses `aval` for `shape`, in JAX's words; `None` when it can.
/// `jnp.broadcast_to` and `.at[]` updates go through it too.
pub fn broadcast_to_error(aval: &Aval, shape: &[usize]) -> Option<String> {
    if aval.ndim() > shape.len() {
        return Some(format!(
            "Cannot broadcast to shape with fewer dimensions: arr_shape={} shape={}",
            aval.shape_tuple(),
            shape_tuple(shape)
        ));
    }
    let offset = shape.len() - aval.ndim();
    if aval.shape.iter().zip(&shape[offset..]).any(|(&d, &s)| d != 1 && d != s) {
        let requested = Aval { shape: shape.into(), dtype: aval.dtype, weak: false };
        return Some(format!(
            "Incompatible types for broadcasting: input type={} and requested type={}",
            aval.long_weak(),
            requested.long()
        ));
    }
    None
}

/// `lax.broadcast_to(a, shape)` with its errors.
pub(super) fn broadcast_to_checked(interp: &mut Interp, a: &Rc<Array>, shape: &[usize]) -> PyResult<Rc<Array>> {
    if let Some(message) = broadcast_to_error(&a.aval, shape) {
        return Err(interp.raise("ValueError", Code::ShapeMismatch, message));
    }
    broadcast_to_shape(interp, a, shape)
}

/// `jnp.diff(a, n=1, axis=-1, prepend=None, append=None)` as JAX writes it: `prepend` and
/// `append` (a scalar broadcast to one slice) concatenated along the axis, then `n` times
/// `a[1:] - a[:-1]` (`!=` for booleans).
pub(super) fn diff(interp: &mut Interp, p: &Args) -> PyResult<Value> {
    use JaxFn as F;
    let Some(a) = p.get(0, "a") else {
        return Err(interp.type_error("diff() missing 1 required positional argument: 'a'"));
    };
    let Operand::Array(mut a) = operand(interp, a)? else {
        return Ok(Value::opaque("diff of an unknown value"));
    };
    let index = |interp: &mut Interp, i: usize, name: &str, default: i64| -> PyResult<Option<i64>> {
        match p.get(i, name) {
            None => Ok(Some(default)),
            Some(v) => interp.index_of(v),
        }
    };
    let (Some(n), Some(axis)) = (index(interp, 1, "n", 1)?, index(interp, 2, "axis", -1)?) else {
        return Ok(Value::opaque("diff"));
    };
    if n == 0 {
        return Ok(Value::Array(a));
    }
    if n < 0 {
        return Err(interp.value_error(format!("order must be non-negative but got {n}")));
    }
    let nd = a.aval.ndim();
    if nd == 0 {
        let message = format!("diff requires input that is at least one dimensional; got JitTracer({})", a.aval.long_weak());
        return Err(interp.value_error(message));
    }
    let ax = normalize_axis(interp, axis, nd)?;
    // `prepend` and `append`, a scalar broadcast to one slice along the axis.
    let mut edges = [None, None];
    for (edge, (i, name)) in edges.iter_mut().zip([(3, "prepend"), (4, "append")]) {
        let Some(v) = p.get(i, name).filter(|v| !v.is_none()) else { continue };
        let Operand::Array(x) = operand(interp, v)? else {
            return Ok(Value::opaque("diff with an unknown prepend or append"));
        };
        *edge = Some(if x.aval.ndim() == 0 {
            let mut shape = a.aval.shape.to_vec();
            shape[ax] = 1;
            broadcast_to_checked(interp, &x, &shape)?
        } else {
            x
        });
    }
    let [before, after] = edges;
    let parts: Vec<Value> = before.into_iter().chain(Some(a.clone())).chain(after).map(Value::Array).collect();
    if parts.len() > 1 {
        let list = interp.new_list(parts);
        let joined = call(interp, F::Concatenate, vec![list], vec![("axis".into(), Value::Int(ax as i64))])?;
        let Value::Array(joined) = joined else { return Ok(joined) };
        a = joined;
    }
    let op = if a.aval.dtype == DType::Bool { F::NotEqual } else { F::Subtract };
    for _ in 0..n {
        let len = a.aval.shape[ax];
        if len == 0 {
            break; // NumPy's slices of an empty axis stay empty
        }
        let hi = pad::slice_in_dim(interp, &a, ax, 1, len)?;
        let lo = pad::slice_in_dim(interp, &a, ax, 0, len - 1)?;
        let Value::Array(d) = call(interp, op, vec![Value::Array(hi), Value::Array(lo)], Vec::new())? else {
            return Ok(Value::opaque("diff"));
        };
        a = d;
    }
    Ok(Value::Array(a))
}

pub(super) fn concatenate(interp: &mut Interp, arrays: &[Rc<Array>], axis: i64) -> PyResult<Rc<Array>> {
    if arrays.is_empty() {
        return Err(interp.value_error("Need at least one array to concatenate."));
    }
    let nd = arrays[0].aval.ndim();
    if nd == 0 {
        return Err(interp.raise("ValueError", Code::ShapeMismatch, "Zero-dimensional arrays cannot be concatenated."));
    }
    if arrays.iter().any(|a| a.aval.ndim() != nd) {
        let shapes = arrays.iter().map(|a| a.aval.shape_tuple()).collect::<Vec<_>>().join(", ");
        return Err(interp.raise(
            "TypeError",
            Code::ShapeMismatch,
            format!("Cannot concatenate arrays with different numbers of dimensions: got {shapes}."),
        ));
    }
    let ax = normalize_axis(interp, axis, nd)?;
    for a in arrays {
        for d in 0..nd {
            if d != ax && a.aval.shape[d] != arrays[0].aval.shape[d] {
                let shapes = arrays.iter().map(|a| a.aval.shape_tuple()).collect::<Vec<_>>().join(", ");
                return Err(interp.raise(
                    "TypeError",
                    Code::ShapeMismatch,
                    format!("Cannot concatenate arrays with shapes that differ in dimensions other than the one being concatenated: concatenating along dimension {ax} for shapes {shapes}."),
                ));
            }
        }
    }
    let wds: Vec<WeakDType> = arrays.iter().map(|a| a.aval.weak_dtype()).collect();
    let dt = promote(&wds, cfg(interp));
    let ops: Vec<Rc<Array>> = arrays.iter().map(|a| convert(interp, a, dt.dtype, dt.weak)).collect::<PyResult<_>>()?;
    let mut shape = arrays[0].aval.shape.clone();
    shape[ax] = arrays.iter().map(|a| a.aval.shape[ax]).sum();
    apply1(interp, Prim::Concatenate { dimension: ax }, &ops)
}

pub(super) fn expand_dims(interp: &mut Interp, a: &Rc<Array>, axis: i64) -> PyResult<Rc<Array>> {
    let nd = a.aval.ndim() + 1;
    let ax = normalize_axis(interp, axis, nd)?;
    let mut s: Vec<usize> = a.aval.shape.to_vec();
    s.insert(ax, 1);
    reshape_raw(interp, a, &s)
}

pub(super) fn array_list(interp: &mut Interp, v: &Value) -> PyResult<Option<Vec<Rc<Array>>>> {
    let items = match v {
        Value::Array(a) => return Ok(Some(iterate_array(interp, a)?.into_iter().filter_map(|x| x.as_array().cloned()).collect())),
        Value::Opaque(_) => return Ok(None),
        other => interp.iterate(other)?,
    };
    let mut out = Vec::new();
    for it in &items {
        match operand(interp, it)? {
            Operand::Array(a) => out.push(a),
            Operand::Unknown => return Ok(None),
        }
    }
    Ok(Some(out))
}

pub(super) fn reshape(interp: &mut Interp, a: &Rc<Array>, shape_v: &Value) -> PyResult<Value> {
    let items = match shape_v {
        Value::Tuple(_) | Value::List(_) => interp.iterate(shape_v)?,
        other => vec![other.clone()],
    };
    let mut dims: Vec<i64> = Vec::new();
    for it in &items {
        if let Value::Array(t) = it {
            if t.is_tracer() && t.known().is_none() {
                let wrapped = Value::tuple(items.clone());
                shape_arg(interp, &wrapped)?;
            }
        }
        match interp.index_of(it)? {
            Some(i) => dims.push(i),
            None => return Ok(Value::opaque("reshape")),
        }
    }
    let size = a.aval.size();
    let known: i128 = dims.iter().filter(|&&d| d != -1).map(|&d| d as i128).product();
    let infer = dims.iter().filter(|&&d| d == -1).count();
    let mut out: Vec<usize> = Vec::new();
    let fail = |interp: &Interp, shown: &str| {
        interp.raise(
            "TypeError",
            Code::ShapeMismatch,
            format!("cannot reshape array of shape {} (size {}) into shape {}", a.aval.shape_tuple(), size, shown),
        )
    };
    // JAX shows the new shape as it was given: `[1, 32]`, `(1, 32)` or `33`.
    let shown_tuple = |dims: &[i64]| {
        let listed = dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ");
        match (shape_v, dims) {
            (Value::List(_), _) => format!("[{listed}]"),
            (Value::Tuple(_), [d]) => format!("({d},)"),
            (Value::Tuple(_), _) => format!("({listed})"),
            _ => listed,
        }
    };
    if infer > 1 {
        return Err(interp.value_error("can only specify one unknown dimension"));
    }
    for &d in &dims {
        if d == -1 {
            if known == 0 || size as i128 % known != 0 {
                let shown =
                    format!("{} because the product of specified axis sizes ({known}) does not evenly divide {size}", shown_tuple(&dims));
                return Err(fail(interp, &shown));
            }
            out.push((size as i128 / known) as usize);
        } else {
            out.push(d as usize);
        }
    }
    if infer == 0 && known as u128 != size {
        let shown = format!("{} (size {known})", shown_tuple(&dims));
        return Err(fail(interp, &shown));
    }
    reshape_raw(interp, a, &out).map(Value::Array)
}

pub(super) fn transpose(interp: &mut Interp, a: &Rc<Array>, perm: Option<Vec<usize>>) -> PyResult<Rc<Array>> {
    let nd = a.aval.ndim();
    let perm = perm.unwrap_or_else(|| (0..nd).rev().collect());
    let mut seen = vec![false; nd];
    let is_permutation = perm.len() == nd && perm.iter().all(|&p| p < nd && !std::mem::replace(&mut seen[p], true));
    if !is_permutation {
        return Err(interp.raise(
            "TypeError",
            Code::ShapeMismatch,
            format!(
                "transpose permutation isn't a permutation of operand dimensions, got permutation {} for operand shape {}.",
                shape_tuple(&perm),
                a.aval.shape_tuple()
            ),
        ));
    }
    apply1(interp, Prim::Transpose { permutation: perm }, std::slice::from_ref(a))
}
