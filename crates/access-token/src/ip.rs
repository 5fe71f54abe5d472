//! IP allow-lists (`users.ip_access`, `policies.ip_access`): addresses (`203.0.113.7`) and CIDR
//! ranges (`10.0.0.0/8`, `2001:db8::/32`).

use ipnet::IpNet;
use std::net::IpAddr;
use tonic::metadata::MetadataMap;

/// gRPC metadata key carrying the end client's address: believed only from a caller that
/// presents the internal credential ([`INTERNAL_TOKEN_KEY`]), i.e. an edge; otherwise
/// [`peer_as_client_ip`] replaces it with the TCP peer's address.
pub const CLIENT_IP_KEY: &str = "x-client-ip";

/// gRPC metadata key carrying the internal credential (INTERNAL_TOKEN) with which the edges
/// authenticate to the services (docs/security.md "Client addresses and what the ports trust").
pub const INTERNAL_TOKEN_KEY: &str = "x-internal-token";

/// The end client's address from request metadata, if present and well formed.
pub fn client_ip(md: &MetadataMap) -> Option<IpAddr> {
    md.get(CLIENT_IP_KEY)?.to_str().ok()?.trim().parse().ok()
}

/// Whom a service believes about the client's address: callers presenting the internal
/// credential (the edges, which apply their trusted-proxy rules first). Compared in constant
/// time (SHA-256 digests of both sides, compared with no early exit).
#[derive(Clone)]
pub struct EdgeTrust {
    digest: Option<[u8; 32]>,
}

impl std::fmt::Debug for EdgeTrust {
    /// Never prints the credential.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeTrust").field("credential", &self.digest.map(|_| "***")).finish()
    }
}

impl EdgeTrust {
    /// Trusts callers presenting `token`; `None` trusts no caller (every client is its TCP peer).
    pub fn new(token: Option<&str>) -> Self {
        Self { digest: token.filter(|t| !t.is_empty()).map(digest) }
    }

    /// From INTERNAL_TOKEN or INTERNAL_TOKEN_FILE (docs/configuration.md). Errors: both set, or
    /// the file cannot be read.
    pub fn from_env() -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        let token = service_runtime::secret_env("INTERNAL_TOKEN")?;
        if token.as_ref().is_some_and(|t| t.len() < 16) {
            tracing::warn!("INTERNAL_TOKEN is shorter than 16 characters; use a long random value");
        }
        Ok(Self::new(token.as_deref()))
    }

    /// Whether the call carries the internal credential.
    pub fn is_edge(&self, md: &MetadataMap) -> bool {
        let (Some(expected), Some(given)) = (&self.digest, md.get(INTERNAL_TOKEN_KEY)) else { return false };
        let given = digest_bytes(given.as_bytes());
        expected.iter().zip(given.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }

    /// The interceptor: an edge's [`CLIENT_IP_KEY`] is kept; anyone else's is replaced by the
    /// TCP peer's address (or removed when there is none), and anyone else's ask for the edge
    /// cache's marks ([`cdapi_proto::edge_feed::ASK_METADATA`]) is removed. The credential
    /// itself is removed, so no handler or log sees it. Never fails.
    pub fn apply(&self, mut req: tonic::Request<()>) -> tonic::Request<()> {
        let edge = self.is_edge(req.metadata());
        req.metadata_mut().remove(INTERNAL_TOKEN_KEY);
        if !edge {
            req.metadata_mut().remove(cdapi_proto::edge_feed::ASK_METADATA);
        }
        if !edge || req.metadata().get(CLIENT_IP_KEY).is_none() {
            req.metadata_mut().remove(CLIENT_IP_KEY);
            if let Some(peer) = req.remote_addr()
                && let Ok(v) = peer.ip().to_canonical().to_string().parse()
            {
                req.metadata_mut().insert(CLIENT_IP_KEY, v);
            }
        }
        req
    }
}

fn digest(token: &str) -> [u8; 32] {
    digest_bytes(token.as_bytes())
}

fn digest_bytes(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// The process's [`EdgeTrust`], from the environment on first use. A credential that cannot
/// be read is logged and trusts no caller (fail closed).
pub fn edge_trust() -> &'static EdgeTrust {
    static TRUST: std::sync::OnceLock<EdgeTrust> = std::sync::OnceLock::new();
    TRUST.get_or_init(|| match EdgeTrust::from_env() {
        Ok(t) => {
            if t.digest.is_none() {
                tracing::warn!("INTERNAL_TOKEN is unset: x-client-ip from callers is ignored, every client is judged by its TCP peer");
            }
            t
        }
        Err(e) => {
            tracing::error!(error = %e, "the internal credential cannot be read: no caller's x-client-ip is believed");
            EdgeTrust::new(None)
        }
    })
}

/// A tonic interceptor for servers (core-service, auth-service): [`EdgeTrust::apply`] with the
/// process's [`edge_trust`], so `x-client-ip` is believed only from the edges and allow-lists
/// and per-address limits always judge a real address. Never fails.
#[allow(clippy::result_large_err)] // the signature tonic's interceptors have
pub fn peer_as_client_ip(req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
    Ok(edge_trust().apply(req))
}

