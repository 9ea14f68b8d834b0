//! `tf.function`'s `input_signature`: what it may be (a list or tuple of `TensorSpec`s;
//! anything else is TensorFlow's `TypeError` where the function is made, TL111), and a call
//! checked against it (TL113). `function.rs` keys a call with a signature by its specs.

use std::rc::Rc;

use super::function::TfFunction;
use super::{tensor, TensorSpec, TfValue};
use crate::diagnostics::Code;
use crate::interp::builtins::Builtin;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;
use crate::interp::{Flow, Interp, PyResult};

/// A function's `input_signature`: its specs, or one whose items tracelens does not read
/// (the function is then traced with its tensors of unknown shape).
#[derive(Debug, Clone)]
pub enum Signature {
    Specs(Vec<Rc<TensorSpec>>),
    Unread,
}

/// The `input_signature` argument of `tf.function`, checked as TensorFlow checks it.
pub fn read(interp: &mut Interp, value: Option<Value>) -> PyResult<Option<Signature>> {
    Ok(match value {
        None | Some(Value::None) => None,
        Some(v @ (Value::List(_) | Value::Tuple(_))) => {
            let mut specs = Vec::new();
            let mut invalid = Vec::new();
            let mut unread = false;
            for item in interp.iterate(&v)? {
                match &item {
                    Value::Builtin(b) if let Builtin::Tf(TfValue::Spec(s)) = &**b => specs.push(s.clone()),
                    Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::Bool(_) | Value::None => invalid.push(item.clone()),
                    _ => {
                        unread = true;
                        break;
                    }
                }
            }
            if !invalid.is_empty() {
                let shown = interp.repr(&Value::list(invalid.clone()))?;
                let types: Vec<String> = invalid.iter().map(|i| format!("<class '{}'>", i.type_name())).collect();
                let msg = format!(
                    "input_signature must be a possibly nested sequence of TensorSpec objects, got invalid args {shown} with types [{}].",
                    types.join(", ")
                );
                return Err(interp.raise("TypeError", Code::BadStaticArg, msg));
            }
            // `input_signature=[]`: a function of no tensor arguments, one trace.
            Some(if unread { Signature::Unread } else { Signature::Specs(specs) })
        }
        Some(Value::Builtin(b)) if let Builtin::Tf(TfValue::Spec(_)) = &*b => {
            let msg = "input_signature must be either a tuple or a list, got <class 'tensorflow.python.framework.tensor.TensorSpec'>.";
            return Err(interp.raise("TypeError", Code::BadStaticArg, msg));
        }
        Some(_) => Some(Signature::Unread),
    })
}

/// The call against `input_signature`: too many arguments, or a tensor whose dtype or shape
/// the spec does not accept, is TensorFlow's `TypeError` at the call (TL113).
pub fn check(
    interp: &mut Interp,
    f: &Rc<TfFunction>,
    specs: &[Rc<TensorSpec>],
    args: &[Value],
    kwargs: &Kwargs,
    first_param: usize,
) -> PyResult<()> {
    let signature_text = || {
        specs
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}: {}", super::function::param(f, i + first_param), spec_text(s)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mismatch = |interp: &mut Interp, why: String| -> Flow {
        let received = interp.repr(&Value::tuple(args.to_vec())).unwrap_or_default();
        let kw: Vec<String> = kwargs.iter().map(|(k, v)| format!("'{k}': {}", interp.repr(v).unwrap_or_default())).collect();
        let msg = format!(
            "Binding inputs to tf.function failed due to `{why}`. Received args: {received} and kwargs: {{{}}} for signature: ({}).",
            kw.join(", "),
            signature_text()
        );
        interp.raise("TypeError", Code::SignatureMismatch, msg)
    };
    if args.len() > specs.len() {
        return Err(mismatch(interp, "too many positional arguments".into()));
    }
    for (a, spec) in args.iter().zip(specs) {
        let Value::Array(t) = a else { continue };
        let dims: Vec<Option<usize>> = t.aval.shape.iter().map(|&d| Some(d)).collect();
        let fits = t.aval.dtype == spec.dtype
            && spec.shape.as_ref().is_none_or(|s| s.len() == dims.len() && s.iter().zip(&dims).all(|(x, y)| x.is_none() || x == y));
        if !fits {
            let given = TensorSpec { shape: Some(dims), dtype: t.aval.dtype, name: None };
            return Err(mismatch(interp, format!("Can not cast {} to {}", spec_text(&given), spec_text(spec))));
        }
    }
    Ok(())
}

/// `TensorSpec(shape=(None, 3), dtype=tf.float32, name=None)`.
pub fn spec_text(s: &TensorSpec) -> String {
    let name = s.name.as_deref().map_or("None".to_string(), |n| format!("'{n}'"));
    format!("TensorSpec(shape={}, dtype=tf.{}, name={name})", shape_text(s.shape.as_deref()), s.dtype.name())
}

pub fn shape_text(shape: Option<&[Option<usize>]>) -> String {
    match shape {
        Some(dims) => tensor::shape_str(dims),
        None => "<unknown>".into(),
    }
}
