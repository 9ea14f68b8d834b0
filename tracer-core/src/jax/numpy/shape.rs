//! Shape functions: `reshape`, `transpose`, `concatenate`/`stack`/`split`, `squeeze`,
//! `expand_dims`, `broadcast_to` (with `lax.broadcast_to`'s errors), `tile`/`repeat`, flips
//! and rotations, `diff`, `roll` and `pad` (pad.rs), `shape`/`ndim`/`size`.

use super::*;

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
    bind1(interp, Prim::Concatenate { dimension: ax }, &ops, Aval { shape, dtype: dt.dtype, weak: dt.weak })
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
    let shown_tuple = |dims: &[i64]| match dims {
        [d] => format!("({d},)"),
        _ => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    if infer > 1 {
        return Err(interp.value_error("can only specify one unknown dimension"));
    }
    for &d in &dims {
        if d == -1 {
            if known == 0 || size as i128 % known != 0 {
                return Err(fail(interp, &shown_tuple(&dims)));
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
    let shape: Vec<usize> = perm.iter().map(|&p| a.aval.shape[p]).collect();
    bind1(interp, Prim::Transpose { permutation: perm }, std::slice::from_ref(a), a.aval.with_shape(&shape))
}
