//! The REST edge's request toolkit, shared by every route module: the state handlers get
//! ([`EdgeState`]), the request as the catch-all filter extracts it ([`HttpRequest`]) with the
//! one way to build a gRPC call from it, and the query-string and JSON-body rules. Route
//! modules (`routes`, `auth`, `versions`, `server`, `graphql_proxy`) import this; it imports
//! none of them.

use crate::query_string;
use cdapi_proto::ApiError;
use cdapi_proto::v1::Query;
use cdapi_proto::v1::auth_service_client::AuthServiceClient;
use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::schema_service_client::SchemaServiceClient;
use cdapi_proto::v1::versions_service_client::VersionsServiceClient;
use edge_http::balance::Balanced as Channel;
use http::{HeaderMap, Method};
use query_language::query_json::query_from_json;

/// What every request handler needs.
pub struct EdgeState {
    /// Items client on a shared HTTP/2 channel to the core.
    pub items: ItemsServiceClient<Channel>,
    /// Versions client (`/versions`).
    pub versions: VersionsServiceClient<Channel>,
    /// Auth client (`/auth/*`, `/users/me/tfa/*`).
    pub auth: AuthServiceClient<Channel>,
    /// The caller's view of the schema (`/server/specs/oas`).
    pub schema: SchemaServiceClient<Channel>,
    /// Files client (`POST /files`, `POST /files/import`, `/assets`), on a channel without the
    /// CORE_TIMEOUT_MS deadline.
    pub files: cdapi_proto::v1::files_service_client::FilesServiceClient<Channel>,
    /// Requests per window of the rate limiter, as configured (`/server/info`).
    pub rate_limit: Option<(u32, u64)>,
    /// Health client for `/server/health`.
    pub health: tonic_health::pb::health_client::HealthClient<Channel>,
    /// Largest accepted body (bytes).
    pub max_payload_size: u64,
    /// Longest accepted query string (bytes, MAX_QUERY_STRING_SIZE).
    pub max_query_string_size: usize,
    /// QUERY_MAX_NODES: most objects and arrays of a `SEARCH` body.
    pub max_query_nodes: usize,
    /// Lists asked with a `limit` over this (or `-1`) are streamed (REST_STREAM_LIMIT; see
    /// [`crate::list_stream`]).
    pub stream_limit: i64,
    /// Largest import file (IMPORT_MAX_SIZE).
    pub import_max_size: u64,
    /// Items client for long calls (imports, exports to files), on the channel without the
    /// CORE_TIMEOUT_MS deadline (a large import or export takes longer).
    pub long_items: ItemsServiceClient<Channel>,
    /// `/server/info`'s `queryLimit`: (default, max) (see `config::Settings::query_limit`).
    pub query_limit: (i64, i64),
    /// Auth cookie names and attributes.
    pub cookies: edge_http::cookies::CookieSettings,
    /// Who the client is behind proxies.
    pub client_ip: edge_http::client_ip::ClientIpRule,
    /// Requests per client address, when RATE_LIMITER_ENABLED.
    pub limiter: Option<crate::rate_limit::PerClient>,
    /// Forwarding of `/graphql*`, when GRAPHQL_URL is set.
    pub graphql: Option<crate::graphql_proxy::GraphqlProxy>,
    request_ids: edge_http::caller::RequestIds,
    /// Off once shutdown began (`/server/health` answers 503).
    pub readiness: service_runtime::shutdown::Readiness,
    /// Items client for `Subscribe` (`/websocket`), on a channel without the CORE_TIMEOUT_MS
    /// deadline (a subscription lasts as long as its connection).
    pub subscriptions: ItemsServiceClient<Channel>,
    /// `/websocket` settings.
    pub websocket_settings: crate::config::WebsocketSettings,
    /// Open WebSocket connections.
    pub websockets: std::sync::Arc<edge_http::websocket::Connections>,
    /// The Data Studio at `/admin`, when STUDIO_DIR is set.
    pub studio: Option<crate::studio::Studio>,
    /// Item-read answers kept in memory, when EDGE_CACHE_ENABLED ([`crate::cached_read`]).
    pub edge_cache: Option<std::sync::Arc<edge_http::edge_cache::EdgeCache>>,
}

