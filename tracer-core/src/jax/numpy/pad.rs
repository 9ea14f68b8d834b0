//! `jnp.pad` in its modes other than `'constant'`, and `jnp.roll`, bound as JAX binds them
//! (jax/_src/numpy/lax_numpy.py `_pad_*` and `_roll_static`): axis by axis, slices of the
//! array, `rev`, broadcasts and reductions, joined by `concatenate`. Their values, dtypes and
//! derivatives then follow from those primitives' kernels and rules.

use super::*;

/// `jnp.roll(a, shift, axis=None)` with static shifts: each `(axis, shift)` pair (the two
/// broadcast against each other) rotates its axis by concatenating `a[i:]` and `a[:i]`,
/// `i = -shift mod n`; without an axis the flattened array is rolled and reshaped back.
/// `None` for shifts that are arrays (JAX's `_roll_dynamic`, a `dynamic_slice`), not modelled.
pub(super) fn roll(interp: &mut Interp, a: &Rc<Array>, shift: &Value, axis: Option<&Value>) -> PyResult<Option<Rc<Array>>> {
    let Some(axis) = axis else {
        let flat = reshape_raw(interp, a, &[a.aval.size() as usize])?;
        let Some(rolled) = roll(interp, &flat, shift, Some(&Value::Int(0)))? else { return Ok(None) };
        return reshape_raw(interp, &rolled, &a.aval.shape.clone()).map(Some);
    };
    let Some(axes) = int_tuple(interp, axis)? else { return Ok(None) };
    let axes: Vec<usize> = axes.into_iter().map(|ax| normalize_axis(interp, ax, a.aval.ndim())).collect::<PyResult<_>>()?;
    let shifts = match int_tuple(interp, shift)? {
        Some(s) => s,
        None if is_nested_sequence(interp, shift)? => {
            return Err(interp.value_error("'shift' and 'axis' arguments to roll must be scalars or 1D arrays"));
        }
        None => return Ok(None),
    };
    let n = match (axes.len(), shifts.len()) {
        (x, y) if x == y || y == 1 => x,
        (1, y) => y,
        (x, y) => {
            return Err(interp.value_error(format!(
                "shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is between arg 0 with shape ({x},) and arg 1 with shape ({y},)."
            )))
        }
    };
    let mut out = a.clone();
    for k in 0..n {
        let (ax, s) = (axes[k.min(axes.len() - 1)], shifts[k.min(shifts.len() - 1)]);
        let size = out.aval.shape[ax];
        if size == 0 {
            continue;
        }
        let i = (-(s as i128)).rem_euclid(size as i128) as usize;
        let head = slice_in_dim(interp, &out, ax, i, size)?;
        let tail = slice_in_dim(interp, &out, ax, 0, i)?;
        out = concat_in_dim(interp, &[head, tail], ax)?;
    }
    Ok(Some(out))
}

