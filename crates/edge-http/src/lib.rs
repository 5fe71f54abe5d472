//! What both HTTP edges (edge-rest, edge-graphql) share, so a request carries the same identity
//! whichever protocol it arrives by.
//!
//! Layout:
//! - [`balance`] — gRPC calls spread over a service's replicas, with retries.
//! - [`body`] — request bodies read with a size cap.
//! - [`cookies`] — the auth cookies (names, attributes, parsing).
//! - [`list_chunks`] — streamed lists: when, the bytes gathered first, joining chunks.
//! - [`random`] — random identifiers (write keys, placeholders).
//! - [`client_ip`] — the end client's address behind trusted proxies.
//! - [`caller`] — the caller's token, address and request id as gRPC metadata.
//! - [`consistency`] — consistency tokens (read-your-writes over read replicas) to and from
//!   the client.
//! - [`reply`] — bodies and the Directus error body.
//! - [`schema_calls`] — which SchemaService call serves which schema-management request.
//! - [`settings`] — the settings both edges read, and their gRPC channels.
//! - [`observe`] — route templates for metrics.
//! - [`serve`] — the server loop (hyper through a warp filter, graceful shutdown).
//! - [`upgrade`] — the WebSocket handshake, and the settings of every WebSocket connection.
//! - [`websocket`] — what both edges' WebSockets share (writer queue, keepalive, limits).
//! - [`revert`], [`utils`] — Directus's `/utils` calls (`utils_*` in GraphQL).
//! - [`request_target`] — raw `"`, `<`, `>` in request targets made acceptable to hyper.

pub mod balance;
pub mod body;
pub mod caller;
pub mod client_ip;
pub mod consistency;
pub mod cookies;
pub mod edge_cache;
pub mod list_chunks;
pub mod observe;
pub mod random;
pub mod reply;
pub mod request_target;
pub mod revert;
pub mod schema_calls;
pub mod serve;
pub mod settings;
pub mod upgrade;
pub mod utils;
pub mod websocket;
pub mod write_stall;
