//! The attributes and methods of arrays (`x.shape`, `x.T`, `x.sum()`, `x.astype(...)`),
//! each through the jnp function it stands for, and iteration over an array.

use super::*;

pub fn iterate_array(interp: &mut Interp, a: &Rc<Array>) -> PyResult<Vec<Value>> {
    let Some(&n) = a.aval.shape.first() else {
        return Err(interp.type_error("iteration over a 0-d array"));
    };
    if n > 100_000 {
        return Err(interp.stop_unknown("iteration over a very long array"));
    }
    let mut out = Vec::with_capacity(n);
    let receiver = Value::Array(a.clone());
    for i in 0..n {
        // `key, sub = jax.random.split(key)` indexes the array: each item is a statement of
        // the user's (the reproducer writes `v1[0]`, `v1[1]`).
        let index = Value::Int(i as i64);
        let item = crate::jax::stmt::recorded(interp, crate::jax::stmt::Call::GetItem, &[&receiver, &index], &Vec::new(), |interp| {
            getitem(interp, a, &index)
        })?;
        out.push(item);
    }
    Ok(out)
}

pub fn array_getattr(interp: &mut Interp, a: &Rc<Array>, name: &str) -> PyResult<Option<Value>> {
    Ok(Some(match name {
        "shape" => Value::tuple(a.aval.shape.iter().map(|&d| Value::Int(d as i64)).collect()),
        "dtype" => Value::DType(a.aval.dtype),
        "ndim" => Value::Int(a.aval.ndim() as i64),
        "size" => Value::Int(a.aval.size().min(i64::MAX as u128) as i64),
        "itemsize" => Value::Int(a.aval.dtype.itemsize() as i64),
        "nbytes" => Value::Int((a.aval.size() * a.aval.dtype.itemsize() as u128).min(i64::MAX as u128) as i64),
        // Attributes that compute are statements of the user's code for the reproducer.
        "T" | "mT" => {
            let attr = if name == "T" { "T" } else { "mT" };
            let receiver = Value::Array(a.clone());
            return crate::jax::stmt::recorded(interp, crate::jax::stmt::Call::Attr(attr), &[&receiver], &Vec::new(), |interp| {
                let nd = a.aval.ndim();
                let mut p: Vec<usize> = (0..nd).collect();
                if attr == "T" {
                    p.reverse();
                } else if nd >= 2 {
                    p.swap(nd - 1, nd - 2);
                }
                Ok(Value::Array(transpose(interp, a, Some(p))?))
            })
            .map(Some);
        }
        "real" => Value::Array(a.clone()),
        "imag" => Value::Array(full(interp, &a.aval.shape.clone(), 0.0, a.aval.dtype)?),
        "at" => Value::Builtin(Rc::new(crate::interp::builtins::Builtin::Object(crate::jax::api::JaxObject::At { array: a.clone() }))),
        "aval" => Value::opaque("an aval"),
        "sharding" | "device" | "devices" => Value::opaque("device information"),
        _ => {
            const METHODS: &[&str] = &[
                "sum",
                "mean",
                "max",
                "min",
                "prod",
                "std",
                "var",
                "any",
                "all",
                "argmax",
                "argmin",
                "cumsum",
                "cumprod",
                "reshape",
                "transpose",
                "astype",
                "squeeze",
                "flatten",
                "ravel",
                "item",
                "tolist",
                "tobytes",
                "clip",
                "dot",
                "round",
                "copy",
                "block_until_ready",
                "swapaxes",
                "repeat",
                "sort",
                "argsort",
                "conj",
                "__array__",
                "view",
                "take",
                "__jax_array__",
            ];
            if METHODS.contains(&name) {
                Value::Builtin(Rc::new(crate::interp::builtins::Builtin::Method { recv: Value::Array(a.clone()), name: Rc::from(name) }))
            } else {
                // jax.Array has many more attributes than are modelled: unknown, never an error.
                Value::opaque(format!("Array.{name}"))
            }
        }
    }))
}

pub fn call_array_method(interp: &mut Interp, a: &Rc<Array>, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let me = Value::Array(a.clone());
    if matches!(name, "tolist" | "tobytes" | "item" | "__array__") {
        return array_method(interp, a, name, args, kwargs);
    }
    in_numpy_mode(interp, &[&me], |interp| array_method(interp, a, name, args, kwargs))
}

