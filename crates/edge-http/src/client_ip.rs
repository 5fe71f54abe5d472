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

    /// The client's address for a request from `peer` with `headers`: walking the header's
    /// entries from the right (the one the nearest proxy appended), each trusted proxy's entry
    /// is believed and skipped; the first untrusted entry is the client. The walk stops, and the
    /// last believed address is the client, at an entry that is not an address (garbage, a
    /// port, `unknown`) or after [`MAX_HOPS`] entries. When every entry is a trusted proxy, the
    /// left-most is the client (every hop vouched for it). Only the peer's trust starts the walk.
    pub fn resolve(&self, peer: Option<SocketAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = peer?.ip().to_canonical();
        let mut client = peer;
        if !self.is_trusted(&peer) {
            return Some(peer);
        }
        let lines: Vec<&str> = headers.get_all(&self.header).iter().map(|v| v.to_str().unwrap_or("garbage")).collect();
        let entries = lines.iter().rev().flat_map(|line| line.rsplit(','));
        for entry in entries.take(MAX_HOPS) {
            let Ok(ip) = entry.trim().parse::<IpAddr>() else { break };
            client = ip.to_canonical();
            if !self.is_trusted(&client) {
                break;
            }
        }
        Some(client)
    }
}

/// Most `X-Forwarded-For` entries walked (from the right) for one request: no real chain of
/// trusted proxies is longer, and a header of thousands of entries costs no more than this.
pub const MAX_HOPS: usize = 16;

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
        // Spoofed left entries are never reached: the right-most untrusted entry is the client.
        h.insert("x-forwarded-for", "10.1.2.3, 127.0.0.1, 203.0.113.9, 10.0.0.7".parse()?);
        assert_eq!(rule.resolve(from("127.0.0.1:5000"), &h), Some("203.0.113.9".parse()?));
        // Every hop trusted: the left-most (each one vouched for the next).
        h.insert("x-forwarded-for", "10.1.2.3, 10.0.0.7".parse()?);
        assert_eq!(rule.resolve(from("127.0.0.1:5000"), &h), Some("10.1.2.3".parse()?));
        // Garbage stops the walk at the last believed address.
        for bad in ["10.1.2.3, not-an-ip", "10.1.2.3, unknown, 10.0.0.7", "10.1.2.3,,", "10.1.2.3, 203.0.113.9:443"] {
            h.insert("x-forwarded-for", bad.parse()?);
            let got = rule.resolve(from("127.0.0.1:5000"), &h);
            assert!(got != Some("10.1.2.3".parse()?), "{bad}: {got:?}");
        }
        h.insert("x-forwarded-for", "10.1.2.3, unknown, 10.0.0.7".parse()?);
        assert_eq!(rule.resolve(from("127.0.0.1:5000"), &h), Some("10.0.0.7".parse()?));
        // IPv6 and IPv4-mapped addresses.
        let v6 = ClientIpRule::new("::1, fd00::/8", "x-forwarded-for")?;
        h.insert("x-forwarded-for", "10.1.2.3, 2001:db8::9, fd00::1".parse()?);
        assert_eq!(v6.resolve(from("[::1]:5000"), &h), Some("2001:db8::9".parse()?));
        h.insert("x-forwarded-for", "::ffff:203.0.113.9".parse()?);
        assert_eq!(v6.resolve(from("[::1]:5000"), &h), Some("203.0.113.9".parse()?));
        // Several header lines are one list, in order.
        let mut lines = HeaderMap::new();
        lines.append("x-forwarded-for", "10.1.2.3".parse()?);
        lines.append("x-forwarded-for", "203.0.113.9, 10.0.0.7".parse()?);
        assert_eq!(rule.resolve(from("127.0.0.1:5000"), &lines), Some("203.0.113.9".parse()?));
        // A very long chain of trusted entries: at most MAX_HOPS are walked.
        let long = std::iter::repeat_n("10.0.0.1", 10_000).collect::<Vec<_>>().join(", ");
        h.insert("x-forwarded-for", format!("6.6.6.6, {long}").parse()?);
        assert_eq!(rule.resolve(from("127.0.0.1:5000"), &h), Some("10.0.0.1".parse()?));
        let none = ClientIpRule::new("", "x-forwarded-for")?;
        assert_eq!(none.resolve(from("127.0.0.1:5000"), &h), Some("127.0.0.1".parse()?));
        assert!(ClientIpRule::new("nope", "x-forwarded-for").is_err());
        Ok(())
    }
}