impl EdgeState {
    /// State over (lazily connecting) channels to the core (`core_files` for FilesService) and
    /// to auth-service; with the edge cache on, its feed starts following (within a Tokio
    /// runtime). Errors: a settings value that cannot be used.
    pub fn new(core: Channel, core_files: Channel, auth: Channel, settings: &crate::config::Settings) -> anyhow::Result<Self> {
        let edge_cache = match &settings.edge_cache {
            Some(s) => {
                let cache = std::sync::Arc::new(edge_http::edge_cache::EdgeCache::new(s.clone())?);
                edge_http::edge_cache::feed::start(cache.clone())?;
                Some(cache)
            }
            None => None,
        };
        Ok(Self {
            edge_cache,
            items: ItemsServiceClient::new(core.clone()).max_decoding_message_size(usize::MAX),
            versions: VersionsServiceClient::new(core.clone()).max_decoding_message_size(usize::MAX),
            schema: SchemaServiceClient::new(core.clone()).max_decoding_message_size(usize::MAX),
            files: cdapi_proto::v1::files_service_client::FilesServiceClient::new(core_files.clone()).max_decoding_message_size(usize::MAX),
            long_items: ItemsServiceClient::new(core_files.clone()).max_decoding_message_size(usize::MAX),
            subscriptions: ItemsServiceClient::new(core_files).max_decoding_message_size(usize::MAX),
            websocket_settings: settings.websockets.clone(),
            websockets: edge_http::websocket::Connections::new(settings.websockets.rest.max_connections, settings.websockets.rest.max_connections_per_user),
            rate_limit: settings.rate_limit,
            auth: AuthServiceClient::new(auth),
            health: tonic_health::pb::health_client::HealthClient::new(core),
            max_payload_size: settings.edge.max_payload_size,
            max_query_string_size: settings.edge.max_query_string_size,
            max_query_nodes: settings.edge.max_query_nodes,
            stream_limit: settings.stream_limit,
            import_max_size: settings.import_max_size,
            query_limit: settings.query_limit,
            cookies: settings.edge.cookies.clone(),
            client_ip: settings.edge.client_ip.clone(),
            graphql: settings.graphql_url.as_deref().map(crate::graphql_proxy::GraphqlProxy::new),
            limiter: settings.rate_limit.map(|(points, secs)| crate::rate_limit::PerClient::new(points, secs)).transpose()?,
            request_ids: edge_http::caller::RequestIds::default(),
            readiness: service_runtime::shutdown::Readiness::default(),
            studio: settings.studio_dir.as_deref().map(|dir| crate::studio::Studio::load(dir, settings.public_url.as_deref())).transpose()?,
        })
    }

    /// The request id (see [`edge_http::caller::RequestIds`]).
    pub(crate) fn request_id(&self, headers: &HeaderMap) -> String {
        self.request_ids.next(headers)
    }
}

/// One incoming HTTP request, as the catch-all filter extracts it.
pub struct HttpRequest {
    /// Method (SEARCH included).
    pub method: Method,
    /// Path, still percent-encoded.
    pub path: String,
    /// Raw query string (without `?`).
    pub query: String,
    /// Headers.
    pub headers: HeaderMap,
    /// The end client's address (see [`edge_http::client_ip`]).
    pub client_ip: Option<std::net::IpAddr>,
    /// The session cookie's token, if the request carries one.
    pub session_cookie: Option<String>,
}

pub use edge_http::body::{Body, read_body};

impl HttpRequest {
    /// The caller as the services see it: token (header, `?access_token=` given as
    /// `query_token`, or session cookie), address, request id, trace (see
    /// [`edge_http::caller`]). Errors: INVALID_PAYLOAD for a header and `?access_token=` at once.
    pub(crate) fn caller(&self, request_id: &str, query_token: Option<String>) -> Result<edge_http::caller::Caller, ApiError> {
        edge_http::caller::Caller::new(&self.headers, query_token, self.session_cookie.clone(), self.client_ip, request_id.to_owned())
    }

    /// The one way the REST edge builds a gRPC call: `msg` with [`Self::caller`]'s metadata.
    /// Errors: as [`Self::caller`]; INVALID_CREDENTIALS for a token that is no header value.
    pub(crate) fn grpc<T>(&self, request_id: &str, query_token: Option<String>, msg: T) -> Result<tonic::Request<T>, ApiError> {
        self.caller(request_id, query_token)?.request(msg)
    }
}

/// A path segment, percent-decoded (invalid UTF-8 replaced).
pub(crate) fn decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment).decode_utf8_lossy().into_owned()
}

/// The query string as a typed query, plus `?access_token=`.
pub(crate) fn url_query(req: &HttpRequest) -> Result<(Query, Option<String>), ApiError> {
    let parsed = query_string::parse(&req.query)?;
    Ok((typed_query(&parsed.query)?, parsed.access_token))
}

/// A Directus query object as the typed query, its names within the identifier budget.
/// Errors: INVALID_QUERY.
pub(crate) fn typed_query(obj: &serde_json::Map<String, serde_json::Value>) -> Result<Query, ApiError> {
    let query = query_from_json(obj)?;
    crate::identifiers::check(&query)?;
    Ok(query)
}

/// A JSON request body (SEARCH, POST, PATCH, DELETE). Errors: UNSUPPORTED_MEDIA_TYPE unless
/// `application/json`, CONTENT_TOO_LARGE past MAX_PAYLOAD_SIZE, INVALID_PAYLOAD when malformed
/// (`edge_http::body::read_json`).
pub(crate) async fn json_body(req: &HttpRequest, body: Body, max: u64) -> Result<serde_json::Value, ApiError> {
    edge_http::body::read_json(&req.headers, body, max).await
}

/// Errors: UNSUPPORTED_MEDIA_TYPE unless the request's Content-Type is `application/json`.
pub(crate) fn require_json(req: &HttpRequest) -> Result<(), ApiError> {
    edge_http::body::require_json(&req.headers)
}
