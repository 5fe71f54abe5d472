//! edge-rest settings from environment variables (documented in docs/configuration.md).

use service_runtime::{env_opt, env_or};

/// Everything edge-rest reads from its environment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// REST_HOST (default `0.0.0.0`): listen address.
    pub host: std::net::IpAddr,
    /// REST_PORT (default 8055): the public HTTP port; 0 = any free port.
    pub port: u16,
    /// The settings every edge shares (services, body size, cookies, client address).
    pub edge: edge_http::settings::EdgeSettings,
    /// RATE_LIMITER_ENABLED (default false, as Directus), RATE_LIMITER_POINTS (default 50) per
    /// RATE_LIMITER_DURATION (seconds, default 1): requests per client address.
    pub rate_limit: Option<(u32, u64)>,
    /// GRAPHQL_URL (default none): edge-graphql's base URL (`http://host:port`); when set,
    /// `/graphql` and `/graphql/system` are forwarded there, so one origin serves both APIs.
    pub graphql_url: Option<String>,
    /// REST_STREAM_LIMIT (default 1000; 0 = never): lists asked with a larger `limit`, or
    /// `limit=-1`, are streamed from the core as they are read ([`crate::list_stream`]).
    pub stream_limit: i64,
    /// IMPORT_MAX_SIZE (bytes, default 104857600 = 100 MiB): largest file
    /// `POST /utils/import/:collection` takes ([`crate::import`]).
    pub import_max_size: u64,
    /// QUERY_LIMIT_DEFAULT (100) and QUERY_LIMIT_MAX (10,000; -1 = none), as the core reads
    /// them (give both the same values): only announced, in `/server/info`'s `queryLimit`.
    pub query_limit: (i64, i64),
    /// `/websocket` (WEBSOCKETS_* settings; [`crate::realtime`]).
    pub websockets: WebsocketSettings,
    /// STUDIO_DIR (default none): the Directus Data Studio's `dist/` directory (from the
    /// `@directus/app` npm package, BUSL-1.1, supplied by the operator), served at `/admin`
    /// ([`crate::studio`]); unset, `/admin` answers ROUTE_NOT_FOUND.
    pub studio_dir: Option<std::path::PathBuf>,
    /// PUBLIC_URL (default none): the API's public URL; its path prefixes the Studio's base
    /// (`<path>/admin/`).
    pub public_url: Option<String>,
    /// EDGE_CACHE_ENABLED and the rest of [`edge_http::edge_cache`]'s settings: item-read
    /// answers kept in this edge's memory (default off).
    pub edge_cache: Option<edge_http::edge_cache::EdgeCacheSettings>,
}

impl Settings {
    /// Reads the settings. Errors: a variable that does not parse.
    pub fn from_env() -> anyhow::Result<Self> {
        let rate_limit = if env_or("RATE_LIMITER_ENABLED", false)? {
            Some((env_or("RATE_LIMITER_POINTS", 50u32)?.max(1), env_or("RATE_LIMITER_DURATION", 1u64)?.max(1)))
        } else {
            None
        };
        Ok(Self {
            host: env_or("REST_HOST", std::net::IpAddr::from([0, 0, 0, 0]))?,
            port: env_or("REST_PORT", 8055u16)?,
            edge: edge_http::settings::EdgeSettings::from_env()?,
            rate_limit,
            graphql_url: env_opt("GRAPHQL_URL"),
            stream_limit: env_or("REST_STREAM_LIMIT", 1000i64)?.max(0),
            import_max_size: env_or("IMPORT_MAX_SIZE", 104_857_600u64)?,
            query_limit: (env_or("QUERY_LIMIT_DEFAULT", 100i64)?, env_or("QUERY_LIMIT_MAX", 10_000i64)?),
            websockets: WebsocketSettings::from_env()?,
            studio_dir: env_opt("STUDIO_DIR").map(std::path::PathBuf::from),
            public_url: env_opt("PUBLIC_URL"),
            edge_cache: edge_http::edge_cache::EdgeCacheSettings::from_env()?,
        })
    }
}

/// WebSocket settings (Directus's names where it has them; docs/realtime.md).
#[derive(Debug, Clone)]
pub struct WebsocketSettings {
    /// `/websocket`'s own (WEBSOCKETS_REST_*) and the shared WEBSOCKETS_* settings.
    pub rest: edge_http::websocket::Settings,
    /// WEBSOCKETS_REST_PATH (default `/websocket`).
    pub path: String,
    /// edge-graphql's WebSocket as `/server/info` announces it: its WEBSOCKETS_GRAPHQL_AUTH
    /// when WEBSOCKETS_ENABLED and WEBSOCKETS_GRAPHQL_ENABLED (default true) leave it on (give
    /// both edges the same values), else `None`.
    pub graphql: Option<edge_http::websocket::AuthMode>,
}

impl WebsocketSettings {
    /// Reads the settings. Errors: a value that does not parse, an unknown auth mode.
    pub fn from_env() -> anyhow::Result<Self> {
        use edge_http::websocket::{Edge, Settings};
        let path = service_runtime::env_or("WEBSOCKETS_REST_PATH", "/websocket".to_string())?;
        let graphql = Settings::from_env(Edge::Graphql)?;
        Ok(Self { rest: Settings::from_env(Edge::Rest)?, path: format!("/{}", path.trim_matches('/')), graphql: graphql.enabled.then_some(graphql.auth) })
    }
}
