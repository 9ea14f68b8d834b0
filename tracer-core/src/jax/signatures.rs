//! The parameters a caller of a modelled JAX function must give, from JAX's own signatures
//! (`signatures.tsv`, generated and checked against real JAX by
//! `tests/conformance/gen_signatures.py`), and the binding Python does with them: a required
//! parameter given by name moves into its position, so the models, which read required
//! parameters by position, see `jax.random.PRNGKey(seed=0)` as `PRNGKey(0)`; a call that
//! leaves one out raises JAX's `TypeError` before any model reads its arguments, so no model
//! has to guard the positions its signature guarantees.

use super::surface::JaxFn;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;

/// How JAX words the `TypeError` of a call that leaves out required parameters (the table's
/// third column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wording {
    /// Python's own message for a function Python calls by this name (`silu` for `jax.nn.swish`).
    Python(&'static str),
    /// A `custom_jvp`-decorated function's: its binding error names the first missing parameter.
    CustomJvp(&'static str),
}

// `SIGNATURES`, generated from `signatures.tsv` by build.rs: a check process looks up a few
// functions and builds nothing.
include!(concat!(env!("OUT_DIR"), "/signatures.rs"));

/// `f`'s required parameters and wording, if the table has `f`. Asked on every call of a
/// modelled function: the row of each function is found by name once per process, not by a
/// binary search over names on each call (an editor's analysis makes thousands of calls).
fn signature(f: JaxFn) -> Option<(&'static [&'static str], Wording)> {
    static ROWS: std::sync::OnceLock<Vec<Option<usize>>> = std::sync::OnceLock::new();
    let rows = ROWS.get_or_init(|| JaxFn::ALL.iter().map(|&f| row_by_name(f)).collect());
    // `JaxFn::ALL` lists the variants in declaration order (a unit test checks it), so
    // `f as usize` is `f`'s place in it; a function without a row has `None` there.
    let i = rows.get(f as usize).copied().flatten()?;
    Some((SIGNATURES[i].1, SIGNATURES[i].2))
}

/// The row of `SIGNATURES` naming `f` (sorted by name).
fn row_by_name(f: JaxFn) -> Option<usize> {
    let name = f.qualified_name();
    SIGNATURES.binary_search_by(|(n, _, _)| (*n).cmp(name)).ok()
}

/// The required parameters of `f` that can be given by position or by name.
pub fn required(f: JaxFn) -> &'static [&'static str] {
    signature(f).map_or(&[], |(required, _)| required)
}

/// JAX's `TypeError` message for a call of `f` with `given` positional arguments (after
/// `bind_required`) and `kwargs`, when it leaves out a required parameter.
pub fn missing_arguments(f: JaxFn, given: usize, kwargs: &Kwargs) -> Option<String> {
    let (required, wording) = signature(f)?;
    // The usual call: every required parameter given by position.
    if required.len() <= given {
        return None;
    }
    let missing: Vec<&str> = required.iter().skip(given).filter(|name| !kwargs.iter().any(|(k, _)| &**k == **name)).copied().collect();
    let first = missing.first()?;
    Some(match wording {
        Wording::Python(called) => crate::interp::call::missing_arguments(called, &missing),
        Wording::CustomJvp(called) => format!(
            "The input arguments to the custom_jvp-decorated function {called} could not be resolved to positional-only arguments. Binding failed with the error:\nmissing a required argument: '{first}'"
        ),
    })
}

/// Moves each required parameter given by name into its position, from the first one the
/// positional arguments leave out, as Python binds them. A name given twice (by position and
/// by name) stays where it is, for the model to raise Python's `TypeError`.
pub fn bind_required(f: JaxFn, mut args: Vec<Value>, mut kwargs: Kwargs) -> (Vec<Value>, Kwargs) {
    // Nothing to move.
    if kwargs.is_empty() {
        return (args, kwargs);
    }
    for name in required(f).iter().skip(args.len()) {
        let Some(at) = kwargs.iter().position(|(k, _)| &**k == *name) else { break };
        args.push(kwargs.remove(at).1);
    }
    (args, kwargs)
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    fn every_row_names_a_modelled_function() {
        assert!(SIGNATURES.windows(2).all(|w| w[0].0 < w[1].0), "sorted, each name once");
        assert!(SIGNATURES.len() > 300, "every row read: {}", SIGNATURES.len());
        for (name, _, _) in SIGNATURES {
            assert!(JaxFn::ALL.iter().any(|f| f.qualified_name() == *name), "{name} is not in surface.rs");
        }
        assert_eq!(required(JaxFn::RandomPRNGKey), ["seed"]);
        // The per-function rows agree with the table's names, for every function.
        for (at, &f) in JaxFn::ALL.iter().enumerate() {
            assert_eq!(f as usize, at, "{f:?}");
            assert_eq!(signature(f).map(|(r, _)| r), row_by_name(f).map(|i| SIGNATURES[i].1), "{f:?}");
        }
        assert!(JaxFn::ALL.iter().filter(|&&f| signature(f).is_some()).count() == SIGNATURES.len());
    }

    fn a_required_parameter_by_name_moves_into_its_position() {
        let kw = |k: &str, v: i64| (std::rc::Rc::from(k), Value::Int(v));
        let (args, kwargs) = bind_required(JaxFn::Full, vec![], vec![kw("fill_value", 1), kw("shape", 2), kw("dtype", 3)]);
        assert!(matches!(args.as_slice(), [Value::Int(2), Value::Int(1)]), "{args:?}");
        assert_eq!(kwargs.len(), 1);
        // Only from where the positional arguments stop: `full(2, shape=3)` is left for the
        // model (and Python) to reject.
        let (args, kwargs) = bind_required(JaxFn::Full, vec![Value::Int(2)], vec![kw("shape", 3)]);
        assert_eq!((args.len(), kwargs.len()), (1, 1));
    }

    fn every_row_says_how_a_call_without_its_arguments_fails() {
        let rows = include_str!("signatures.tsv").lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(SIGNATURES.len(), rows, "a row build.rs does not read");
    }

    fn a_missing_parameter_is_named_as_jax_names_it() {
        let kw = |k: &str| (std::rc::Rc::from(k), Value::Int(0));
        assert_eq!(missing_arguments(JaxFn::Vjp, 0, &vec![]).as_deref(), Some("vjp() missing 1 required positional argument: 'fun'"));
        assert_eq!(
            missing_arguments(JaxFn::Jvp, 1, &vec![]).as_deref(),
            Some("jvp() missing 2 required positional arguments: 'primals' and 'tangents'")
        );
        // Given by name after one left out: only the one left out is missing.
        assert_eq!(
            missing_arguments(JaxFn::Reshape, 0, &vec![kw("shape")]).as_deref(),
            Some("reshape() missing 1 required positional argument: 'a'")
        );
        assert_eq!(missing_arguments(JaxFn::Reshape, 2, &vec![]), None);
        assert!(missing_arguments(JaxFn::NnRelu, 0, &vec![]).is_some_and(|m| m.ends_with("missing a required argument: 'x'")));
    }

    crate::unit_tests::list![
        every_row_names_a_modelled_function,
        a_required_parameter_by_name_moves_into_its_position,
        every_row_says_how_a_call_without_its_arguments_fails,
        a_missing_parameter_is_named_as_jax_names_it
    ];
}
