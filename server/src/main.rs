//! The `tracelens` binary.
fn main() {}
