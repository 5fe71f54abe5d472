//! `ImportFile` (Directus `POST /files/import`): a file fetched from a URL by the core, then
//! stored as an upload is ([`super::upload::store`]).
//!
//! The fetch is the one place where a client makes this service open a connection of its
//! choosing, so it is fenced (server-side request forgery):
//! - only `http` and `https`, no proxy, at most [`MAX_REDIRECTS`] redirects, each checked again;
//! - every address a host name resolves to, and every address written in a URL, must be public
//!   ([`is_public`]) or inside FILES_IMPORT_ALLOW_NETWORKS; the connection goes to the
//!   addresses checked, never to a second lookup's (no DNS rebinding between check and use);
//! - FILES_IMPORT_TIMEOUT_MS bounds the whole fetch (connecting, every redirect, the body),
//!   [`READ_IDLE`] a pause between two reads of the body, FILES_MAX_UPLOAD_SIZE its size.
//!
//! Errors are Directus's: `503 SERVICE_UNAVAILABLE` with `service: "external-file"` and a
//! `reason` saying why (refused address, status, timeout...).

use super::upload::{Chunks, store};
use crate::auth::Caller;
use crate::permissions::Action;
use bytes::Bytes;
use cdapi_proto::v1::{ImportFileRequest, UploadStart};
use cdapi_proto::{ApiError, ErrorCode};
use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// Most redirects one import follows.
pub const MAX_REDIRECTS: usize = 5;
/// Longest pause between two reads of the body.
pub const READ_IDLE: Duration = Duration::from_secs(30);
/// Longest connection set-up (TCP and TLS) to one address.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Import settings: FILES_IMPORT_ALLOW_NETWORKS (comma-separated addresses or CIDR ranges that
/// are allowed although not public, e.g. `10.1.0.0/16`; default none) and
/// FILES_IMPORT_TIMEOUT_MS (milliseconds, default 300000).
#[derive(Debug, Clone)]
pub struct ImportSettings {
    /// Non-public networks imports may reach all the same.
    pub allow_networks: Vec<IpNet>,
    /// Longest whole fetch.
    pub timeout: Duration,
}

impl ImportSettings {
    /// Reads the settings. Errors: an entry that is neither an address nor a CIDR range.
    pub fn from_env() -> anyhow::Result<Self> {
        let list = service_runtime::env_or("FILES_IMPORT_ALLOW_NETWORKS", String::new())?;
        let mut allow_networks = Vec::new();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            allow_networks
                .push(access_token::ip::parse(entry).ok_or_else(|| anyhow::anyhow!("FILES_IMPORT_ALLOW_NETWORKS: {entry:?} is not an address or CIDR range"))?);
        }
        Ok(Self { allow_networks, timeout: Duration::from_millis(service_runtime::env_or("FILES_IMPORT_TIMEOUT_MS", 300_000u64)?) })
    }
}

/// The HTTP client of imports (one per process: its connection pool is shared).
pub struct Importer {
    client: reqwest::Client,
    allow: Arc<Vec<IpNet>>,
}

/// Why a fetch was refused before any connection: an address that is not public.
#[derive(Debug)]
struct Denied;

impl std::fmt::Display for Denied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("it resolves to a denied address")
    }
}

impl std::error::Error for Denied {}

impl Importer {
    /// Builds the client. Errors: the TLS set-up failed.
    pub fn new(settings: &ImportSettings) -> anyhow::Result<Self> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let allow = Arc::new(settings.allow_networks.clone());
        let redirect_allow = allow.clone();
        let client = reqwest::Client::builder()
            .no_proxy()
            .dns_resolver(Arc::new(PermittedOnly { allow: allow.clone() }))
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() > MAX_REDIRECTS {
                    attempt.error("too many redirects")
                } else if !matches!(attempt.url().scheme(), "http" | "https") {
                    attempt.error("a redirect to another scheme than http(s)")
                } else if literal_ip(attempt.url()).is_some_and(|ip| !permitted(ip, &redirect_allow)) {
                    attempt.error(Denied)
                } else {
                    attempt.follow()
                }
            }))
            .timeout(settings.timeout)
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_IDLE)
            .user_agent(concat!("cdapi/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { client, allow })
    }
}

