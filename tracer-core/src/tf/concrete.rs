//! A `tf.function` trace's input parameters as TensorFlow 2.21 prints a concrete function's
//! signature (`f.pretty_printed_concrete_signatures()`, "Input Parameters:"): one row per
//! parameter of the Python function, in definition order, with its kind and its type —
//! `TensorSpec(shape=(None, 3), dtype=tf.float32, name=None)` for a tensor (the shape the
//! trace was made for: an `input_signature`'s or the relaxed one of `reduce_retracing`),
//! `VariableSpec(...)` for a variable, `Literal[3]` for a Python value, `List[...]`,
//! `Tuple[...]` and `Dict[['k', ...], ...]` for nested structures, and an omitted argument's
//! default as a `Literal`. What TensorFlow keys by identity (any other object, which it
//! prints as a `Weakref[...]` of an address) and functions with `**kwargs` are not
//! rendered (`*args` is: its extra arguments are rows `args_0`, `args_1`, ..., and the named
//! positional parameters beside it are `POSITIONAL_ONLY`): such a trace has no signature rather than a made-up one. A call is first bound
//! to those parameters as TensorFlow binds it before keying it (`bind`), so positional,
//! keyword and default arguments of the same parameter are one key.

use std::collections::HashMap;

use super::function::{shape_text, spec_text, Key, Leaf, Signature, TfFunction};
use super::TfValue;
use crate::interp::builtins::Builtin;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::Interp;
use crate::jax::InputParameter;

/// The input parameters of the trace of `f` for `key`, made from the call's `args` and
/// `kwargs`; `None` where a parameter's type is not one tracelens prints as TensorFlow does.
pub fn input_parameters(interp: &mut Interp, f: &TfFunction, key: &Key, args: &[Value], kwargs: &Kwargs) -> Option<Vec<InputParameter>> {
    let Value::Function(fun) = &f.fun else { return None };
    let params = &fun.def.params;
    if params.kwarg.is_some() {
        return None;
    }
    // With `*args`, TensorFlow makes the named positional parameters positional-only and
    // gives each extra argument a row of its own (`rest_0`, `rest_1`, ...).
    let vararg = params.vararg.as_ref().map(|p| p.name.to_string());
    let named_kind = if vararg.is_some() { "POSITIONAL_ONLY" } else { "POSITIONAL_OR_KEYWORD" };
    let leaves: HashMap<&str, &Leaf> = key.leaves.iter().map(|(p, l)| (p.as_str(), l)).collect();
    // An `input_signature`'s spec names its tensor (`name='ids'`); a method's specs are for
    // the parameters after `self`.
    let mut names = HashMap::new();
    if let Some(Signature::Specs(specs)) = &f.signature {
        let skip = usize::from(f.params.first().is_some_and(|p| p == "self"));
        for (j, spec) in specs.iter().enumerate() {
            names.insert(super::function::param(f, skip + j), spec.name.clone());
        }
    }
    let mut renderer = Renderer { leaves, names, variables: Vec::new() };
    // `get_concrete_function()` with no arguments on an `input_signature`: the specs alone.
    let specs_only = args.is_empty() && kwargs.is_empty() && !key.leaves.is_empty();
    let positional: Vec<(&str, &'static str)> = params
        .posonly
        .iter()
        .map(|p| (p.name.as_ref(), "POSITIONAL_ONLY"))
        .chain(params.args.iter().map(|p| (p.name.as_ref(), named_kind)))
        .collect();
    let n_positional = positional.len();
    // A named parameter passed by keyword beside `*args`, or an `input_signature` on such a
    // function, binds in ways not followed here.
    if vararg.is_some() && (specs_only || kwargs.iter().any(|(k, _)| positional.iter().any(|(n, _)| *n == k.as_ref()))) {
        return None;
    }
    let defaults_from = n_positional.saturating_sub(fun.defaults.len());
    let mut out = Vec::new();
    for (i, (name, kind)) in positional.into_iter().enumerate() {
        // A method's `self` is the instance TensorFlow binds, not an input parameter.
        if i == 0 && name == "self" {
            continue;
        }
        let path = super::function::param(f, i);
        let rendered = if specs_only {
            renderer.leaf(&path)
        } else if let Some(v) = args.get(i) {
            renderer.value(interp, v, &path)
        } else if let Some((_, v)) = kwargs.iter().find(|(k, _)| k.as_ref() == name) {
            renderer.value(interp, v, name)
        } else if i >= defaults_from {
            let default = fun.defaults.get(i - defaults_from)?.clone();
            renderer.value(interp, &default, name)
        } else {
            None
        };
        out.push(InputParameter { name: name.to_string(), kind, spec: rendered? });
    }
    if specs_only {
        return Some(out);
    }
    if args.len() > n_positional {
        let vararg = vararg.as_deref()?;
        for (j, v) in args.iter().enumerate().skip(n_positional) {
            let spec = renderer.value(interp, v, &super::function::param(f, j))?;
            out.push(InputParameter { name: format!("{vararg}_{}", j - n_positional), kind: "POSITIONAL_ONLY", spec });
        }
    }
    for p in &params.kwonly {
        let name: &str = p.name.as_ref();
        let rendered = match kwargs.iter().find(|(k, _)| k.as_ref() == name) {
            Some((_, v)) => renderer.value(interp, v, name),
            None => {
                let default = fun.kw_defaults.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v.clone())?;
                renderer.value(interp, &default, name)
            }
        };
        out.push(InputParameter { name: name.to_string(), kind: "KEYWORD_ONLY", spec: rendered? });
    }
    Some(out)
}

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

