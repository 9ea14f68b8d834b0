//! Sorting and searching: `sort`/`argsort`, `nonzero`/`argwhere`/`unique` (whose sizes need
//! concrete values or `size=`), `searchsorted` and `lax.top_k`.

use super::*;

/// The sort functions of the surface dispatch (`dispatch::family` routes them here).
pub(super) fn serve(interp: &mut Interp, cx: &Call) -> PyResult<Value> {
    use JaxFn as F;
    let Call { f, args, kwargs, p, c, .. } = *cx;
    match f {
        F::Sort | F::Argsort => {
            let a = arr!(interp, cx, 0, "a");
            let int = dtypes::default_int(c);
            // `axis=None` sorts the flattened array.
            let axis_none = matches!(args.get(1), Some(Value::None)) || kwargs.iter().any(|(k, v)| k.as_ref() == "axis" && v.is_none());
            let a = if axis_none {
                let n = a.aval.size() as usize;
                reshape_raw(interp, &a, &[n])?
            } else {
                a
            };
            let flag = |interp: &mut Interp, name: &str, default: bool| -> PyResult<bool> {
                match p.get(usize::MAX, name) {
                    Some(v) => interp.truthy(v),
                    None => Ok(default),
                }
            };
            let descending = flag(interp, "descending", false)?;
            let stable = flag(interp, "stable", true)?;
            if a.aval.ndim() == 0 {
                let aval = if f == F::Sort { a.aval.clone() } else { a.aval.with_dtype(int).weak(false) };
                let name = if f == F::Sort { "sort" } else { "argsort" };
                return apply1(interp, Prim::opaque(name, aval), &[a.clone()]).map(Value::Array);
            }
            let ax = static_single_axis(interp, Some(p.get(1, "axis").unwrap_or(&Value::Int(-1))), a.aval.ndim())?.unwrap_or(0);
            let sort = Prim::Sort { dimension: ax, num_keys: 1 };
            let rev = |interp: &mut Interp, x: &Rc<Array>| apply1(interp, Prim::Rev { dimensions: vec![ax] }, std::slice::from_ref(x));
            if f == F::Sort {
                // The sorted values do not depend on stability; `descending` reverses them.
                let sorted = apply1(interp, sort, &[a.clone()])?;
                return if descending { rev(interp, &sorted) } else { Ok(sorted) }.map(Value::Array);
            }
            // As `jnp.argsort` does: a sort of (a, iota) on the keys of `a`, whose second
            // operand is the permutation; a stable descending sort reverses both operands
            // first, so that ties keep their order once the result is reversed.
            let int_aval = a.aval.with_dtype(int).weak(false);
            if !stable && a.aval.shape[ax] > 16 {
                // XLA's unstable sort orders ties as its algorithm happens to (it is stable
                // on short runs only): the permutation is not known.
                return apply1(interp, Prim::opaque("argsort", int_aval), &[a.clone()]).map(Value::Array);
            }
            let iota = Prim::Iota { dtype: int, shape: a.aval.shape.to_vec(), dimension: ax };
            let mut positions = apply1(interp, iota, &[])?;
            let mut keys = a.clone();
            if descending && stable {
                keys = rev(interp, &keys)?;
                positions = rev(interp, &positions)?;
            }
            let order = apply1(interp, sort, &[keys, positions])?;
            if descending { rev(interp, &order) } else { Ok(order) }.map(Value::Array)
        }
        F::Nonzero | F::Argwhere | F::Unique => {
            let a = arr!(interp, cx, 0, "a");
            let size = p.get(usize::MAX, "size").map(|v| interp.index_of(v)).transpose()?.flatten();
            if a.is_tracer() && a.known().is_none() && size.is_none() {
                let origin = errors::origin(interp, &a);
                let msg = if f == F::Unique {
                    format!(
                        "Abstract tracer value encountered where concrete value is expected: {}\nThe error arose for the first argument of jnp.unique(). To make jnp.unique() compatible with JIT and other transforms, you can specify a concrete value for the size argument, which will determine the output size.\n{origin}",
                        errors::traced_array(&a)
                    )
                } else {
                    let name = if f == F::Argwhere { "argwhere" } else { "nonzero" };
                    format!(
                        "Abstract tracer value encountered where concrete value is expected: traced array with shape {}[]\nThe size argument of jnp.{name} must be statically specified to use jnp.{name} within JAX transformations.\n{origin}",
                        dtypes::default_int(c).name()
                    )
                };
                return Err(interp.raise("ConcretizationTypeError", Code::DynamicShape, msg));
            }
            let idx = dtypes::default_int(c);
            let n = match size {
                Some(s) if s < 0 => {
                    let message = format!("broadcast_in_dim shape must have every element be nonnegative, got ({s},).");
                    return Err(interp.raise("TypeError", Code::ShapeMismatch, message));
                }
                Some(s) => s as usize,
                None => match eval::force(&a, interp.budgets.max_elements) {
                    Some(d) => {
                        if f == F::Unique {
                            let mut v: Vec<f64> = d.iter().copied().collect();
                            v.sort_by(|x, y| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal));
                            v.dedup();
                            v.len()
                        } else {
                            d.iter().filter(|&&x| x != 0.0).count()
                        }
                    }
                    None => return Ok(Value::opaque("nonzero of unknown values")),
                },
            };
            // Concrete input: the values themselves (the output's shape depends on them, so
            // there is nothing to trace). `size=` pads with 0 or truncates, as fill_value=None.
            let nd = a.aval.ndim();
            // `size=` decides how many indices there are: past the budget they stay unknown.
            let fits = crate::interp::memory::fits_array((n as u128).saturating_mul(nd.max(1) as u128));
            if let (Some(d), true) = (eval::force(&a, interp.budgets.max_elements).filter(|_| fits), nd > 0) {
                if f == F::Unique && size.is_none() && !d.iter().any(|x| x.is_nan()) {
                    let mut v: Vec<f64> = d.iter().copied().collect();
                    v.sort_by(|x, y| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal));
                    v.dedup();
                    return Ok(Value::Array(Array::ready(
                        a.aval.with_shape(&[n]).weak(false),
                        ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[n]), v).map_err(|e| interp.value_error(e.to_string()))?,
                    )));
                }
                if f != F::Unique {
                    let mut coords: Vec<Vec<f64>> = d
                        .indexed_iter()
                        .filter(|(_, &x)| x != 0.0)
                        .map(|(ix, _)| ndarray::Dimension::slice(&ix).iter().map(|&i| i as f64).collect())
                        .collect();
                    coords.resize(n, vec![0.0; nd]);
                    let axis = |k: usize| {
                        Array::ready(Aval::new(&[n], idx), ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[n]), |i| coords[i[0]][k]))
                    };
                    return Ok(if f == F::Argwhere {
                        Value::Array(Array::ready(
                            Aval::new(&[n, nd], idx),
                            ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[n, nd]), |i| coords[i[0]][i[1]]),
                        ))
                    } else {
                        Value::tuple((0..nd).map(|k| Value::Array(axis(k))).collect())
                    });
                }
            }
            Ok(match f {
                F::Unique => Value::Array(Array::unknown(a.aval.with_shape(&[n]), "unique")),
                F::Argwhere => Value::Array(Array::unknown(Aval::new(&[n, a.aval.ndim()], idx), "argwhere")),
                _ => {
                    Value::tuple((0..a.aval.ndim().max(1)).map(|_| Value::Array(Array::unknown(Aval::new(&[n], idx), "nonzero"))).collect())
                }
            })
        }
        F::Searchsorted => {
            let a = arr!(interp, cx, 0, "a");
            let v = arr!(interp, cx, 1, "v");
            let side = match p.get(2, "side") {
                None => Some(CmpPrim::Lt),
                Some(Value::Str(s)) if &**s == "left" => Some(CmpPrim::Lt),
                Some(Value::Str(s)) if &**s == "right" => Some(CmpPrim::Le),
                _ => None,
            };
            let (1, Some(cmp), None) = (a.aval.ndim(), side, p.get(usize::MAX, "sorter")) else {
                return apply1(interp, Prim::opaque("searchsorted", v.aval.with_dtype(dtypes::default_int(c))), &[a, v.clone()])
                    .map(Value::Array);
            };
            // The insertion point in sorted `a`: how many elements lie before `v`
            // (`a < v` for side="left", `a <= v` for "right").
            let mut s = v.aval.shape.to_vec();
            s.push(1);
            let column = reshape_raw(interp, &v, &s)?;
            let before = compare_arrays(interp, cmp, &a, &column)?;
            let last = before.aval.ndim() - 1;
            let count = reduce(interp, &before, ReduceOp::Sum, Some(vec![last]), false, None)?;
            convert(interp, &count, dtypes::default_int(c), false).map(Value::Array)
        }
        F::LaxTopK => {
            let a = arr!(interp, cx, 0, "operand");
            let Some(k) = p.get(1, "k") else {
                return Err(interp.type_error("top_k() missing 1 required positional argument: 'k'"));
            };
            let Some(k) = crate::interp::ops::as_int(k) else { return Ok(Value::opaque("top_k")) };
            if k < 0 {
                return Err(interp.value_error(format!("k argument to top_k must be nonnegative, got {k}")));
            }
            let k = k as usize;
            let axis = match p.get(usize::MAX, "axis") {
                Some(v) => interp.index_of(v)?.unwrap_or(-1),
                None => -1,
            };
            let axis = normalize_axis(interp, axis, a.aval.ndim())?;
            if k > a.aval.shape[axis] {
                let shape = join_dims(&a.aval.shape, ", ");
                let message =
                    format!("k argument to top_k must be no larger than size along axis; got k={k} with shape=[{shape}] and axis={axis}");
                return Err(interp.raise("ValueError", Code::ShapeMismatch, message));
            }
            // `lax.top_k` returns a list (the primitive's outputs), not a tuple.
            // `top_k[axis]` on another axis than the last is the same selection along that
            // axis: move it last, select, and move it back.
            let last_axis = a.aval.ndim() - 1;
            let mut order: Vec<usize> = (0..a.aval.ndim()).filter(|&i| i != axis).collect();
            order.push(axis);
            let moved = if axis == last_axis { a.clone() } else { transpose(interp, &a, Some(order.clone()))? };
            let mut s = moved.aval.shape.to_vec();
            s[last_axis] = k;
            let v = apply1(interp, Prim::TopK { k }, &[moved.clone()])?;
            let i = apply1(interp, Prim::TopKIndices { k }, &[moved])?;
            if axis == last_axis {
                return Ok(Value::list(vec![Value::Array(v), Value::Array(i)]));
            }
            let mut back = vec![0; order.len()];
            for (position, &original) in order.iter().enumerate() {
                back[original] = position;
            }
            let v = transpose(interp, &v, Some(back.clone()))?;
            let i = transpose(interp, &i, Some(back))?;
            Ok(Value::list(vec![Value::Array(v), Value::Array(i)]))
        }
        // `dispatch::family` sends only the functions above here.
        _ => Ok(cx.unrouted()),
    }
}