/// `jnp.pad(array, pad_width, mode=..., **kwargs)` for a mode given by name, `widths` being
/// `pad_width` as [`pairs`] reads it: JAX's checks of the keyword arguments and widths, then
/// `_pad`'s mode. `None` (shapes only) for `linear_ramp`, `constant_values` not known, and a
/// `stat_length` or statistic not known.
pub(super) fn pad(interp: &mut Interp, a: &Rc<Array>, widths: &[(i64, i64)], mode: &str, kwargs: &Kwargs) -> PyResult<Option<Rc<Array>>> {
    let allowed: &[&str] = match mode {
        "empty" | "edge" | "wrap" => &[],
        "constant" => &["constant_values"],
        "linear_ramp" => &["end_values"],
        "maximum" | "mean" | "median" | "minimum" => &["stat_length"],
        "reflect" | "symmetric" => &["reflect_type"],
        _ => {
            return Err(interp.raise(
                "NotImplementedError",
                Code::PythonException,
                format!("Unimplemented padding mode '{mode}' for np.pad."),
            ))
        }
    };
    let unsupported: Vec<String> =
        kwargs.iter().map(|(k, _)| format!("'{k}'")).filter(|k| !allowed.iter().any(|a| k[1..k.len() - 1] == **a)).collect();
    if !unsupported.is_empty() {
        return Err(interp.value_error(format!("unsupported keyword arguments for mode '{mode}': {{{}}}", unsupported.join(", "))));
    }
    let nd = a.aval.ndim();
    if nd == 0 {
        return Ok(Some(a.clone()));
    }
    if widths.iter().any(|&(l, r)| l < 0 || r < 0) {
        return Err(interp.value_error("index can't contain negative values"));
    }
    let widths: Vec<(usize, usize)> = widths.iter().map(|&(l, r)| (l as usize, r as usize)).collect();
    // Widths so large that the result, or the number of copies `wrap` and `reflect` join,
    // is past what an analysis should build: shapes only.
    let elements = a.aval.shape.iter().zip(&widths).try_fold(1u128, |n, (&d, &(l, r))| n.checked_mul(d as u128 + l as u128 + r as u128));
    let copies = a.aval.shape.iter().zip(&widths).map(|(&d, &(l, r))| (l as u128 + r as u128) / (d.max(2) - 1) as u128).max();
    if elements.is_none_or(|n| n > 1 << 32) || copies.is_some_and(|c| c > 1 << 16) {
        return Ok(None);
    }
    let kwarg = |name: &str| kwargs.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v.clone());
    match mode {
        "constant" => pad_constant(interp, a, &widths, kwarg("constant_values").as_ref()),
        "wrap" => pad_wrap(interp, a, &widths).map(Some),
        "edge" => pad_edge(interp, a, &widths).map(Some),
        "empty" => pad_empty(interp, a, &widths).map(Some),
        "reflect" | "symmetric" => {
            let odd = match kwarg("reflect_type") {
                None => false,
                Some(Value::Str(s)) if &*s == "even" => false,
                Some(Value::Str(s)) if &*s == "odd" => true,
                // JAX asserts `reflect_type in ("even", "odd")`.
                Some(_) => return Err(interp.raise("AssertionError", Code::PythonException, "")),
            };
            pad_reflect(interp, a, &widths, mode == "reflect", odd).map(Some)
        }
        "maximum" | "mean" | "median" | "minimum" => {
            let lengths = match kwarg("stat_length") {
                None | Some(Value::None) => None,
                Some(v) => match pairs(interp, &v, nd, "stat_length")? {
                    Some(p) => Some(p),
                    None => return Ok(None),
                },
            };
            let stat = match mode {
                "maximum" => JaxFn::Amax,
                "minimum" => JaxFn::Amin,
                "mean" => JaxFn::Mean,
                _ => JaxFn::Median,
            };
            pad_stats(interp, a, &widths, lengths.as_deref(), stat)
        }
        // "linear_ramp": not modelled (shapes only).
        _ => Ok(None),
    }
}