struct Renderer<'k> {
    /// The key's leaves by path (`x`, `batch['ids']`): a tensor's shape as traced.
    leaves: HashMap<&'k str, &'k Leaf>,
    /// The name an `input_signature` gives the tensor at a parameter's path.
    names: HashMap<String, Option<String>>,
    /// The variables met so far, by identity: a variable's `alias_id` is its index here.
    variables: Vec<usize>,
}

impl Renderer<'_> {
    fn leaf(&self, path: &str) -> Option<String> {
        match self.leaves.get(path)? {
            Leaf::Tensor(shape, dtype) => Some(tensor_spec(shape.as_deref(), dtype.name(), self.name(path))),
            _ => None,
        }
    }

    fn name(&self, path: &str) -> Option<&str> {
        self.names.get(path).and_then(|n| n.as_deref())
    }

    fn value(&mut self, interp: &mut Interp, v: &Value, path: &str) -> Option<String> {
        Some(match v {
            Value::Array(a) => match self.leaves.get(path) {
                Some(Leaf::Tensor(shape, dtype)) => tensor_spec(shape.as_deref(), dtype.name(), self.name(path)),
                // A default tensor: not part of the key, traced as it is.
                _ => {
                    let dims: Vec<Option<usize>> = a.aval.shape.iter().map(|&d| Some(d)).collect();
                    tensor_spec(Some(&dims), a.aval.dtype.name(), None)
                }
            },
            Value::Builtin(b) => match &**b {
                Builtin::Tf(TfValue::Spec(s)) => match self.leaves.get(path) {
                    Some(Leaf::Tensor(shape, dtype)) => tensor_spec(shape.as_deref(), dtype.name(), s.name.as_deref()),
                    _ => spec_text(s),
                },
                Builtin::Tf(TfValue::Variable(var)) => {
                    let id = std::rc::Rc::as_ptr(var) as usize;
                    let alias = self.variables.iter().position(|&v| v == id).unwrap_or_else(|| {
                        self.variables.push(id);
                        self.variables.len() - 1
                    });
                    let value = var.value.borrow();
                    let dims: Vec<Option<usize>> = value.aval.shape.iter().map(|&d| Some(d)).collect();
                    format!(
                        "VariableSpec(shape={}, dtype=tf.{}, trainable={}, alias_id={alias})",
                        shape_text(Some(&dims)),
                        value.aval.dtype.name(),
                        if var.trainable { "True" } else { "False" }
                    )
                }
                _ => return None,
            },
            Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) => {
                format!("Literal[{}]", interp.repr(v).ok()?)
            }
            Value::List(_) | Value::Tuple(_) => {
                let items = interp.iterate(v).ok()?;
                let mut shown = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    shown.push(self.value(interp, item, &format!("{path}[{i}]"))?);
                }
                let kind = if matches!(v, Value::List(_)) { "List" } else { "Tuple" };
                format!("{kind}[{}]", shown.join(", "))
            }
            Value::Dict(d) => {
                let items: Vec<(Value, Value)> = d.borrow().items();
                let mut shown = Vec::with_capacity(items.len());
                for (k, item) in items {
                    let key = interp.repr(&k).ok()?;
                    let inner = self.value(interp, &item, &format!("{path}[{key}]"))?;
                    shown.push(format!("[{key}, {inner}]"));
                }
                format!("Dict[{}]", shown.join(", "))
            }
            _ => return None,
        })
    }
}

/// `TensorSpec(shape=(None, 3), dtype=tf.float32, name=None)`.
fn tensor_spec(shape: Option<&[Option<usize>]>, dtype: &str, name: Option<&str>) -> String {
    let name = name.map_or("None".to_string(), |n| format!("'{n}'"));
    format!("TensorSpec(shape={}, dtype=tf.{dtype}, name={name})", shape_text(shape))
}
