//! edge-graphql: the GraphQL API (docs/graphql.md; Directus docs "GraphQL"). Its schema is
//! generated from the core's schema snapshot, rebuilt when the core reports a change, and every
//! operation is translated into the same gRPC calls the REST edge makes. No business rules here.
//!
//! Layout:
//! - [`config`] — the settings.
//! - [`budget`] — the caps of one document (size, root fields, aliases, fields, `auth_*`).
//! - [`model`] — the snapshot as GraphQL sees it (the naming rule: what is exposed, as what).
//! - [`types`] — the generated types (item objects, filters, inputs, aggregates, unions).
//! - [`filter_inputs`] — the operator inputs of filters, derived from the operator catalog.
//! - [`fast`] — the fast path answering item reads in one pass over the core's reply.
//! - [`documents`] — parsed documents kept by query text.
//! - [`direct`] — validated queries of fast-path reads answered without the executor.
//! - [`projection`] — an item of the core's reply written as the JSON of a selection (one pass).
//! - [`prerendered`] — root fields answered as JSON text, spliced into the serialised response.
//! - [`list_stream`] — long root lists written as they arrive (`limit` over GRAPHQL_STREAM_LIMIT).
//! - [`root`] — `/graphql`'s root fields and their resolvers (one core call per root field).
//! - [`system`] — `/graphql/system`'s own root fields (the `auth_*` mutations).
//! - [`utils`] — `/graphql/system`'s `utils_*` mutations.
//! - [`schema_management`] — `/graphql/system`'s collections, fields and relations (reads and changes).
//! - [`selection`] — a selection tree → the typed query's `fields`, `alias` and `deep`.
//! - [`filters`] — a `filter` argument → the typed filter (the GraphQL key spelling).
//! - [`values`] — JSON ↔ GraphQL values, errors.
//! - [`schemas`] — building both schemas of a snapshot.
//! - [`cache`] — the schemas in use: the current build, the per-caller views, the watcher.
//! - [`views`] — the schemas per caller: their role's read view (cached by credential).
//! - [`response_json`] — a response as Directus's JSON (key order, error codes).
//! - [`http`] — the request handler and its routes (`/graphql`, `/graphql/system`, `/server/health`).
//!
//! [`run`] serves on a given listener until a shutdown future resolves.

pub mod budget;
pub mod cache;
pub mod config;
pub mod direct;
pub mod documents;
pub mod fast;
pub mod filter_inputs;
pub mod filters;
pub mod http;
pub mod list_stream;
pub mod model;
pub mod prerendered;
pub mod projection;
pub mod response_json;
pub mod root;
pub mod schema_management;
pub mod schemas;
pub mod selection;
pub mod subscriptions;
pub mod system;
pub mod types;
pub mod utils;
pub mod values;
pub mod views;
pub mod ws;

use cdapi_proto::v1::auth_service_client::AuthServiceClient;
use cdapi_proto::v1::files_service_client::FilesServiceClient;
use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::schema_service_client::SchemaServiceClient;
use edge_http::balance::Balanced as Channel;
use std::future::Future;
use std::sync::Arc;

/// The services behind the edge, shared by every request (schema data).
pub struct Backend {
    /// Items (reads, aggregates, writes).
    pub items: ItemsServiceClient<Channel>,
    /// Auth (`auth_*` mutations).
    pub auth: AuthServiceClient<Channel>,
    /// Schema snapshots (the watcher).
    pub schema: SchemaServiceClient<Channel>,
    /// Files (`import_file`), on a channel without the CORE_TIMEOUT_MS deadline (an import
    /// is bounded by the core's FILES_IMPORT_TIMEOUT_MS).
    pub files: FilesServiceClient<Channel>,
    /// Item subscriptions (`<collection>_mutated`), on a channel without a deadline: a
    /// subscription lasts as long as its client.
    pub subscriptions: ItemsServiceClient<Channel>,
    /// Auth cookie names and attributes.
    pub cookies: edge_http::cookies::CookieSettings,
}

/// Per request: who calls, the auth cookies it carries, and the parsed operation (for
/// [`fast`]).
pub struct RequestData {
    /// The parsed document (`None` when it does not parse: GraphQL reports that itself).
    pub document: Option<Arc<async_graphql::parser::types::ExecutableDocument>>,
    /// The request's variables.
    pub variables: async_graphql::Variables,
    /// The operation to run, when the document names several.
    pub operation_name: Option<String>,
    /// Token, address and request id, forwarded as gRPC metadata.
    pub caller: edge_http::caller::Caller,
    /// The refresh token cookie (mode cookie).
    pub refresh_cookie: Option<String>,
    /// The session token cookie (mode session).
    pub session_cookie: Option<String>,
    /// Long root lists answered by streams (HTTP only; `None` over WebSocket).
    pub streams: Option<Arc<list_stream::ListStreams>>,
    /// Root fields the fast path answered as JSON text.
    pub prerendered: Arc<prerendered::Prerendered>,
}

/// Serves `/graphql` and `/graphql/system` on `listener` until `shutdown` resolves (in-flight
/// requests finish). Schemas come from the core's `WatchSchema` stream; until the first one
/// arrives, requests answer 503 SERVICE_UNAVAILABLE. Errors: an invalid service URL.
pub async fn run(settings: config::Settings, listener: tokio::net::TcpListener, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
    let edge = &settings.edge;
    let core = edge.channel(&edge.core_url, true)?;
    let unbounded = edge.channel(&edge.core_url, false)?;
    let backend = Arc::new(Backend {
        items: ItemsServiceClient::new(core).max_decoding_message_size(usize::MAX),
        auth: AuthServiceClient::new(edge.channel(&edge.auth_url, true)?),
        // The watch stream lives as long as the core: no deadline on its channel.
        schema: SchemaServiceClient::new(unbounded.clone()).max_decoding_message_size(usize::MAX),
        files: FilesServiceClient::new(unbounded.clone()),
        subscriptions: ItemsServiceClient::new(unbounded).max_decoding_message_size(usize::MAX),
        cookies: edge.cookies.clone(),
    });
    let cache = Arc::new(cache::SchemaCache::new(backend.clone(), schemas::Limits::from(&settings)));
    let watcher = tokio::spawn(cache::watch(cache.clone()));
    let readiness = service_runtime::shutdown::Readiness::default();
    let handler = http::handler(cache, Arc::new(settings.clone()), readiness.clone());
    tracing::info!(addr = %listener.local_addr()?, core = %edge.core_url, auth = %edge.auth_url, "edge-graphql listening (HTTP)");
    let served = edge_http::serve::run(listener, shutdown, readiness, handler).await;
    watcher.abort();
    served?;
    tracing::info!("edge-graphql stopped");
    Ok(())
}
