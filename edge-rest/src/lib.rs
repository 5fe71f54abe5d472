//! edge-rest: the public REST API. It parses HTTP requests into the typed gRPC query, calls the
//! core, and renders replies (status codes, Directus error bodies). No business rules here.
//!
//! Layout: [`config`] (settings), [`request`] (the state, the request and its gRPC call, body
//! and query-string rules, shared by the route modules), [`routes`] (routing and translation to gRPC), [`auth`]
//! (`/auth/*`, `/users/me/tfa/*`), [`me`] (the caller's roles, page and item access), [`extensions`]
//! (`/extensions*`), [`rate_limit`] (requests per client address), [`query_string`]
//! (query string → query object), [`identifiers`] (the names' length budget), [`export`] (file formats of `export=`), [`versions`]
//! (`/versions`), [`utils`], [`import`] and [`export_file`] (`/utils/*`), [`schema_routes`] (`/collections`, `/fields`, `/relations`), [`graphql_proxy`] (`/graphql*` forwarded to edge-graphql), [`server`]
//! (`/server/info`, `/server/specs/oas`), [`studio`] (the Data Studio at `/admin`), [`openapi`] (the OpenAPI document), [`reply`]
//! (responses and error rendering).
//! [`run`] serves on a given listener until a shutdown future resolves.

pub mod auth;
pub mod cached_read;
pub mod config;
pub mod export;
pub mod export_file;
pub mod extensions;
pub mod files;
pub mod graphql_proxy;
pub mod identifiers;
pub mod import;
pub mod list_stream;
pub mod me;
pub mod openapi;
pub mod query_string;
pub mod rate_limit;
pub mod realtime;
pub mod reply;
pub mod request;
pub mod routes;
pub mod schema_routes;
pub mod server;
pub mod studio;
pub mod utils;
pub mod versions;

use std::future::Future;
use std::sync::Arc;

/// Serves the REST API on `listener` until `shutdown` resolves (in-flight requests finish).
/// Errors: an invalid CORE_GRPC_URL.
pub async fn run(settings: config::Settings, listener: tokio::net::TcpListener, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
    let core = settings.edge.channel(&settings.edge.core_url, true)?;
    // Files move for as long as they take (an upload at the client's pace, an import within the
    // core's FILES_IMPORT_TIMEOUT_MS): their calls have no CORE_TIMEOUT_MS deadline.
    let core_files = settings.edge.channel(&settings.edge.core_url, false)?;
    let state = Arc::new(request::EdgeState::new(core, core_files, settings.edge.channel(&settings.edge.auth_url, true)?, &settings)?);
    let (readiness, edge_cache) = (state.readiness.clone(), state.edge_cache.clone());
    tracing::info!(addr = %listener.local_addr()?, core = %settings.edge.core_url, auth = %settings.edge.auth_url, "edge-rest listening (HTTP)");
    edge_http::serve::run(listener, shutdown, readiness, move |i: edge_http::serve::Incoming| {
        let state = state.clone();
        let client_ip = state.client_ip.resolve(i.peer, &i.headers);
        let session_cookie = edge_http::cookies::get(&i.headers, state.cookies.name(edge_http::cookies::Kind::Session));
        let req = request::HttpRequest { method: i.method, path: i.path, query: i.query, headers: i.headers, client_ip, session_cookie };
        // WebSocket upgrades: Directus's realtime path, and `/graphql` tunnelled to edge-graphql.
        let graphql_ws = state.graphql.is_some() && req.path.trim_end_matches('/') == "/graphql";
        let websocket = i.websocket.filter(|_| (state.websocket_settings.rest.enabled && req.path == state.websocket_settings.path) || graphql_ws);
        let body = i.body;
        async move {
            match websocket {
                Some(handshake) => routes::websocket(state, req, handshake).await,
                None => routes::handle(state, req, body).await,
            }
        }
    })
    .await?;
    if let Some(cache) = edge_cache {
        edge_http::edge_cache::feed::leave(&cache).await;
    }
    tracing::info!("edge-rest stopped");
    Ok(())
}