/// Whether the fetch may go to `ip`: public, or inside an allowed network.
fn permitted(ip: IpAddr, allow: &[IpNet]) -> bool {
    is_public(ip) || allow.iter().any(|n| n.contains(&ip))
}

/// The address a URL names literally (`http://10.0.0.1/`, `http://[::1]/`; the URL parser has
/// already turned `0x7f.1` and the like into dotted form); `None` for a host name.
fn literal_ip(url: &reqwest::Url) -> Option<IpAddr> {
    let host = url.host_str()?;
    host.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

/// A resolver that keeps only the permitted addresses of a name (an error when none is).
struct PermittedOnly {
    allow: Arc<Vec<IpNet>>,
}

impl reqwest::dns::Resolve for PermittedOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow = self.allow.clone();
        Box::pin(async move {
            let found = tokio::net::lookup_host((name.as_str(), 0)).await?;
            let kept: Vec<SocketAddr> = found.filter(|a| permitted(a.ip(), &allow)).collect();
            if kept.is_empty() {
                return Err(Box::new(Denied) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Whether an address is on the public internet: not unspecified, loopback, private (RFC
/// 1918, unique local), shared (100.64/10), link-local (cloud metadata at 169.254.169.254
/// included), documentation, benchmarking, multicast, reserved or broadcast; IPv6 forms that
/// carry an IPv4 address (mapped, NAT64, 6to4) are judged by that address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => public_v6(v6),
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || (a == 100 && (b & 0xc0) == 64)
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 88 && c == 99)
        || ip.is_documentation()
        || (a == 198 && (b & 0xfe) == 18)
        || a >= 224)
}

fn public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return public_v4(v4);
    }
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return public_v4(embedded(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return public_v4(embedded(s[1], s[2]));
    }
    !(s[0..6] == [0, 0, 0, 0, 0, 0] // ::, ::1, IPv4-compatible
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (s[0] & 0xff00) == 0xff00 // multicast
        || (s[0] == 0x2001 && s[1] < 0x0200) // IETF protocol assignments (Teredo, ORCHID...)
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])) // discard-only
}

/// Imports the file at `req.url` for `caller`; returns the item as they read it back. Errors:
/// FORBIDDEN (no create grant on `directus_files`, checked before the fetch), INVALID_PAYLOAD
/// (not an http(s) URL), SERVICE_UNAVAILABLE (fetch refused or failed), CONTENT_TOO_LARGE, the
/// item write's errors.
pub async fn import(state: &crate::AppState, caller: &Caller, req: &ImportFileRequest) -> Result<Bytes, ApiError> {
    caller.access.grant(&caller.schema, "directus_files", Action::Create)?;
    let url = reqwest::Url::parse(req.url.trim()).map_err(|e| ApiError::invalid_payload(format!("\"url\" is not a valid URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ApiError::invalid_payload("\"url\" must be an http or https URL"));
    }
    let importer = &state.files.importer;
    let unavailable = |why: &str| {
        let reason = format!("Couldn't fetch file from URL \"{url}\": {why}");
        tracing::warn!(reason = %reason, "file import failed");
        let mut e = ApiError::new(ErrorCode::ServiceUnavailable, format!("Service \"external-file\" is unavailable. {reason}."));
        e.extensions.insert("service".into(), "external-file".into());
        e.extensions.insert("reason".into(), reason.into());
        e
    };
    if literal_ip(&url).is_some_and(|ip| !permitted(ip, &importer.allow)) {
        return Err(unavailable(&Denied.to_string()));
    }
    let res = importer.client.get(url.clone()).send().await.map_err(|e| unavailable(&cause(&e)))?;
    if !res.status().is_success() {
        return Err(unavailable(&format!("the server answered {}", res.status().as_u16())));
    }
    let max = state.files.max_upload_size;
    if res.content_length().is_some_and(|n| n > max) {
        return Err(ApiError::new(ErrorCode::ContentTooLarge, format!("The file is larger than {max} bytes (FILES_MAX_UPLOAD_SIZE).")));
    }
    let filename = filename_of(res.url());
    let content_type: String =
        res.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(|v| v.trim().chars().take(255).collect()).unwrap_or_default();
    let start = UploadStart { item: req.item.clone(), filename, content_type, query: req.query.clone(), key: String::new() };
    let chunks: Chunks<'_> = Box::pin(futures_util::StreamExt::map(res.bytes_stream(), move |chunk| chunk.map_err(|e| unavailable(&cause(&e)))));
    store(state, caller, &start, chunks).await
}

