//! JSON query object → typed Query (cdapi-proto query_json).
//! Harness: `cdapi_fuzz::json::query` (docs/testing.md "Fuzzing").
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cdapi_fuzz::json::query(data));
