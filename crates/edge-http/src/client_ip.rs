//! The end client's address: the TCP peer, unless the peer is a trusted proxy
//! (IP_TRUSTED_PROXIES, addresses or CIDR ranges), in which case it is taken from the proxy's
//! header (IP_CUSTOM_HEADER, default `X-Forwarded-For`): the right-most address there that is
//! not itself a trusted proxy. Left-most entries are what the client claims, so they are never
//! believed. The address travels to the services as `x-client-ip` (allow-lists, rate limits).

use http::{HeaderMap, HeaderName};
use ipnet::IpNet;
use std::net::{IpAddr, SocketAddr};

/// The trusted proxies and their header.
#[derive(Debug, Clone)]
pub struct ClientIpRule {
    trusted: Vec<IpNet>,
    header: HeaderName,
}

impl ClientIpRule {
    /// A rule from a comma-separated list of proxies and a header name. Errors: an entry that
    /// is not an address or range, or a bad header name.
    pub fn new(trusted: &str, header: &str) -> anyhow::Result<Self> {
        let trusted = trusted
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<IpNet>()
                    .ok()
                    .or_else(|| s.parse::<IpAddr>().ok().map(IpNet::from))
                    .ok_or_else(|| anyhow::anyhow!("IP_TRUSTED_PROXIES: {s:?} is not an address or CIDR range"))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self { trusted, header: HeaderName::from_bytes(header.trim().to_ascii_lowercase().as_bytes())? })
    }

    fn is_trusted(&self, ip: &IpAddr) -> bool {
        self.trusted.iter().any(|n| n.contains(ip))
    }

    /// The client's address for a request from `peer` with `headers`.
    pub fn resolve(&self, peer: Option<SocketAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = peer?.ip().to_canonical();
        if !self.is_trusted(&peer) {
            return Some(peer);
        }
        let chain: Vec<IpAddr> = headers
            .get_all(&self.header)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|s| s.trim().parse::<IpAddr>().ok().map(|ip| ip.to_canonical()))
            .collect();
        Some(chain.iter().rev().find(|ip| !self.is_trusted(ip)).or(chain.first()).copied().unwrap_or(peer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_trusted_peers_are_believed() -> anyhow::Result<()> {
        let rule = ClientIpRule::new("127.0.0.1, 10.0.0.0/8", "X-Forwarded-For")?;
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "6.6.6.6, 203.0.113.9, 10.1.1.1".parse()?);
        let from = |s: &str| s.parse::<SocketAddr>().ok();
        assert_eq!(rule.resolve(from("127.0.0.1:5000"), &h), Some("203.0.113.9".parse()?));
        assert_eq!(rule.resolve(from("198.51.100.1:5000"), &h), Some("198.51.100.1".parse()?));
        assert_eq!(rule.resolve(from("127.0.0.1:5000"), &HeaderMap::new()), Some("127.0.0.1".parse()?));
        let none = ClientIpRule::new("", "x-forwarded-for")?;
        assert_eq!(none.resolve(from("127.0.0.1:5000"), &h), Some("127.0.0.1".parse()?));
        assert!(ClientIpRule::new("nope", "x-forwarded-for").is_err());
        Ok(())
    }
}
