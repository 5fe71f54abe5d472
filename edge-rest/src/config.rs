//! edge-rest settings from environment variables (documented in README.md).

use service_runtime::{env_opt, env_or};

/// Everything edge-rest reads from its environment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// REST_HOST (default `0.0.0.0`): listen address.
    pub host: std::net::IpAddr,
    /// REST_PORT (default 8055): the public HTTP port; 0 = any free port.
    pub port: u16,
    /// CORE_GRPC_URL (default `http://127.0.0.1:50051`): the core-service.
    pub core_url: String,
    /// AUTH_GRPC_URL (default `http://127.0.0.1:50052`): the auth-service.
    pub auth_url: String,
    /// MAX_PAYLOAD_SIZE (bytes, default 1048576 = Directus's 1mb): largest request body.
    pub max_payload_size: u64,
    /// CORE_TIMEOUT_MS (milliseconds, default 30000): deadline of one call to a service.
    pub core_timeout_ms: u64,
    /// Cookie names and attributes.
    pub cookies: edge_http::cookies::CookieSettings,
    /// Who the client is behind proxies.
    pub client_ip: edge_http::client_ip::ClientIpRule,
    /// RATE_LIMITER_ENABLED (default false, as Directus), RATE_LIMITER_POINTS (default 50) per
    /// RATE_LIMITER_DURATION (seconds, default 1): requests per client address.
    pub rate_limit: Option<(u32, u64)>,
    /// GRAPHQL_URL (default none): edge-graphql's base URL (`http://host:port`); when set,
    /// `/graphql` and `/graphql/system` are forwarded there, so one origin serves both APIs.
    pub graphql_url: Option<String>,
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
            core_url: env_or("CORE_GRPC_URL", "http://127.0.0.1:50051".to_string())?,
            auth_url: env_or("AUTH_GRPC_URL", "http://127.0.0.1:50052".to_string())?,
            max_payload_size: env_or("MAX_PAYLOAD_SIZE", 1_048_576u64)?,
            core_timeout_ms: env_or("CORE_TIMEOUT_MS", 30_000u64)?,
            cookies: edge_http::cookies::CookieSettings::from_env()?,
            client_ip: edge_http::client_ip::ClientIpRule::new(
                &env_opt("IP_TRUSTED_PROXIES").unwrap_or_default(),
                &env_or("IP_CUSTOM_HEADER", "x-forwarded-for".to_string())?,
            )?,
            rate_limit,
            graphql_url: env_opt("GRAPHQL_URL"),
        })
    }
}
