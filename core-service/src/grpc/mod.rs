//! gRPC service implementations: thin translations from requests to the query engine.
//! Layout: [`items`] (ItemsService), [`schema`] (SchemaService; its schema-management RPCs in [`schema_admin`]), [`versions`] (VersionsService).

pub mod chunks;
pub mod files;
pub mod items;
pub mod schema;
pub mod schema_admin;
pub mod stream_budget;
pub mod versions;

use tracing::Span;

/// A span for one RPC carrying the request id the edge generated (metadata `x-request-id`),
/// so every log line of the request — database statements included — can be tied to it.
pub fn request_span<T>(rpc: &'static str, req: &tonic::Request<T>) -> Span {
    let request_id = req.metadata().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-").to_owned();
    tracing::info_span!("rpc", rpc, request_id = %request_id)
}
