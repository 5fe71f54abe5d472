//! Where a request came from, as the edge reports it in gRPC metadata: `x-client-ip` (after the
//! edge's trusted-proxy rules, see [`crate::ip`]), `x-user-agent` and `x-origin` (the HTTP
//! `User-Agent` and `Origin` headers). Recorded with each activity row (Directus's
//! `directus_activity` `ip`, `user_agent`, `origin`) by core-service's writes and
//! auth-service's logins.

use tonic::metadata::MetadataMap;

/// The longest user agent or origin recorded (characters); longer ones are cut.
pub const MAX_CLIENT_TEXT: usize = 1024;

/// Where a request came from.
#[derive(Debug, Clone, Default)]
pub struct Client {
    /// The client's address (after the edge's trusted-proxy rules).
    pub ip: Option<String>,
    /// The `User-Agent` header, at most [`MAX_CLIENT_TEXT`] characters.
    pub user_agent: Option<String>,
    /// The `Origin` header, at most [`MAX_CLIENT_TEXT`] characters.
    pub origin: Option<String>,
}

impl Client {
    /// Reads the client from a call's metadata; values that are not text are left out.
    pub fn from_metadata(md: &MetadataMap) -> Self {
        let text = |key: &str| md.get(key).and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty()).map(|v| v.chars().take(MAX_CLIENT_TEXT).collect());
        Self { ip: crate::ip::client_ip(md).map(|ip| ip.to_string()), user_agent: text("x-user-agent"), origin: text("x-origin") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_text_values_and_cuts_long_ones() {
        let mut md = MetadataMap::new();
        md.insert("x-client-ip", "203.0.113.7".parse().unwrap());
        md.insert("x-user-agent", "a".repeat(2000).parse().unwrap());
        let c = Client::from_metadata(&md);
        assert_eq!(c.ip.as_deref(), Some("203.0.113.7"));
        assert_eq!(c.user_agent.map(|u| u.len()), Some(MAX_CLIENT_TEXT));
        assert_eq!(c.origin, None);
    }
}
