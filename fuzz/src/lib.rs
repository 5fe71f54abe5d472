//! The harness of the fuzz targets (docs/testing.md "Fuzzing": every parser of untrusted input,
//! no panic). Each function takes one raw fuzz input, feeds it to a parser the way a request
//! would, and ignores the outcome: `Ok` and `Err` are both fine, a panic or a hang is the bug.
//!
//! The modules are plain files so that the workspace's tests can compile them too
//! (`#[path = "../../fuzz/src/<module>.rs"]`) and replay `fuzz/seeds/<target>/` on every
//! `cargo test --workspace`, without the workspace depending on libFuzzer.

pub mod engine;
pub mod graphql;
pub mod json;
pub mod rest;
pub mod seeds;
