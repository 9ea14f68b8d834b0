//! The diagnostic code an uncaught exception is reported under, from its class: the code a
//! shim's class names, else that of the first JAX tracing error in its MRO.

use std::rc::Rc;

use super::model::errors::code_for_jax_error;
use super::value::{Class, Value};
use crate::diagnostics::Code;

pub fn code_for_exception_class(class: &Rc<Class>) -> Option<Code> {
    // A shim's exception class names its code (`__tracelens_code__ = "TL104"`, flax's
    // `ScopeParamShapeError`), so a library's errors are classified in its own Python.
    if let Some(Value::Str(code)) = class.lookup("__tracelens_code__") {
        if let Some(code) = Code::from_str(&code) {
            return Some(code);
        }
    }
    class.mro().iter().find_map(|c| code_for_jax_error(c.name.as_ref()))
}
