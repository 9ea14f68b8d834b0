//! The `tracelens` binary of this build as a command, and scratch folders with files in them:
//! shared by the command-line tests (`cli.rs`, `trace.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn tracelens() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracelens"))
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write fixture");
    p
}

/// A fresh folder for one test, named after it and this process.
pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracelens-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}
