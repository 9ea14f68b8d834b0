//! A `tf.function` call bound to the Python function's parameters as TensorFlow binds it
//! before keying the call (its `FunctionType`): positional, keyword and default arguments
//! of the same parameter are one key, one concrete function.

use super::function::TfFunction;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;

/// A call's arguments bound to the function's parameters as TensorFlow binds them before it
/// keys the call (its `FunctionType`): the positional parameters in order, each from its
/// positional argument, its keyword argument or its default, then the keyword-only ones. So
/// `f(x)`, `f(x, 2.0)` and `f(x, scale=2.0)` are one key, one trace, as in TensorFlow. The
/// call is left as it is where it does not bind (Python raises there) and for a function with
/// `*args`/`**kwargs` or an `input_signature`.
pub fn bind(f: &TfFunction, args: Vec<Value>, kwargs: Kwargs) -> (Vec<Value>, Kwargs) {
    let Value::Function(fun) = &f.fun else { return (args, kwargs) };
    let params = &fun.def.params;
    if f.signature.is_some() || params.vararg.is_some() || params.kwarg.is_some() {
        return (args, kwargs);
    }
    let positional: Vec<&str> = params.posonly.iter().chain(&params.args).map(|p| p.name.as_ref()).collect();
    let by_keyword_ok = |name: &str| {
        positional.iter().position(|p| *p == name).is_some_and(|i| i >= params.posonly.len() && i >= args.len())
            || params.kwonly.iter().any(|p| p.name.as_ref() == name)
    };
    if args.len() > positional.len() || !kwargs.iter().all(|(k, _)| by_keyword_ok(k)) {
        return (args, kwargs);
    }
    let defaults_from = positional.len().saturating_sub(fun.defaults.len());
    let keyword = |name: &str| kwargs.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v.clone());
    let mut bound = Vec::with_capacity(positional.len());
    for (i, name) in positional.iter().enumerate() {
        let value = match args.get(i) {
            Some(v) => Some(v.clone()),
            None => keyword(name).or_else(|| i.checked_sub(defaults_from).and_then(|d| fun.defaults.get(d).cloned())),
        };
        match value {
            // A default tracelens does not know would make every call's key unknown.
            Some(Value::Opaque(_) | Value::UnknownNumber(_)) | None => return (args, kwargs),
            Some(v) => bound.push(v),
        }
    }
    let mut bound_kwargs = Kwargs::with_capacity(params.kwonly.len());
    for p in &params.kwonly {
        let name: &str = p.name.as_ref();
        let value = keyword(name).or_else(|| fun.kw_defaults.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v.clone()));
        match value {
            Some(Value::Opaque(_) | Value::UnknownNumber(_)) | None => return (args, kwargs),
            Some(v) => bound_kwargs.push((p.name.as_ref().into(), v)),
        }
    }
    (bound, bound_kwargs)
}
