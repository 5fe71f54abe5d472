//! The settings both HTTP edges read the same way (docs/configuration.md), and the gRPC
//! channels they open with them.

use service_runtime::{env_opt, env_or};
use std::time::Duration;

pub use crate::balance::InternalToken;

/// What every edge reads from its environment besides its own listen address.
#[derive(Debug, Clone)]
pub struct EdgeSettings {
    /// CORE_GRPC_URL (default `http://127.0.0.1:50051`): the core-service.
    pub core_url: String,
    /// AUTH_GRPC_URL (default `http://127.0.0.1:50052`): the auth-service.
    pub auth_url: String,
    /// MAX_PAYLOAD_SIZE (bytes, default 1048576 = Directus's 1mb): largest request body.
    pub max_payload_size: u64,
    /// CORE_TIMEOUT_MS (milliseconds, default 30000): deadline of one call to a service.
    pub core_timeout_ms: u64,
    /// Cookie names and attributes.
    pub cookies: crate::cookies::CookieSettings,
    /// Who the client is behind proxies (IP_TRUSTED_PROXIES, IP_CUSTOM_HEADER).
    pub client_ip: crate::client_ip::ClientIpRule,
    /// GRPC_DNS_REFRESH_SECS (seconds, default 5): how often service host names are resolved
    /// again to find their replicas (see [`crate::balance`]).
    pub dns_refresh_secs: u64,
    /// GRPC_HEDGE_AFTER_MS (milliseconds, default 1000; 0 = off): a read with no whole reply
    /// after this long is also sent to another replica (see [`crate::balance`]).
    pub hedge_after_ms: u64,
    /// INTERNAL_TOKEN or INTERNAL_TOKEN_FILE (default none): the credential sent to the services
    /// with every call, so they believe the client address the edge sends
    /// (`access_token::ip::EdgeTrust`; docs/security.md "Client addresses and what the ports trust").
    pub internal_token: InternalToken,
    /// MAX_QUERY_STRING_SIZE (bytes, default 16384, Node's header limit that bounds Directus's
    /// URLs): longest query string accepted; longer ones answer 400 INVALID_QUERY.
    pub max_query_string_size: usize,
    /// QUERY_MAX_NODES (default 3000): most JSON objects and arrays in a query sent as a body
    /// (`SEARCH`); more answers 400 INVALID_QUERY before the body is parsed
    /// ([`crate::body::read_json_query`]). The default fits a filter at FILTER_MAX_CONDITIONS'
    /// default of 1,000 conditions; raise both together.
    pub max_query_nodes: usize,
}

impl EdgeSettings {
    /// Reads the settings. Errors: a variable that does not parse.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            core_url: env_or("CORE_GRPC_URL", "http://127.0.0.1:50051".to_string())?,
            auth_url: env_or("AUTH_GRPC_URL", "http://127.0.0.1:50052".to_string())?,
            max_payload_size: env_or("MAX_PAYLOAD_SIZE", 1_048_576u64)?,
            core_timeout_ms: env_or("CORE_TIMEOUT_MS", 30_000u64)?,
            cookies: crate::cookies::CookieSettings::from_env()?,
            client_ip: crate::client_ip::ClientIpRule::new(
                &env_opt("IP_TRUSTED_PROXIES").unwrap_or_default(),
                &env_or("IP_CUSTOM_HEADER", "x-forwarded-for".to_string())?,
            )?,
            dns_refresh_secs: env_or("GRPC_DNS_REFRESH_SECS", 5u64)?.max(1),
            hedge_after_ms: env_or("GRPC_HEDGE_AFTER_MS", 1000u64)?,
            internal_token: InternalToken::new(service_runtime::secret_env("INTERNAL_TOKEN")?.as_deref())?,
            max_query_string_size: env_or("MAX_QUERY_STRING_SIZE", 16_384usize)?,
            max_query_nodes: env_or("QUERY_MAX_NODES", 3_000usize)?,
        })
    }

    /// A channel balancing calls over every replica behind `url` (comma-separated URLs
    /// allowed; see [`crate::balance`]), connecting lazily, every call carrying the internal
    /// credential. With `deadline`, every call on it
    /// is cut off after CORE_TIMEOUT_MS; without, for streams that live as long as the
    /// service. Must be called inside a Tokio runtime. Errors: an invalid URL.
    pub fn channel(&self, url: &str, deadline: bool) -> anyhow::Result<crate::balance::Balanced> {
        crate::balance::Balanced::with_hedging(
            url,
            deadline.then(|| Duration::from_millis(self.core_timeout_ms)),
            Duration::from_secs(self.dns_refresh_secs),
            self.internal_token.clone(),
            (self.hedge_after_ms > 0).then(|| Duration::from_millis(self.hedge_after_ms)),
        )
    }
}

/// Errors: INVALID_QUERY when the raw query string is longer than `max` bytes
/// (MAX_QUERY_STRING_SIZE), before anything of it is parsed.
pub fn check_query_string(raw: &str, max: usize) -> Result<(), cdapi_proto::ApiError> {
    if raw.len() > max {
        return Err(cdapi_proto::ApiError::invalid_query(format!("The query string is longer than {max} bytes (MAX_QUERY_STRING_SIZE)")));
    }
    Ok(())
}
