//! Replays the seed corpora of the fuzz targets on this crate's parsers (docs/testing.md
//! "Fuzzing"): every seed must parse to Ok or Err without a panic. The harness is the fuzz
//! targets' own (fuzz/src), compiled here too.

#[path = "../../fuzz/src/engine.rs"]
mod engine;
#[path = "../../fuzz/src/seeds.rs"]
mod seeds;

#[test]
fn field_paths_seeds_do_not_panic() -> std::io::Result<()> {
    seeds::replay(env!("CARGO_MANIFEST_DIR"), "field_paths", engine::field_paths)?;
    Ok(())
}

#[test]
fn validation_rule_seeds_do_not_panic() -> std::io::Result<()> {
    seeds::replay(env!("CARGO_MANIFEST_DIR"), "validation_rule", engine::validation_rule)?;
    Ok(())
}

#[test]
fn write_payload_seeds_do_not_panic() -> std::io::Result<()> {
    seeds::replay(env!("CARGO_MANIFEST_DIR"), "write_payload", engine::write_payload)?;
    Ok(())
}

#[test]
fn plan_read_seeds_do_not_panic() -> std::io::Result<()> {
    seeds::replay(env!("CARGO_MANIFEST_DIR"), "plan_read", engine::plan_read)?;
    Ok(())
}