/// What went wrong with a fetch, in words for the client.
fn cause(e: &reqwest::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.is::<Denied>() {
            return Denied.to_string();
        }
        source = s.source();
    }
    if e.is_timeout() {
        "it took longer than FILES_IMPORT_TIMEOUT_MS".to_owned()
    } else if e.is_redirect() {
        format!("{e}")
    } else if e.is_connect() {
        "the server could not be reached".to_owned()
    } else {
        "the transfer failed".to_owned()
    }
}

/// The file's name: the final URL's last path segment, percent-decoded (Directus's); `file`
/// when there is none.
fn filename_of(url: &reqwest::Url) -> String {
    let last = url.path_segments().and_then(|mut s| s.next_back()).unwrap_or_default();
    let decoded: String = percent_encoding::percent_decode_str(last).decode_utf8_lossy().chars().filter(|c| !c.is_control() && *c != '/').collect();
    if decoded.is_empty() { "file".to_owned() } else { decoded }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        for private in [
            "0.0.0.0",
            "127.0.0.1",
            "127.9.9.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "192.0.0.8",
            "192.0.2.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "64:ff9b::a00:1",
            "2002:a00:1::",
            "2002:7f00:1::",
            "100::1",
        ] {
            assert!(!is_public(private.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))), "{private}");
        }
        for public in ["1.1.1.1", "8.8.8.8", "172.32.0.1", "100.128.0.1", "::ffff:8.8.8.8", "2606:4700::1111", "64:ff9b::808:808", "2002:808:808::"] {
            assert!(is_public(public.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))), "{public}");
        }
    }

    #[test]
    fn allowed_networks_open_only_themselves() {
        let allow = vec!["127.0.0.1/32".parse().unwrap_or_else(|_| IpNet::from(IpAddr::V4(Ipv4Addr::UNSPECIFIED)))];
        assert!(permitted("127.0.0.1".parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), &allow));
        assert!(!permitted("127.0.0.2".parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), &allow));
    }

    #[test]
    fn literal_addresses_are_read_from_urls_in_every_spelling() {
        let ip = |u: &str| reqwest::Url::parse(u).ok().as_ref().and_then(literal_ip);
        assert_eq!(ip("http://0x7f.1/"), Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1))));
        assert_eq!(ip("http://2130706433/"), Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1))));
        assert_eq!(ip("http://[::1]:80/"), Some(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        assert_eq!(ip("http://example.com/"), None);
    }

    #[test]
    fn file_names_come_from_the_last_segment() {
        let name = |u: &str| reqwest::Url::parse(u).map(|u| filename_of(&u)).unwrap_or_default();
        assert_eq!(name("https://example.com/a/my%20photo.jpg?x=1"), "my photo.jpg");
        assert_eq!(name("https://example.com/"), "file");
        assert_eq!(name("https://example.com/a/%2e%2e%2fetc"), "..etc");
    }
}
