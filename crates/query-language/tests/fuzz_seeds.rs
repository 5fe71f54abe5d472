//! Replays the seed corpora of the fuzz targets on this crate's parsers (docs/testing.md
//! "Fuzzing"): every seed must parse to Ok or Err without a panic. The harness is the fuzz
//! targets' own (fuzz/src), compiled here too.

#[path = "../../../fuzz/src/json.rs"]
mod json;
#[path = "../../../fuzz/src/seeds.rs"]
mod seeds;

#[test]
fn json_query_seeds_do_not_panic() -> std::io::Result<()> {
    seeds::replay(env!("CARGO_MANIFEST_DIR"), "json_query", json::query)?;
    Ok(())
}

#[test]
fn json_filter_seeds_do_not_panic() -> std::io::Result<()> {
    seeds::replay(env!("CARGO_MANIFEST_DIR"), "json_filter", json::filter)?;
    Ok(())
}