/// Whether `list` lets `ip` in. An empty list allows every address; an entry that does not
/// parse matches nothing (a typo must not open the door), and is logged.
/// IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`) are compared as IPv4.
pub fn allows(list: &[String], ip: IpAddr) -> bool {
    if list.is_empty() {
        return true;
    }
    let ip = ip.to_canonical();
    list.iter().any(|entry| match parse(entry) {
        Some(net) => net.contains(&ip),
        None => {
            tracing::warn!(entry = %entry, "IP allow-list entry is not an address or CIDR range; it matches nothing");
            false
        }
    })
}

/// Whether the user's own allow-list admits `ip`, and one of their IP-limited policies does
/// (when they have any; Directus 11: a user whose IP-limited policies all refuse the address is
/// refused, INVALID_IP).
pub fn admits(user: &system_tables::users::Identity, ip: IpAddr) -> bool {
    allows(&user.ip_access, ip) && allows(&user.policy_ip_access, ip)
}

/// An address (as a /32 or /128 range) or a CIDR range.
pub fn parse(entry: &str) -> Option<IpNet> {
    let entry = entry.trim();
    entry.parse::<IpNet>().ok().or_else(|| entry.parse::<IpAddr>().ok().map(IpNet::from))
}

#[cfg(test)]
mod tests {
    use super::{CLIENT_IP_KEY, EdgeTrust, INTERNAL_TOKEN_KEY, allows};

    fn call(md: &[(&'static str, &str)]) -> tonic::Request<()> {
        let mut req = tonic::Request::new(());
        for (k, v) in md {
            if let Ok(v) = v.parse() {
                req.metadata_mut().insert(*k, v);
            }
        }
        req
    }

    fn ip_of(req: &tonic::Request<()>) -> Option<String> {
        req.metadata().get(CLIENT_IP_KEY).and_then(|v| v.to_str().ok()).map(str::to_owned)
    }

    #[test]
    fn only_callers_with_the_credential_set_the_client_address() {
        let trust = EdgeTrust::new(Some("a-long-internal-secret"));
        let edge = trust.apply(call(&[(CLIENT_IP_KEY, "10.1.2.3"), (INTERNAL_TOKEN_KEY, "a-long-internal-secret")]));
        assert_eq!(ip_of(&edge).as_deref(), Some("10.1.2.3"));
        assert!(edge.metadata().get(INTERNAL_TOKEN_KEY).is_none(), "the credential is not passed on");
        // No peer address in a unit test: a forged address is removed, not kept.
        for md in [
            vec![(CLIENT_IP_KEY, "10.1.2.3")],
            vec![(CLIENT_IP_KEY, "10.1.2.3"), (INTERNAL_TOKEN_KEY, "a-long-internal-secreT")],
            vec![(CLIENT_IP_KEY, "10.1.2.3"), (INTERNAL_TOKEN_KEY, "")],
        ] {
            assert_eq!(ip_of(&trust.apply(call(&md))), None, "{md:?}");
        }
        let nobody = EdgeTrust::new(None);
        assert_eq!(ip_of(&nobody.apply(call(&[(CLIENT_IP_KEY, "10.1.2.3"), (INTERNAL_TOKEN_KEY, "")]))), None);
        assert!(!format!("{trust:?}").contains("secret"));
    }

    #[test]
    fn only_edges_may_ask_for_the_edge_caches_marks() {
        use cdapi_proto::edge_feed::ASK_METADATA;
        let trust = EdgeTrust::new(Some("a-long-internal-secret"));
        let edge = trust.apply(call(&[(ASK_METADATA, "1"), (INTERNAL_TOKEN_KEY, "a-long-internal-secret")]));
        assert!(edge.metadata().get(ASK_METADATA).is_some());
        for md in [vec![(ASK_METADATA, "1")], vec![(ASK_METADATA, "1"), (INTERNAL_TOKEN_KEY, "a-long-internal-secreT")]] {
            assert!(trust.apply(call(&md)).metadata().get(ASK_METADATA).is_none(), "{md:?}");
        }
    }

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn addresses_and_ranges() {
        let ip = |s: &str| s.parse().unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
        assert!(allows(&[], ip("1.2.3.4")));
        assert!(allows(&list(&["1.2.3.4"]), ip("1.2.3.4")));
        assert!(!allows(&list(&["1.2.3.4"]), ip("1.2.3.5")));
        assert!(allows(&list(&["10.0.0.0/8"]), ip("10.20.30.40")));
        assert!(allows(&list(&["10.0.0.0/8"]), ip("::ffff:10.0.0.1")));
        assert!(!allows(&list(&["10.0.0.0/8"]), ip("11.0.0.1")));
        assert!(allows(&list(&["2001:db8::/32"]), ip("2001:db8::1")));
        assert!(!allows(&list(&["not an ip"]), ip("1.2.3.4")));
    }
}
