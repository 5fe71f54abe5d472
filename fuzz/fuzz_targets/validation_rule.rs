//! A permission's validation rule (core-service permissions::validate).
//! Harness: `cdapi_fuzz::engine::validation_rule` (docs/testing.md "Fuzzing").
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cdapi_fuzz::engine::validation_rule(data));
