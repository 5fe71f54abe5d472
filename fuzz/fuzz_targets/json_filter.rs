//! JSON filter → typed Filter (cdapi-proto query_json).
//! Harness: `cdapi_fuzz::json::filter` (docs/testing.md "Fuzzing").
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cdapi_fuzz::json::filter(data));
