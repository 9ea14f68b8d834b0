//! Golden tables that `cargo test` reads without Python (tracer-core/tests/data/), checked
//! against what real JAX gives now: each generator is re-run with `--check`, which exits 1
//! when the committed table drifted from JAX's values.

use crate::pool;
use crate::process::run_with_limit;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Generators under tests/conformance/ that support `--check`.
const GENERATORS: &[&str] = &["gen_ops_golden.py", "gen_signatures.py", "gen_layers_golden.py"];

/// Runs every generator's check, side by side (each is one Python process): `true` when none
/// drifted, and what each said, in the table's order.
pub fn check(python: &Path, conformance_dir: &Path) -> (bool, String) {
    let outcomes = pool::map(GENERATORS, GENERATORS.len(), |_, name| {
        let script = conformance_dir.join(name);
        let mut command = Command::new(python);
        command.arg(&script).arg("--check").env("JAX_PLATFORMS", "cpu");
        match run_with_limit(command, Duration::from_secs(3600)) {
            Ok(done) if done.status == Some(0) => (true, format!("golden {name}: {}", done.stdout)),
            Ok(done) => {
                let why = if done.timed_out { "timed out".to_string() } else { format!("exit status {:?}", done.status) };
                (false, format!("golden {name}: FAIL ({why})\n{}{}\n", done.stdout, done.stderr))
            }
            Err(e) => (false, format!("golden {name}: FAIL (cannot run {}: {e})\n", python.display())),
        }
    });
    (outcomes.iter().all(|(ok, _)| *ok), outcomes.into_iter().map(|(_, said)| said).collect())
}
