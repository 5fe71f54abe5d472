//! Replays the seed corpora of the fuzz targets on this crate's parsers (docs/testing.md
//! "Fuzzing"): every seed must parse to Ok or Err without a panic. The harness is the fuzz
//! targets' own (fuzz/src), compiled here too.

#[path = "../../fuzz/src/graphql.rs"]
mod graphql;
#[path = "../../fuzz/src/seeds.rs"]
mod seeds;

#[test]
fn graphql_arguments_seeds_do_not_panic() -> std::io::Result<()> {
    seeds::replay(env!("CARGO_MANIFEST_DIR"), "graphql_arguments", graphql::arguments)?;
    Ok(())
}
