//! edge-rest settings from environment variables (documented in README.md).

use service_runtime::env_or;

/// Everything edge-rest reads from its environment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// REST_HOST (default `0.0.0.0`): listen address.
    pub host: std::net::IpAddr,
    /// REST_PORT (default 8055): the public HTTP port; 0 = any free port.
    pub port: u16,
    /// CORE_GRPC_URL (default `http://127.0.0.1:50051`): the core-service.
    pub core_url: String,
    /// MAX_PAYLOAD_SIZE (bytes, default 1048576 = Directus's 1mb): largest request body.
    pub max_payload_size: u64,
    /// CORE_TIMEOUT_MS (milliseconds, default 30000): deadline of one call to the core.
    pub core_timeout_ms: u64,
}

impl Settings {
    /// Reads the settings. Errors: a variable that does not parse.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            host: env_or("REST_HOST", std::net::IpAddr::from([0, 0, 0, 0]))?,
            port: env_or("REST_PORT", 8055u16)?,
            core_url: env_or("CORE_GRPC_URL", "http://127.0.0.1:50051".to_string())?,
            max_payload_size: env_or("MAX_PAYLOAD_SIZE", 1_048_576u64)?,
            core_timeout_ms: env_or("CORE_TIMEOUT_MS", 30_000u64)?,
        })
    }
}
