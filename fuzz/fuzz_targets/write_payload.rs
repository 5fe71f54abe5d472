//! A write payload's values against a collection (core-service write::payload).
//! Harness: `cdapi_fuzz::engine::write_payload` (docs/testing.md "Fuzzing").
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cdapi_fuzz::engine::write_payload(data));