pub(super) fn array_method(interp: &mut Interp, a: &Rc<Array>, name: &str, args: Vec<Value>, kwargs: Kwargs) -> PyResult<Value> {
    let me = Value::Array(a.clone());
    match name {
        "tobytes" if a.tf.get() => Ok(Value::opaque("tobytes")),
        "item" | "tolist" | "tobytes" => {
            // `tolist`/`tobytes` refuse every JAX tracer, `item` only one whose value is not known.
            let refuses = if name != "item" && !a.tf.get() { a.is_jax_tracer() } else { a.is_tracer() && a.known().is_none() };
            if refuses {
                let origin = errors::origin(interp, a);
                let detail = if name == "item" {
                    "This occurred in the item() method of jax.Array".to_string()
                } else {
                    format!("The {name}() method was called on {}.", errors::traced_array(a))
                };
                let msg = format!(
                    "Abstract tracer value encountered where concrete value is expected: {}\n{detail}\n{origin}",
                    errors::traced_array(a)
                );
                return Err(interp.raise("ConcretizationTypeError", Code::TracerToNumpy, msg));
            }
            if name == "item" {
                let f = if a.aval.dtype.is_inexact() { "float" } else { "int" };
                if a.aval.dtype.is_bool() {
                    return Ok(Value::Bool(array_bool(interp, a, "bool", None)?));
                }
                return array_to_python(interp, a, f);
            }
            if name == "tobytes" {
                return Ok(Value::opaque("tobytes"));
            }
            match eval::force(a, interp.budgets.max_elements) {
                Some(d) => {
                    crate::jax::numerics::observed(interp, a, "converted to Python numbers");
                    Ok(nested_list(d.view(), a.aval.dtype))
                }
                None => Ok(Value::opaque("tolist")),
            }
        }
        "__array__" => {
            if a.refuses_numpy_conversion() {
                return Err(numpy_conversion_error(interp, a));
            }
            Ok(me)
        }
        // A NumPy copy must not change with the original's item assignments.
        "copy" if a.numpy.get() => {
            let copy = a.as_numpy();
            let _ = eval::force(&copy, interp.budgets.max_elements);
            Ok(Value::Array(copy))
        }
        "block_until_ready" | "copy" | "view" | "__jax_array__" => Ok(me),
        "astype" => {
            let d = match dtype_arg(interp, args.first().or_else(|| kwargs.first().map(|(_, v)| v)))? {
                Some(d) => d,
                None => return Ok(Value::opaque("astype")),
            };
            note_x64(interp, d);
            let d = dtypes::canonicalize(d, cfg(interp));
            convert(interp, a, d, false).map(Value::Array)
        }
        "reshape" => {
            let shape = if args.len() == 1 { args[0].clone() } else { Value::tuple(args) };
            reshape(interp, a, &shape)
        }
        "transpose" => {
            let perm = if args.is_empty() {
                None
            } else {
                let items =
                    if args.len() == 1 && matches!(args[0], Value::Tuple(_) | Value::List(_)) { interp.iterate(&args[0])? } else { args };
                // `x.transpose(-1, 0, 1)` counts axes from the end, as `jnp.transpose` does.
                let mut perm = Vec::with_capacity(items.len());
                for item in &items {
                    let Some(i) = interp.index_of(item)? else { return Ok(Value::opaque("transpose by unknown axes")) };
                    perm.push(normalize_axis(interp, i, a.aval.ndim())?);
                }
                Some(perm)
            };
            transpose(interp, a, perm).map(Value::Array)
        }
        "flatten" | "ravel" => {
            let n = a.aval.size() as usize;
            reshape_raw(interp, a, &[n]).map(Value::Array)
        }
        "dot" => {
            let b = arr_or_unknown!(interp, &args.first().cloned().unwrap_or(Value::None));
            if a.aval.ndim() == 0 || b.aval.ndim() == 0 {
                return binary_prim(interp, BinaryPrim::Mul, a, &b).map(Value::Array);
            }
            products::dot(interp, a, &b).map(Value::Array)
        }
        _ => {
            let f = match name {
                "sum" => JaxFn::Sum,
                "mean" => JaxFn::Mean,
                "max" => JaxFn::Max,
                "min" => JaxFn::Min,
                "prod" => JaxFn::Prod,
                "std" => JaxFn::Std,
                "var" => JaxFn::Var,
                "any" => JaxFn::Any,
                "all" => JaxFn::All,
                "argmax" => JaxFn::Argmax,
                "argmin" => JaxFn::Argmin,
                "cumsum" => JaxFn::Cumsum,
                "cumprod" => JaxFn::Cumprod,
                "squeeze" => JaxFn::Squeeze,
                "clip" => JaxFn::Clip,
                "round" => JaxFn::Round,
                "swapaxes" => JaxFn::Swapaxes,
                "repeat" => JaxFn::Repeat,
                "sort" => JaxFn::Sort,
                "argsort" => JaxFn::Argsort,
                "conj" => JaxFn::Conj,
                "take" => JaxFn::Take,
                _ => {
                    return Err(interp.raise(
                        "AttributeError",
                        Code::PythonException,
                        format!("'ArrayImpl' object has no attribute '{name}'"),
                    ))
                }
            };
            let mut all = vec![me];
            all.extend(args);
            call(interp, f, all, kwargs)
        }
    }
}
