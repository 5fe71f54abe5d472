//! Compiles `proto/cdapi/v1/*.proto` with protox (pure Rust: no protoc needed on a fresh machine)
//! into Rust code and a descriptor set for gRPC server reflection.
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/cdapi/v1/query.proto",
        "proto/cdapi/v1/items.proto",
        "proto/cdapi/v1/schema.proto",
        "proto/cdapi/v1/versions.proto",
        "proto/cdapi/v1/auth.proto",
        "proto/cdapi/v1/files.proto",
    ];
    for f in &files {
        println!("cargo:rerun-if-changed={f}");
    }
    let fds = protox::compile(files, ["proto"])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("cdapi_descriptor.bin"), prost::Message::encode_to_vec(&fds))?;
    tonic_prost_build::configure().build_server(true).build_client(true).bytes(".cdapi.v1").compile_fds(fds)?;
    Ok(())
}
