//! Repository tasks (`cargo xtask ...`).
fn main() {}
