//! The engine's unit tests, gathered for `tests/unit.rs`, which runs them.
//!
//! A unit test is a plain `fn` in a `tests` module beside the code it tests, compiled when the
//! `unit-tests` feature is on (the crate's dev-dependency on itself turns it on, so every
//! `cargo test` build has it) and named in that module's `list!` at its end. Not
//! `#[cfg(test)]` and `#[test]`: then `cargo test` compiles the whole engine twice, once as the
//! library the integration tests link and once as the library's own test harness (657 s of
//! wall time beside the other units in a `cargo test --timings` here, sharing 2 cores; about
//! 100 s of CPU in a clean-clone CI run). Now the engine is compiled once, for both.
//!
//! A test left out of its module's list, or a module left out of `MODULES`, is dead code: with
//! the feature on, the crate denies dead code (lib.rs), so it fails to compile.

/// One unit test: its path (`syntax::lower::tests::imports`) and its body, which panics to fail.
pub struct UnitTest {
    pub name: &'static str,
    pub run: fn(),
}

/// `crate::unit_tests::list![a, b];` at the end of a `tests` module: its tests, as `TESTS`.
macro_rules! list {
    ($($test:ident),* $(,)?) => {
        pub(crate) const TESTS: &[$crate::unit_tests::UnitTest] = &[$($crate::unit_tests::UnitTest {
            name: concat!(module_path!(), "::", stringify!($test)),
            run: $test,
        }),*];
    };
}
pub(crate) use list;

/// Every module with unit tests (a private module's through its parent's re-export).
const MODULES: &[&[UnitTest]] = &[
    crate::analysis::values_tests::TESTS,
    crate::entry::tests::TESTS,
    crate::entry_staged::tests::TESTS,
    crate::interp::clock::tests::TESTS,
    crate::interp::int_math::tests::TESTS,
    crate::interp::once_guard_tests::TESTS,
    crate::interp::pyrandom::tests::TESTS,
    crate::interp::seen::tests::TESTS,
    crate::interp::stdlib::tests::TESTS,
    crate::interp::value::tests::TESTS,
    crate::jax::ad::tests::TESTS,
    crate::jax::dtypes::tests::TESTS,
    crate::jax::eval_cost::tests::TESTS,
    crate::jax::ir::tests::TESTS,
    crate::jax::numpy::dispatch_tests::TESTS,
    crate::jax::prims::all::TESTS,
    crate::jax::prims::linalg::kernels::tests::TESTS,
    crate::jax::prims::products::tests::TESTS,
    crate::jax::prims::random::kernels::tests::TESTS,
    crate::jax::print::tests::TESTS,
    crate::jax::value_log::tests::TESTS,
    crate::jax::signatures::tests::TESTS,
    crate::jax::special::tests::TESTS,
    crate::jax::stmt::tests::TESTS,
    crate::jax::transforms::export::tests::TESTS,
    crate::repro::key_tests::TESTS,
    crate::repro::inline::tests::TESTS,
    crate::repro::source::tests::TESTS,
    crate::symbolic::tests::TESTS,
    crate::syntax::tests::TESTS,
    crate::syntax::cst_tests::TESTS,
    crate::syntax::line_index_tests::TESTS,
    crate::syntax::lower_tests::TESTS,
    crate::tf::autograph::scope::tests::TESTS,
    crate::tf::print_tests::TESTS,
];

/// Every unit test, module by module.
pub fn all() -> impl Iterator<Item = &'static UnitTest> {
    MODULES.iter().flat_map(|tests| tests.iter())
}