/// `_pad_constant`: `constant_values` converted to the array's dtype; a scalar (or a single
/// value) pads every side with `lax.pad`, otherwise the values are broadcast to one
/// `(before, after)` pair per axis and each nonzero side is padded on its own.
fn pad_constant(interp: &mut Interp, a: &Rc<Array>, widths: &[(usize, usize)], values: Option<&Value>) -> PyResult<Option<Rc<Array>>> {
    let (dtype, weak) = (a.aval.dtype, a.aval.weak);
    let values = match values {
        None => Array::scalar(0.0, dtype, weak),
        // A Python number is converted directly, as `np.asarray(x, dtype)` does.
        Some(v @ (Value::Int(_) | Value::Float(_) | Value::Bool(_))) => match crate::interp::ops::as_f64(v) {
            Some(x) => Array::scalar(x, dtype, weak),
            None => return Ok(None),
        },
        Some(v) => match operand(interp, v)? {
            Operand::Array(c) => convert(interp, &c, dtype, weak)?,
            Operand::Unknown => return Ok(None),
        },
    };
    let lax_pad = |interp: &mut Interp, x: &Rc<Array>, fill: &Rc<Array>, config: Vec<(i64, i64, i64)>| {
        apply1(interp, Prim::Pad { config }, &[x.clone(), fill.clone()])
    };
    let every_side = || widths.iter().map(|&(l, r)| (l as i64, r as i64, 0)).collect::<Vec<_>>();
    let nd = a.aval.ndim();
    let values = match values.aval.shape.as_slice() {
        [] => return lax_pad(interp, a, &values, every_side()).map(Some),
        [1] => {
            let fill = squeeze(interp, &values, &[0])?;
            return lax_pad(interp, a, &fill, every_side()).map(Some);
        }
        &[k] if k != 2 => {
            return Err(interp.value_error(format!(
            "jnp.pad: constant_values has unsupported shape ({k},). If the shape is 1D or 2D, the last dimension must be of size 1 or 2."
        )))
        }
        _ => broadcast_to_checked(interp, &values, &[nd, 2])?,
    };
    let mut array = a.clone();
    for (i, &(before, after)) in widths.iter().enumerate() {
        for (side, width) in [(0, before), (1, after)] {
            if width == 0 {
                continue;
            }
            // constant_values[i, side]
            let prim = Prim::Slice { start: vec![i, side], limit: vec![i + 1, side + 1], strides: vec![1, 1] };
            let one = apply1(interp, prim, std::slice::from_ref(&values))?;
            let fill = squeeze(interp, &one, &[0, 1])?;
            let mut config = vec![(0, 0, 0); nd];
            config[i] = if side == 0 { (width as i64, 0, 0) } else { (0, width as i64, 0) };
            array = lax_pad(interp, &array, &fill, config)?;
        }
    }
    Ok(Some(array))
}

/// `_broadcast_to_pairs(nvals, nd, name)`: an int, `(pad,)`, `(before, after)`,
/// `((before, after),)` or one pair per axis, as `(before, after)` per axis. `None` when an
/// entry is not a Python int (a traced or a float value: JAX's TypeError is for the caller).
pub(super) fn pairs(interp: &mut Interp, v: &Value, nd: usize, name: &str) -> PyResult<Option<Vec<(i64, i64)>>> {
    let unsupported = |interp: &mut Interp, shape: String| {
        interp.value_error(format!(
            "jnp.pad: {name} with nd={nd} has unsupported shape {shape}. Valid shapes are ({nd}, 2), (1, 2), (2,), (1,), or ()."
        ))
    };
    let int = |interp: &mut Interp, x: &Value| -> PyResult<Option<i64>> {
        match x {
            Value::Float(_) => Err(interp.type_error(format!("`{name}` must be of integral type."))),
            x => Ok(crate::interp::ops::as_int(x)),
        }
    };
    if let Some(k) = int(interp, v)? {
        return Ok(Some(vec![(k, k); nd]));
    }
    if !matches!(v, Value::Tuple(_) | Value::List(_)) {
        return Ok(None);
    }
    let items = interp.iterate(v)?;
    let mut rows: Vec<Vec<i64>> = Vec::with_capacity(items.len());
    let mut flat: Vec<i64> = Vec::new();
    for item in &items {
        if let Some(k) = int(interp, item)? {
            flat.push(k);
            continue;
        }
        if !matches!(item, Value::Tuple(_) | Value::List(_)) {
            return Ok(None);
        }
        let mut row = Vec::new();
        for x in interp.iterate(item)? {
            match int(interp, &x)? {
                Some(k) => row.push(k),
                None => return Ok(None),
            }
        }
        rows.push(row);
    }
    match (flat.len(), rows.len()) {
        (1, 0) => Ok(Some(vec![(flat[0], flat[0]); nd])),
        (2, 0) => Ok(Some(vec![(flat[0], flat[1]); nd])),
        (k, 0) => Err(unsupported(interp, format!("({k},)"))),
        (0, r) if rows.iter().all(|row| row.len() == rows[0].len()) => match (r, rows[0].len()) {
            (1, 2) => Ok(Some(vec![(rows[0][0], rows[0][1]); nd])),
            (r, 2) if r == nd => Ok(Some(rows.iter().map(|row| (row[0], row[1])).collect())),
            (r, c) => Err(unsupported(interp, format!("({r}, {c})"))),
        },
        // A ragged list, which NumPy refuses to make an array of.
        _ => Ok(None),
    }
}

