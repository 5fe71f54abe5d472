//! IP allow-lists (`users.ip_access`, `roles.ip_access`): addresses (`203.0.113.7`) and CIDR
//! ranges (`10.0.0.0/8`, `2001:db8::/32`).

use ipnet::IpNet;
use std::net::IpAddr;
use tonic::metadata::MetadataMap;

/// gRPC metadata key carrying the end client's address: set by the edges (after their
/// trusted-proxy rules), else by [`peer_as_client_ip`] from the TCP peer.
pub const CLIENT_IP_KEY: &str = "x-client-ip";

/// The end client's address from request metadata, if present and well formed.
pub fn client_ip(md: &MetadataMap) -> Option<IpAddr> {
    md.get(CLIENT_IP_KEY)?.to_str().ok()?.trim().parse().ok()
}

/// A tonic interceptor for servers: when a call carries no [`CLIENT_IP_KEY`] (an internal
/// caller, not an edge), the TCP peer's address is recorded there, so allow-lists and rate
/// limits always have an address. Never fails.
#[allow(clippy::result_large_err)] // the signature tonic's interceptors have
pub fn peer_as_client_ip(mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
    if req.metadata().get(CLIENT_IP_KEY).is_none()
        && let Some(peer) = req.remote_addr()
        && let Ok(v) = peer.ip().to_canonical().to_string().parse()
    {
        req.metadata_mut().insert(CLIENT_IP_KEY, v);
    }
    Ok(req)
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

/// Whether both the user's and their role's allow-lists admit `ip`.
pub fn admits(user: &system_tables::users::Identity, ip: IpAddr) -> bool {
    allows(&user.ip_access, ip) && allows(&user.role_ip_access, ip)
}

/// An address (as a /32 or /128 range) or a CIDR range.
pub fn parse(entry: &str) -> Option<IpNet> {
    let entry = entry.trim();
    entry.parse::<IpNet>().ok().or_else(|| entry.parse::<IpAddr>().ok().map(IpNet::from))
}

#[cfg(test)]
mod tests {
    use super::allows;

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
