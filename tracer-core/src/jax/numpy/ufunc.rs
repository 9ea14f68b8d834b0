//! The ufunc table: every jnp / scipy.special / nn function that is one elementwise
//! primitive, as a row (function → primitive), served by one generic function with the
//! primitive's dtype rule (promotion, `promote_args_inexact`, bitwise dtypes).

/// The parameter names of a two-argument jnp function, as its `TypeError` for a missing
/// argument names them: JAX 0.10.2's ufuncs take `(x, y)`, the other binary functions
/// `(x1, x2)` (listed from the installed JAX by calling each with one argument).
pub(super) fn binary_parameter_names(name: &str) -> (&'static str, &'static str) {
    const X_Y: [&str; 20] = [
        "add",
        "subtract",
        "multiply",
        "maximum",
        "minimum",
        "greater",
        "less",
        "equal",
        "not_equal",
        "bitwise_and",
        "logical_and",
        "nextafter",
        "float_power",
        "left_shift",
        "greater_equal",
        "less_equal",
        "logical_or",
        "logical_xor",
        "bitwise_or",
        "bitwise_xor",
    ];
    if X_Y.contains(&name) {
        ("x", "y")
    } else {
        ("x1", "x2")
    }
}