/// `_check_no_padding`: an empty axis cannot be padded from its own elements.
fn check_no_padding(interp: &mut Interp, width: (usize, usize), mode: &str) -> PyResult<()> {
    if width.0 > 0 || width.1 > 0 {
        return Err(interp.value_error(format!("Cannot apply '{mode}' padding to empty axis")));
    }
    Ok(())
}

/// `_pad_wrap`: per axis, the tail of the array's last copy, whole copies, then its head.
fn pad_wrap(interp: &mut Interp, a: &Rc<Array>, widths: &[(usize, usize)]) -> PyResult<Rc<Array>> {
    let mut array = a.clone();
    for (i, &width) in widths.iter().enumerate() {
        let size = array.aval.shape[i];
        if size == 0 {
            check_no_padding(interp, width, "wrap")?;
            continue;
        }
        let (left_repeats, left_remainder) = (width.0 / size, width.0 % size);
        let (right_repeats, right_remainder) = (width.1 / size, width.1 % size);
        let mut parts = Vec::new();
        if left_remainder > 0 {
            parts.push(slice_in_dim(interp, &array, i, size - left_remainder, size)?);
        }
        parts.extend(std::iter::repeat_n(array.clone(), left_repeats + right_repeats + 1));
        if right_remainder > 0 {
            parts.push(slice_in_dim(interp, &array, i, 0, right_remainder)?);
        }
        array = concat_in_dim(interp, &parts, i)?;
    }
    Ok(array)
}

/// `_pad_edge`: per axis, the first and last slices repeated.
fn pad_edge(interp: &mut Interp, a: &Rc<Array>, widths: &[(usize, usize)]) -> PyResult<Rc<Array>> {
    let mut array = a.clone();
    for (i, &(before, after)) in widths.iter().enumerate() {
        let n = array.aval.shape[i];
        if n == 0 {
            check_no_padding(interp, (before, after), "edge")?;
            continue;
        }
        let first = slice_in_dim(interp, &array, i, 0, 1)?;
        let pad_before = repeat_in_dim(interp, &first, i, before)?;
        let last = slice_in_dim(interp, &array, i, n - 1, n)?;
        let pad_after = repeat_in_dim(interp, &last, i, after)?;
        array = concat_in_dim(interp, &[pad_before, array, pad_after], i)?;
    }
    Ok(array)
}

/// `_pad_empty`: zeros (`jnp.empty` is `jnp.zeros`) on both sides of each axis.
fn pad_empty(interp: &mut Interp, a: &Rc<Array>, widths: &[(usize, usize)]) -> PyResult<Rc<Array>> {
    let mut array = a.clone();
    for (i, &(before, after)) in widths.iter().enumerate() {
        let mut parts = Vec::with_capacity(3);
        for (k, width) in [before, after].into_iter().enumerate() {
            let mut shape = array.aval.shape.to_vec();
            shape[i] = width;
            let zeros = full(interp, &shape, 0.0, array.aval.dtype)?;
            parts.push(convert(interp, &zeros, array.aval.dtype, array.aval.weak)?);
            if k == 0 {
                parts.push(array.clone());
            }
        }
        array = concat_in_dim(interp, &parts, i)?;
    }
    Ok(array)
}

