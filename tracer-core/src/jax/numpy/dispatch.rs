//! The families of the surface: every function of `surface::JaxFn` goes to one family (one
//! file of this folder) or, for the functions `jax/transforms/` serves (transformations,
//! control flow, random, pytrees), to none. Each entry of `surface.rs` names its family, so
//! a new `JaxFn` does not compile until it is given one, and a row of the ufunc or lax
//! tables routed elsewhere fails the tests below.

use super::JaxFn;
pub(crate) use crate::jax::surface::Family;

/// The family that serves `f`: its entry in `surface.rs` says.
pub(super) fn family(f: JaxFn) -> Family {
    f.family()
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::super::{lax, ufunc};
    use super::*;

    fn the_ufunc_family_is_exactly_the_rows_of_the_table() {
        for &f in JaxFn::ALL {
            assert_eq!(family(f) == Family::Ufunc, ufunc::lookup(f).is_some(), "{}", f.qualified_name());
        }
        for (i, (f, _)) in ufunc::UFUNCS.iter().enumerate() {
            assert!(ufunc::UFUNCS[..i].iter().all(|(g, _)| g != f), "{} has two rows", f.qualified_name());
        }
    }

    fn the_lax_tables_functions_are_routed_to_lax() {
        for &f in JaxFn::ALL {
            if lax::unary_of(f).is_some() || lax::binary_of(f).is_some() {
                assert_eq!(family(f), Family::Lax, "{}", f.qualified_name());
            }
        }
    }

    crate::unit_tests::list![the_ufunc_family_is_exactly_the_rows_of_the_table, the_lax_tables_functions_are_routed_to_lax];
}
