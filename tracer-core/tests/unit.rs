//! The engine's unit tests (the `tests` modules in src/, gathered by src/unit_tests.rs, which
//! says why they run from here), with libtest's command line: `cargo test -p tracer-core
//! --test unit -- syntax::lower` runs those whose path contains `syntax::lower`.

use libtest_mimic::{Arguments, Trial};

fn main() {
    let arguments = Arguments::from_args();
    let trials = tracer_core::unit_tests::all()
        .map(|test| {
            let name = test.name.strip_prefix("tracer_core::").unwrap_or(test.name);
            Trial::test(name, move || {
                (test.run)();
                Ok(())
            })
        })
        .collect();
    libtest_mimic::run(&arguments, trials).exit();
}
