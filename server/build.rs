//! Links the `tracelens` binary as a position-dependent executable on Linux with glibc.
//!
//! A position-independent executable makes the dynamic loader apply about 17,000 relative
//! relocations at every start and copy the pages they write (the vtables and tables in
//! `.data.rel.ro`); a `tracelens check` of one file is a few milliseconds, so start-up is a
//! measurable share of it (docs/performance.md). Linked at a fixed address, those are
//! resolved by the linker once. The objects stay position-independent code, which links
//! either way; the executable's own load address is then not randomised.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