/// `_pad_symmetric_or_reflect`: per axis and side, reversed slices next to the edge (which
/// `reflect` leaves out), as many as the width needs; `reflect_type='odd'` mirrors the
/// values through the edge too (`2 * edge - x`).
fn pad_reflect(interp: &mut Interp, a: &Rc<Array>, widths: &[(usize, usize)], reflect: bool, odd: bool) -> PyResult<Rc<Array>> {
    let mode = if reflect { "reflect" } else { "symmetric" };
    let mut array = a.clone();
    for (i, &width) in widths.iter().enumerate() {
        let axis_size = array.aval.shape[i];
        if axis_size == 0 {
            check_no_padding(interp, width, mode)?;
            continue;
        }
        if width == (0, 0) {
            continue;
        }
        let offset = usize::from(reflect && axis_size > 1);
        for (before, mut padding) in [(true, width.0), (false, width.1)] {
            let n = array.aval.shape[i];
            let mut edge = if before { slice_in_dim(interp, &array, i, 0, 1)? } else { slice_in_dim(interp, &array, i, n - 1, n)? };
            while padding > 0 {
                let n = array.aval.shape[i];
                let current = padding.min(axis_size - offset);
                padding -= current;
                let (start, stop) = if before {
                    (offset, offset + current)
                } else {
                    let stop = if !reflect || axis_size == 1 { n } else { n - 1 };
                    (n - (current + offset), stop)
                };
                let x = slice_in_dim(interp, &array, i, start, stop)?;
                let mut x = apply1(interp, Prim::Rev { dimensions: vec![i] }, &[x.clone()])?;
                if odd {
                    let two = Array::python_int(2, x.aval.dtype);
                    let doubled = binary_prim(interp, BinaryPrim::Mul, &two, &edge)?;
                    x = binary_prim(interp, BinaryPrim::Sub, &doubled, &x)?;
                    if axis_size > 1 {
                        let m = x.aval.shape[i];
                        edge = if before { slice_in_dim(interp, &x, i, 0, 1)? } else { slice_in_dim(interp, &x, i, m - 1, m)? };
                    }
                }
                let parts = if before { [x, array] } else { [array, x] };
                array = concat_in_dim(interp, &parts, i)?;
            }
        }
    }
    Ok(array)
}

/// `_pad_stats`: per axis, the statistic of the whole axis (or of its first and last
/// `stat_length` elements) with kept dimensions, rounded for an integer array, repeated.
fn pad_stats(
    interp: &mut Interp,
    a: &Rc<Array>,
    widths: &[(usize, usize)],
    lengths: Option<&[(i64, i64)]>,
    stat: JaxFn,
) -> PyResult<Option<Rc<Array>>> {
    let mut array = a.clone();
    for (i, &(before, after)) in widths.iter().enumerate() {
        let statistic = |interp: &mut Interp, x: &Rc<Array>| -> PyResult<Option<Rc<Array>>> {
            let kwargs: Kwargs = vec![("axis".into(), Value::Int(i as i64)), ("keepdims".into(), Value::Bool(true))].into();
            let v = call(interp, stat, vec![Value::Array(x.clone())], kwargs)?;
            let Some(mut s) = v.as_array().cloned() else { return Ok(None) };
            if a.aval.dtype.is_integer() {
                let rounded = call(interp, JaxFn::Round, vec![Value::Array(s)], Kwargs::default())?;
                let Some(r) = rounded.as_array().cloned() else { return Ok(None) };
                s = r;
            }
            convert(interp, &s, a.aval.dtype, a.aval.weak).map(Some)
        };
        let (stat_before, stat_after) = match lengths {
            None => {
                let Some(s) = statistic(interp, &array)? else { return Ok(None) };
                (s.clone(), s)
            }
            Some(lengths) => {
                let n = array.aval.shape[i];
                let (lb, la) = lengths[i];
                if lb == 0 || la == 0 {
                    return Err(interp.value_error("stat_length of 0 yields no value for padding"));
                }
                if lb < 0 || la < 0 {
                    return Ok(None);
                }
                let (lb, la) = ((lb as usize).min(n), (la as usize).min(n));
                let first = slice_in_dim(interp, &array, i, 0, lb)?;
                let last = slice_in_dim(interp, &array, i, n - la, n)?;
                let (Some(sb), Some(sa)) = (statistic(interp, &first)?, statistic(interp, &last)?) else { return Ok(None) };
                (sb, sa)
            }
        };
        let pad_before = repeat_in_dim(interp, &stat_before, i, before)?;
        let pad_after = repeat_in_dim(interp, &stat_after, i, after)?;
        array = concat_in_dim(interp, &[pad_before, array, pad_after], i)?;
    }
    Ok(Some(array))
}

