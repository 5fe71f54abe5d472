//! `fields` paths and function calls (core-service query::fields, query::functions).
//! Harness: `cdapi_fuzz::engine::field_paths` (docs/testing.md "Fuzzing").
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cdapi_fuzz::engine::field_paths(data));
