//! edge-graphql settings from environment variables (documented in docs/configuration.md).

use service_runtime::env_or;

/// Everything edge-graphql reads from its environment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// GRAPHQL_HOST (default `0.0.0.0`): listen address.
    pub host: std::net::IpAddr,
    /// GRAPHQL_PORT (default 8056): the HTTP port serving `/graphql` and `/graphql/system`;
    /// 0 = any free port.
    pub port: u16,
    /// The settings every edge shares (services, body size, cookies, client address).
    pub edge: edge_http::settings::EdgeSettings,
    /// GRAPHQL_INTROSPECTION (default true, as Directus): answer `__schema` / `__type`.
    pub introspection: bool,
    /// GRAPHQL_QUERY_DEPTH_LIMIT (default 20): deepest selection nesting accepted (the standard
    /// introspection query needs 13).
    pub depth_limit: usize,
    /// GRAPHQL_FAST_PATH (default true): answer item reads in one pass over the core's reply
    /// instead of a resolver per field (same results; `false` to compare).
    pub fast_path: bool,
    /// GRAPHQL_STREAM_LIMIT (default 1000; 0 = never): a root list asked with a larger `limit`,
    /// or `-1`, is written as its items arrive (HTTP, fast path; see [`crate::list_stream`]).
    pub stream_limit: i64,
    /// GRAPHQL_STREAM_LISTS_MAX (default 4, at least 1): most root lists of one request that are
    /// streamed; a further one is INVALID_QUERY at its path (see [`crate::list_stream`]).
    pub stream_lists_max: usize,
    /// GRAPHQL_QUERY_COMPLEXITY_LIMIT (default 20000): most fields one operation may select,
    /// counted over the query text (each field 1).
    pub complexity_limit: usize,
    /// GRAPHQL_MAX_DOCUMENT_SIZE, GRAPHQL_MAX_ROOT_FIELDS, GRAPHQL_MAX_ALIASES,
    /// GRAPHQL_MAX_FIELDS, GRAPHQL_MAX_AUTH_MUTATIONS: see [`crate::budget::DocumentLimits`].
    pub document: crate::budget::DocumentLimits,
    /// GraphQL over WebSocket (WEBSOCKETS_GRAPHQL_* and the shared WEBSOCKETS_*).
    pub websocket: edge_http::websocket::Settings,
}

impl Settings {
    /// Reads the settings. Errors: a variable that does not parse.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            host: env_or("GRAPHQL_HOST", std::net::IpAddr::from([0, 0, 0, 0]))?,
            port: env_or("GRAPHQL_PORT", 8056u16)?,
            edge: edge_http::settings::EdgeSettings::from_env()?,
            introspection: env_or("GRAPHQL_INTROSPECTION", true)?,
            depth_limit: env_or("GRAPHQL_QUERY_DEPTH_LIMIT", 20usize)?.max(1),
            fast_path: env_or("GRAPHQL_FAST_PATH", true)?,
            stream_limit: env_or("GRAPHQL_STREAM_LIMIT", 1000i64)?.max(0),
            stream_lists_max: env_or("GRAPHQL_STREAM_LISTS_MAX", 4usize)?.max(1),
            complexity_limit: env_or("GRAPHQL_QUERY_COMPLEXITY_LIMIT", 20_000usize)?.max(1),
            document: {
                let d = crate::budget::DocumentLimits::default();
                crate::budget::DocumentLimits {
                    max_bytes: env_or("GRAPHQL_MAX_DOCUMENT_SIZE", d.max_bytes)?.max(1),
                    max_root_fields: env_or("GRAPHQL_MAX_ROOT_FIELDS", d.max_root_fields)?.max(1),
                    max_aliases: env_or("GRAPHQL_MAX_ALIASES", d.max_aliases)?,
                    max_fields: env_or("GRAPHQL_MAX_FIELDS", d.max_fields)?.max(1),
                    max_auth_mutations: env_or("GRAPHQL_MAX_AUTH_MUTATIONS", d.max_auth_mutations)?,
                }
            },
            websocket: edge_http::websocket::Settings::from_env(edge_http::websocket::Edge::Graphql)?,
        })
    }
}