/// `lax.slice_in_dim(x, start, limit, axis=axis)`.
pub(super) fn slice_in_dim(interp: &mut Interp, x: &Rc<Array>, axis: usize, start: usize, limit: usize) -> PyResult<Rc<Array>> {
    let nd = x.aval.ndim();
    let mut starts = vec![0; nd];
    let mut limits = x.aval.shape.to_vec();
    starts[axis] = start;
    limits[axis] = limit;
    let mut shape = x.aval.shape.to_vec();
    shape[axis] = limit - start;
    apply1(interp, Prim::Slice { start: starts, limit: limits, strides: vec![1; nd] }, std::slice::from_ref(x))
}

/// `lax.concatenate(parts, axis)` of arrays of one aval but along `axis`.
fn concat_in_dim(interp: &mut Interp, parts: &[Rc<Array>], axis: usize) -> PyResult<Rc<Array>> {
    if let [only] = parts {
        // lax.concatenate of one operand returns it unchanged.
        return Ok(only.clone());
    }
    let mut shape = parts[0].aval.shape.to_vec();
    shape[axis] = parts.iter().map(|p| p.aval.shape[axis]).sum();
    apply1(interp, Prim::Concatenate { dimension: axis }, parts)
}

/// `jnp.repeat(x, k, axis)` of an axis of size 1 as JAX binds a scalar repeat count: a
/// `broadcast_in_dim` adding an axis of size `k` after it, reshaped into it.
fn repeat_in_dim(interp: &mut Interp, x: &Rc<Array>, axis: usize, k: usize) -> PyResult<Rc<Array>> {
    let mut wide = x.aval.shape.to_vec();
    wide.insert(axis + 1, k);
    let dims: Vec<usize> = (0..wide.len()).filter(|&d| d != axis + 1).collect();
    let prim = Prim::BroadcastInDim { shape: wide.clone(), broadcast_dimensions: dims };
    let broadcast = apply1(interp, prim, std::slice::from_ref(x))?;
    let mut shape = x.aval.shape.to_vec();
    shape[axis] *= k;
    apply1(interp, Prim::Reshape { new_sizes: shape.clone() }, &[broadcast])
}

/// `_ensure_index_tuple`: an int or a sequence of ints; `None` for anything else.
fn int_tuple(interp: &mut Interp, v: &Value) -> PyResult<Option<Vec<i64>>> {
    if let Some(k) = crate::interp::ops::as_int(v) {
        return Ok(Some(vec![k]));
    }
    if !matches!(v, Value::Tuple(_) | Value::List(_)) {
        return Ok(None);
    }
    Ok(interp.iterate(v)?.iter().map(crate::interp::ops::as_int).collect())
}

/// A tuple or list holding a tuple or list.
fn is_nested_sequence(interp: &mut Interp, v: &Value) -> PyResult<bool> {
    if !matches!(v, Value::Tuple(_) | Value::List(_)) {
        return Ok(false);
    }
    Ok(interp.iterate(v)?.iter().any(|x| matches!(x, Value::Tuple(_) | Value::List(_))))
}
