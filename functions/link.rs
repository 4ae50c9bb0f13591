//! The build script every function shares: each function's binary is linked as a
//! position-dependent executable (`-no-pie`). The dynamic loader then has no relative
//! relocations to apply at each cold start (about 17,000 in a position-independent build, a
//! quarter of the init's instructions: docs/figures/coldstart.md). The code itself stays
//! position-independent; only the executable's own load address is fixed (its libraries, stack
//! and heap are still placed at random).
fn main() {
    println!("cargo::rustc-link-arg-bins=-no-pie");
    // Its output depends on nothing but this file: no rerun for a change to the function.
    println!("cargo::rerun-if-changed=../link.rs");
}
