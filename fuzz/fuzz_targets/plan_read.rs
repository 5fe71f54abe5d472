//! JSON query → SQL read statements on a fixed schema (core-service query planner).
//! Harness: `cdapi_fuzz::engine::plan_read` (docs/testing.md "Fuzzing").
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cdapi_fuzz::engine::plan_read(data));
