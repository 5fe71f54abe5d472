//! The gRPC contract between the edges, internal callers and the services (package `cdapi.v1`),
//! plus the pieces every process must agree on.
//!
//! Layout:
//! - [`v1`]: code generated from `proto/cdapi/v1/*.proto` (messages, clients, servers).
//! - [`edge_feed`]: how core-service keeps the edges' caches of item reads fresh.
//! - [`error_code`]: Directus's error codes, their gRPC and HTTP mapping, and how they travel
//!   in a `tonic::Status`.
//! - [`field_path`]: Directus's names of the field functions; a field path as REST spells it.
//! - [`field_type`]: Directus's names of the field types.

pub mod edge_feed;
pub mod error_code;
pub mod field_path;
pub mod field_type;
pub mod system_collections;

/// Generated code of package `cdapi.v1`.
#[allow(missing_docs, clippy::all, clippy::unwrap_used, clippy::expect_used)]
pub mod v1 {
    tonic::include_proto!("cdapi.v1");
}

/// The gRPC metadata key of an item write's write key (docs/grpc-api.md "Write keys"): the
/// edges stamp it, core-service records it.
pub const WRITE_KEY_METADATA: &str = "x-write-key";

/// The gRPC metadata key of a consistency token (docs/grpc-api.md "Consistency tokens"):
/// core-service answers writes with one when read replicas are configured, reads send it back.
pub const CONSISTENCY_METADATA: &str = "x-consistency-token";

/// Whether an RPC only reads (safe to send twice, never issues a consistency token): its method
/// name starts with `Read`, `Get`, `List`, `Watch`, `Export`, `Compare` or `Check` (health).
pub fn read_only_rpc(path: &str) -> bool {
    let method = path.rsplit('/').next().unwrap_or("");
    ["Read", "Get", "List", "Watch", "Export", "Compare", "Check"].iter().any(|p| method.starts_with(p))
}

/// Encoded `FileDescriptorSet` of every `cdapi.v1` file, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cdapi_descriptor.bin"));

pub use error_code::{ApiError, ErrorCode};
