//! REST query string → query object → typed Query (edge-rest, cdapi-proto).
//! Harness: `cdapi_fuzz::rest::query_string` (docs/testing.md "Fuzzing").
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cdapi_fuzz::rest::query_string(data));
