//! edge-graphql settings from environment variables (documented in README.md).

use service_runtime::{env_opt, env_or};

/// Everything edge-graphql reads from its environment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// GRAPHQL_HOST (default `0.0.0.0`): listen address.
    pub host: std::net::IpAddr,
    /// GRAPHQL_PORT (default 8056): the HTTP port serving `/graphql` and `/graphql/system`;
    /// 0 = any free port.
    pub port: u16,
    /// CORE_GRPC_URL (default `http://127.0.0.1:50051`): the core-service.
    pub core_url: String,
    /// AUTH_GRPC_URL (default `http://127.0.0.1:50052`): the auth-service (`auth_*` mutations).
    pub auth_url: String,
    /// MAX_PAYLOAD_SIZE (bytes, default 1048576): largest request body.
    pub max_payload_size: u64,
    /// CORE_TIMEOUT_MS (milliseconds, default 30000): deadline of one call to a service.
    pub core_timeout_ms: u64,
    /// GRAPHQL_INTROSPECTION (default true, as Directus): answer `__schema` / `__type`.
    pub introspection: bool,
    /// GRAPHQL_QUERY_DEPTH_LIMIT (default 20): deepest selection nesting accepted (the standard
    /// introspection query needs 13).
    pub depth_limit: usize,
    /// GRAPHQL_QUERY_COMPLEXITY_LIMIT (default 20000): most fields one operation may select,
    /// counted over the query text (each field 1).
    pub complexity_limit: usize,
    /// Cookie names and attributes (shared with edge-rest: the same variables).
    pub cookies: edge_http::cookies::CookieSettings,
    /// Who the client is behind proxies (IP_TRUSTED_PROXIES, IP_CUSTOM_HEADER).
    pub client_ip: edge_http::client_ip::ClientIpRule,
}

impl Settings {
    /// Reads the settings. Errors: a variable that does not parse.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            host: env_or("GRAPHQL_HOST", std::net::IpAddr::from([0, 0, 0, 0]))?,
            port: env_or("GRAPHQL_PORT", 8056u16)?,
            core_url: env_or("CORE_GRPC_URL", "http://127.0.0.1:50051".to_string())?,
            auth_url: env_or("AUTH_GRPC_URL", "http://127.0.0.1:50052".to_string())?,
            max_payload_size: env_or("MAX_PAYLOAD_SIZE", 1_048_576u64)?,
            core_timeout_ms: env_or("CORE_TIMEOUT_MS", 30_000u64)?,
            introspection: env_or("GRAPHQL_INTROSPECTION", true)?,
            depth_limit: env_or("GRAPHQL_QUERY_DEPTH_LIMIT", 20usize)?.max(1),
            complexity_limit: env_or("GRAPHQL_QUERY_COMPLEXITY_LIMIT", 20_000usize)?.max(1),
            cookies: edge_http::cookies::CookieSettings::from_env()?,
            client_ip: edge_http::client_ip::ClientIpRule::new(
                &env_opt("IP_TRUSTED_PROXIES").unwrap_or_default(),
                &env_or("IP_CUSTOM_HEADER", "x-forwarded-for".to_string())?,
            )?,
        })
    }
}
