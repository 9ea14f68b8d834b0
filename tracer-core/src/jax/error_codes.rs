//! The diagnostic code each of JAX's tracing errors is reported under, by the name of its
//! exception class. A leaf of the import graph: the interpreter classifies an uncaught
//! exception with it (`interp/exception_code.rs`) without reaching the rest of the model.

use crate::diagnostics::Code;

/// The code of JAX's exception class `name`, when it is one of JAX's tracing errors.
pub fn code_for_jax_error(name: &str) -> Option<Code> {
    Some(match name {
        "TracerBoolConversionError" | "ConcretizationTypeError" | "TracerIntegerConversionError" => Code::Concretization,
        "TracerArrayConversionError" => Code::TracerToNumpy,
        "UnexpectedTracerError" => Code::LeakedTracer,
        "NonConcreteBooleanIndexError" => Code::DynamicShape,
        _ => return None,
    })
}
