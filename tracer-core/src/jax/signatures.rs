//! The parameters a caller of a modelled JAX function must give, from JAX's own signatures
//! (`signatures.tsv`, generated and checked against real JAX by
//! `tests/conformance/gen_signatures.py`), and the binding Python does with them: a required
//! parameter given by name moves into its position, so the models, which read required
//! parameters by position, see `jax.random.PRNGKey(seed=0)` as `PRNGKey(0)`.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::surface::JaxFn;
use crate::interp::call::Kwargs;
use crate::interp::value::Value;

const TABLE: &str = include_str!("signatures.tsv");

/// `qualified name -> required positional-or-keyword parameters`, in order.
type Table = HashMap<&'static str, Vec<&'static str>, foldhash::fast::FixedState>;

fn table() -> &'static Table {
    static PARSED: OnceLock<Table> = OnceLock::new();
    PARSED.get_or_init(|| {
        TABLE
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once('\t'))
            .map(|(name, params)| (name, params.split(',').filter(|p| !p.is_empty()).collect()))
            .collect()
    })
}

/// The required parameters of `f` that can be given by position or by name.
pub fn required(f: JaxFn) -> &'static [&'static str] {
    table().get(f.qualified_name()).map(Vec::as_slice).unwrap_or(&[])
}

/// Moves each required parameter given by name into its position, from the first one the
/// positional arguments leave out, as Python binds them. A name given twice (by position and
/// by name) stays where it is, for the model to raise Python's `TypeError`.
pub fn bind_required(f: JaxFn, mut args: Vec<Value>, mut kwargs: Kwargs) -> (Vec<Value>, Kwargs) {
    // Nothing to move (the table is not even read: `check` of a file builds it only if asked).
    if kwargs.is_empty() {
        return (args, kwargs);
    }
    for name in required(f).iter().skip(args.len()) {
        let Some(at) = kwargs.iter().position(|(k, _)| &**k == *name) else { break };
        args.push(kwargs.remove(at).1);
    }
    (args, kwargs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_names_a_modelled_function() {
        for name in table().keys() {
            assert!(JaxFn::ALL.iter().any(|f| f.qualified_name() == *name), "{name} is not in surface.rs");
        }
        assert_eq!(required(JaxFn::RandomPRNGKey), ["seed"]);
    }

    #[test]
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
}
