//! Golden tables that `cargo test` reads without Python (tracer-core/tests/data/), checked
//! against what real JAX gives now: each generator is re-run with `--check`, which exits 1
//! when the committed table drifted from JAX's values.

use crate::process::run_with_limit;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Generators under tests/conformance/ that support `--check`.
const GENERATORS: &[&str] = &["gen_ops_golden.py", "gen_signatures.py", "gen_layers_golden.py"];

/// Runs every generator's check; prints what each said. `true` when none drifted.
pub fn check(python: &Path, conformance_dir: &Path) -> bool {
    let mut ok = true;
    for name in GENERATORS {
        let script = conformance_dir.join(name);
        let mut command = Command::new(python);
        command.arg(&script).arg("--check").env("JAX_PLATFORMS", "cpu");
        match run_with_limit(command, Duration::from_secs(1200)) {
            Ok(done) if done.status == Some(0) => print!("golden {name}: {}", done.stdout),
            Ok(done) => {
                ok = false;
                let why = if done.timed_out { "timed out".to_string() } else { format!("exit status {:?}", done.status) };
                println!("golden {name}: FAIL ({why})\n{}{}", done.stdout, done.stderr);
            }
            Err(e) => {
                ok = false;
                println!("golden {name}: FAIL (cannot run {}: {e})", python.display());
            }
        }
    }
    ok
}
