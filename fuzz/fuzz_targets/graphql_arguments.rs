//! GraphQL document + variables → typed Query per root field (edge-graphql).
//! Harness: `cdapi_fuzz::graphql::arguments` (docs/testing.md "Fuzzing").
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cdapi_fuzz::graphql::arguments(data));
