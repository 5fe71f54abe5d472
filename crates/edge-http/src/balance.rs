//! Client-side balancing of gRPC calls over every replica of a service, with retries, so that
//! load spreads over replicas and a replica going away loses no request (docs/operations.md).
//!
//! A service URL (`CORE_GRPC_URL`, `AUTH_GRPC_URL`) may list several comma-separated URLs; each
//! URL's host is resolved to all its addresses (a Kubernetes headless Service answers with one
//! address per ready pod) and resolved again every GRPC_DNS_REFRESH_SECS. Each address gets
//! its own HTTP/2 connection ([`tonic::transport::Channel`]); calls go round-robin over them.
//!
//! Retries, in the spirit of gRPC's retry policy (retryable status UNAVAILABLE):
//! - a call whose connection could not be made (refused: nothing was sent) is sent to the next
//!   replica, whatever the RPC;
//! - a read-only RPC ([`is_idempotent`]) or a keyed item write ([`is_keyed_write`]) is also
//!   sent again after a broken connection or an
//!   UNAVAILABLE answer from the transport (one without the service's `error-code`: a replica
//!   shutting down); a service's own SERVICE_UNAVAILABLE (a statement cancelled by
//!   DB_STATEMENT_TIMEOUT_MS, a pool timeout) is final, as another replica would run the same
//!   expensive work again;
//! - a replica that failed is skipped for [`DOWN_FOR`] unless every replica is down.
//!
//! Hedging (a replica that hangs must not fail the calls already sent to it; docs/operations.md
//! "What failures look like"): a read
//! ([`is_idempotent`], buffered) that has no whole reply after GRPC_HEDGE_AFTER_MS is also sent
//! to the next replica; the first good reply wins, the other call is cancelled, and a replica
//! that lost to its hedge is skipped for [`DOWN_FOR`] (so a frozen replica stops getting new
//! calls at once and is probed again after). Hedging instead of waiting for a per-attempt
//! deadline: a hung replica costs a read GRPC_HEDGE_AFTER_MS, not a deadline, and a merely slow
//! reply still counts if it comes first. Cost: at most one extra send per slow call.
//!
//! Writes: an item write ([`is_keyed_write`]) is stamped with a random write key
//! (`x-write-key`), which core-service records in the write's own transaction, so a second
//! attempt is applied at most once and answers what the first one committed. Such writes are
//! therefore hedged and retried as reads are. Other writes (users, files, schema, auth) are
//! never hedged and are sent again only when the server surely did not process them.
//!
//! Budget: attempts are bounded by the number of replicas plus one, at most [`MAX_ATTEMPTS`]
//! (so one client call costs at most 4 sends, 3 of them only after a transport failure).
//! Unary requests and read replies are buffered for this; streams are not: replies of
//! [`streaming`] RPCs pass through, and requests of [`request_streaming`] RPCs (uploads) are
//! sent once, as they arrive.

use arc_swap::ArcSwap;
use bytes::Bytes;
use cdapi_proto::WRITE_KEY_METADATA;
use http_body_util::BodyExt;
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tonic::transport::{Channel, Endpoint};

/// How long a replica that failed is skipped.
pub const DOWN_FOR: Duration = Duration::from_secs(2);
/// Most attempts of one call.
pub const MAX_ATTEMPTS: usize = 4;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Whether an RPC only reads (safe to send twice): [`cdapi_proto::read_only_rpc`].
pub fn is_idempotent(path: &str) -> bool {
    cdapi_proto::read_only_rpc(path)
}

/// Whether an RPC is an item write that honours a write key (core-service's
/// `write::keys`): sent with one, it is applied once however many replicas it reaches, so it
/// is hedged and retried as reads are.
pub fn is_keyed_write(path: &str) -> bool {
    let Some(method) = path.strip_prefix("/cdapi.v1.ItemsService/") else { return false };
    ["CreateItem", "CreateItems", "UpdateItem", "UpdateItems", "UpdateBatch", "UpdateSingleton", "DeleteItem", "DeleteItems"].contains(&method)
}

/// A fresh write key: 128 random bits as 32 hex digits. Errors: the system has no randomness.
fn new_write_key() -> Result<http::HeaderValue, BoxError> {
    let key = crate::random::hex128().map_err(|e| -> BoxError { format!("no randomness for a write key: {e}").into() })?;
    Ok(http::HeaderValue::from_str(&key)?)
}

/// HTTP/2 flow-control window of one call on a core or auth channel (512 KiB). Data a call has
/// received but the edge has not read (a streamed list whose client reads slowly) holds the
/// channel's shared connection window too: hyper's defaults (2 MiB a call, 5 MiB the
/// connection) let three stalled lists stop every other call on the channel. With these, it
/// takes 64, while a core replica runs at most STREAMS_MAX (default 8) streams.
pub const STREAM_WINDOW: u32 = 512 * 1024;

/// HTTP/2 flow-control window of a whole core or auth channel (32 MiB); see [`STREAM_WINDOW`].
pub const CONNECTION_WINDOW: u32 = 32 * 1024 * 1024;

/// How to open a connection to one address.
#[derive(Debug, Clone)]
struct Template {
    deadline: Option<Duration>,
}

impl Template {
    /// A replica at `uri` (e.g. `http://10.0.0.7:50051`), its connection opened lazily.
    fn replica(&self, uri: &str) -> Result<Arc<Replica>, tonic::transport::Error> {
        let mut e = Endpoint::from_shared(uri.to_owned())?
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(5))
            .http2_keep_alive_interval(Duration::from_secs(30))
            .initial_stream_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW);
        if let Some(d) = self.deadline {
            e = e.timeout(d);
        }
        Ok(Arc::new(Replica { key: uri.to_owned(), channel: e.connect_lazy(), down_until_ms: AtomicU64::new(0) }))
    }
}

/// One replica.
#[derive(Debug)]
struct Replica {
    key: String,
    channel: Channel,
    /// Milliseconds since `Shared::epoch` until which this replica is skipped.
    down_until_ms: AtomicU64,
}

#[derive(Debug)]
struct Shared {
    replicas: ArcSwap<Vec<Arc<Replica>>>,
    /// GRPC_HEDGE_AFTER_MS: when a read is also sent to the next replica (`None`: never).
    hedge_after: Option<Duration>,
    /// Sent as `x-internal-token` with every call.
    internal_token: InternalToken,
    next: AtomicUsize,
    epoch: Instant,
}

impl Shared {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Skips `replica` for [`DOWN_FOR`].
    fn mark_down(&self, replica: &Replica) {
        replica.down_until_ms.store(self.now_ms() + DOWN_FOR.as_millis() as u64, Ordering::Relaxed);
    }

    /// The replicas to try, in order: round-robin from the next one, those marked down last.
    fn order(&self) -> Vec<Arc<Replica>> {
        let all = self.replicas.load();
        if all.is_empty() {
            return Vec::new();
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let now = self.now_ms();
        let rotated = (0..all.len()).map(|i| all[(start + i) % all.len()].clone());
        let (up, down): (Vec<_>, Vec<_>) = rotated.partition(|r| r.down_until_ms.load(Ordering::Relaxed) <= now);
        up.into_iter().chain(down).collect()
    }
}

/// A channel over every replica of one service; a drop-in for [`Channel`] in generated
/// clients. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Balanced {
    shared: Arc<Shared>,
}

/// One target as configured: a URL, its scheme, host and port.
#[derive(Debug, Clone)]
struct Target {
    scheme: String,
    host: String,
    port: u16,
}

fn parse_targets(urls: &str) -> anyhow::Result<Vec<Target>> {
    let mut out = Vec::new();
    for url in urls.split(',').map(str::trim).filter(|u| !u.is_empty()) {
        let uri: http::Uri = url.parse().map_err(|e| anyhow::anyhow!("invalid service URL {url:?}: {e}"))?;
        let scheme = uri.scheme_str().unwrap_or("http").to_owned();
        let host = uri.host().ok_or_else(|| anyhow::anyhow!("service URL {url:?} has no host"))?.to_owned();
        let port = uri.port_u16().unwrap_or(if scheme == "https" { 443 } else { 80 });
        out.push(Target { scheme, host, port });
    }
    anyhow::ensure!(!out.is_empty(), "no service URL given");
    Ok(out)
}

impl Balanced {
    /// A balanced channel over `urls` (comma-separated), every call carrying `internal_token`
    /// as `x-internal-token`. With `deadline`, every call is cut off after it. Host names are resolved again every `refresh` (in a background task, so
    /// this must run inside a Tokio runtime); until the first resolution, each URL is one
    /// replica. Errors: an invalid URL.
    pub fn new(urls: &str, deadline: Option<Duration>, refresh: Duration, internal_token: InternalToken) -> anyhow::Result<Self> {
        Self::with_hedging(urls, deadline, refresh, internal_token, None)
    }

    /// [`Balanced::new`], with reads hedged after `hedge_after` (see the module docs).
    /// Errors: an invalid URL.
    pub fn with_hedging(
        urls: &str,
        deadline: Option<Duration>,
        refresh: Duration,
        internal_token: InternalToken,
        hedge_after: Option<Duration>,
    ) -> anyhow::Result<Self> {
        let targets = parse_targets(urls)?;
        let template = Template { deadline };
        let mut initial = Vec::new();
        for t in &targets {
            initial.push(template.replica(&format!("{}://{}:{}", t.scheme, t.host, t.port))?);
        }
        let shared =
            Arc::new(Shared { replicas: ArcSwap::from_pointee(initial), hedge_after, internal_token, next: AtomicUsize::new(0), epoch: Instant::now() });
        if targets.iter().any(|t| t.host.parse::<std::net::IpAddr>().is_err()) {
            tokio::spawn(refresh_loop(Arc::downgrade(&shared), targets, template, refresh));
        }
        Ok(Self { shared })
    }
}

/// Resolves the targets' hosts every `every` and swaps in the new replica set, keeping the
/// connections of addresses that stay. Ends when the channel is dropped.
async fn refresh_loop(shared: Weak<Shared>, targets: Vec<Target>, template: Template, every: Duration) {
    loop {
        let mut found: BTreeSet<String> = BTreeSet::new();
        for t in &targets {
            match tokio::net::lookup_host((t.host.as_str(), t.port)).await {
                Ok(addrs) => found.extend(addrs.map(|a| format!("{}://{a}", t.scheme))),
                Err(e) => tracing::warn!(host = %t.host, error = %e, "resolving a service host failed; keeping the replicas known"),
            }
        }
        let Some(shared) = shared.upgrade() else { return };
        let current = shared.replicas.load_full();
        let same = found.len() == current.len() && current.iter().all(|r| found.contains(&r.key));
        if !found.is_empty() && !same {
            let mut next = Vec::new();
            for key in &found {
                if let Some(r) = current.iter().find(|r| &r.key == key) {
                    next.push(r.clone());
                } else if let Ok(r) = template.replica(key) {
                    next.push(r);
                }
            }
            tracing::info!(replicas = ?found, "service replicas changed");
            shared.replicas.store(Arc::new(next));
        }
        drop(shared);
        tokio::time::sleep(every).await;
    }
}

/// Whether the server surely did not process the call, so a write may go to another replica:
/// the connection was refused; the server's HTTP/2 GOAWAY (a replica shutting down) left the
/// call's stream unprocessed (h2 errors only the streams above the last one the server says it
/// handles); the stream was refused (REFUSED_STREAM); or hyper dropped the call before sending
/// it (canceled). A connection lost with the call on it is none of these: it may have run.
fn never_sent(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(io.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::AddrNotAvailable)
        {
            return true;
        }
        if let Some(h2) = err.downcast_ref::<h2::Error>()
            && ((h2.is_go_away() && h2.is_remote()) || h2.reason() == Some(h2::Reason::REFUSED_STREAM))
        {
            return true;
        }
        if err.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_canceled) {
            return true;
        }
        cur = err.source();
    }
    false
}

/// Whether a reply's status (headers of a trailers-only reply, or trailers) is worth another
/// replica: UNAVAILABLE from the transport or the server's framework (a replica shutting down,
/// not ready), i.e. without the service's own `error-code`. A service's own
/// SERVICE_UNAVAILABLE (a cancelled statement, a pool timeout, a deadlock) is final: sending the
/// same work again would only multiply it.
fn retryable_status(h: &http::HeaderMap) -> bool {
    h.get("grpc-status").is_some_and(|v| v.as_bytes() == b"14") && !h.contains_key(cdapi_proto::error_code::ERROR_CODE_KEY)
}

/// [`retryable_status`] in the headers (trailers-only reply) or, once buffered, the trailers.
fn unavailable(res: &http::Response<tonic::body::Body>) -> bool {
    retryable_status(res.headers())
}

/// RPCs whose replies are streams (not buffered).
fn streaming(path: &str) -> bool {
    path.ends_with("/ExportItems")
        || path.ends_with("/ReadStream")
        || path.ends_with("/WatchSchema")
        || path.ends_with("/ReadAsset")
        || path.ends_with("/Subscribe")
}

/// RPCs whose requests are streams (file uploads): never buffered, so never sent twice.
fn request_streaming(path: &str) -> bool {
    path.ends_with("/UploadFile")
}

/// Reads a reply whole. Errors: the connection broke before the end. The trailers'
/// `grpc-status` is copied to the headers when it is retryable, so [`unavailable`] sees it.
async fn buffered(res: http::Response<tonic::body::Body>) -> Result<http::Response<tonic::body::Body>, BoxError> {
    let (mut parts, body) = res.into_parts();
    // A broken body arrives as a Status: a failed call, to be retried.
    let collected = body.collect().await.map_err(|status| -> BoxError { Box::new(status) })?;
    let trailers = collected.trailers().cloned();
    if let Some(t) = &trailers
        && retryable_status(t)
    {
        parts.headers.insert("grpc-status", http::HeaderValue::from_static("14"));
    }
    let data = collected.to_bytes();
    let mut frames = vec![Ok::<_, std::convert::Infallible>(http_body::Frame::data(data))];
    if let Some(t) = trailers {
        frames.push(Ok(http_body::Frame::trailers(t)));
    }
    let body = http_body_util::StreamBody::new(futures_util::stream::iter(frames));
    Ok(http::Response::from_parts(parts, tonic::body::Body::new(body)))
}

/// Sends a unary call (`parts` and the buffered `body`) to `replica`; with `buffer`, reads the
/// reply whole (see [`buffered`]). Errors: the transport's.
async fn send_once(replica: &Replica, parts: &http::request::Parts, body: &Bytes, buffer: bool) -> Result<http::Response<tonic::body::Body>, BoxError> {
    let mut builder = http::Request::builder().method(parts.method.clone()).uri(parts.uri.clone()).version(parts.version);
    if let Some(h) = builder.headers_mut() {
        *h = parts.headers.clone();
    }
    let request = builder.body(tonic::body::Body::new(http_body_util::Full::new(body.clone())))?;
    let mut channel = replica.channel.clone();
    std::future::poll_fn(|cx| tower_service::Service::poll_ready(&mut channel, cx)).await?;
    let res = tower_service::Service::call(&mut channel, request).await?;
    if buffer { buffered(res).await } else { Ok(res) }
}

/// A reply to keep: a whole reply that is not a transport UNAVAILABLE.
fn good(outcome: &Result<http::Response<tonic::body::Body>, BoxError>) -> bool {
    outcome.as_ref().is_ok_and(|res| !unavailable(res))
}

/// A call safe to send twice (a read, a keyed write) sent to `first`, and also to `second` if
/// `first` has no whole reply after `after`
/// (see the module docs). `Ok`: the winning reply; `Err`: how many of the two replicas were
/// tried and failed (their calls ended without a good reply), for the retry loop to go on.
async fn hedged(
    shared: &Shared,
    rpc: &str,
    first: &Replica,
    second: &Replica,
    parts: &http::request::Parts,
    body: &Bytes,
    after: Duration,
) -> Result<http::Response<tonic::body::Body>, usize> {
    let a = send_once(first, parts, body, true);
    tokio::pin!(a);
    match tokio::time::timeout(after, &mut a).await {
        Ok(outcome) if good(&outcome) => return outcome.map_err(|_| 1),
        Ok(_) => {
            shared.mark_down(first);
            return Err(1);
        }
        Err(_) => {}
    }
    service_runtime::metrics::global().grpc_client_hedges.get_or_create(&vec![("rpc", rpc.to_owned())]).inc();
    let b = send_once(second, parts, body, true);
    tokio::pin!(b);
    let (winner, loser, outcome, first_won) = tokio::select! {
        o = &mut a => (first, second, o, true),
        o = &mut b => (second, first, o, false),
    };
    if good(&outcome) {
        if !first_won {
            // Slower than its hedge: skipped for a while (a hung replica stops getting calls).
            tracing::warn!(rpc, replica = %first.key, "a call was answered by its hedge; the slow replica is skipped for a while");
            shared.mark_down(first);
        }
        return outcome.map_err(|_| 1);
    }
    shared.mark_down(winner);
    let other = if first_won { b.await } else { a.await };
    if good(&other) {
        return other.map_err(|_| 2);
    }
    shared.mark_down(loser);
    Err(2)
}

impl tower_service::Service<http::Request<tonic::body::Body>> for Balanced {
    type Response = http::Response<tonic::body::Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Each replica's channel is made ready inside the call.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        let shared = self.shared.clone();
        // Taken here, on the caller's task (see [`crate::consistency`]).
        let consistency = crate::consistency::current();
        let answer_slot = consistency.clone();
        let call = Box::pin(async move {
            let (mut parts, body) = req.into_parts();
            if let Some(token) = shared.internal_token.header() {
                parts.headers.insert("x-internal-token", token.clone());
            }
            if let Some(token) = consistency.as_ref().and_then(|s| s.token()) {
                parts.headers.entry(crate::consistency::HEADER).or_insert(token);
            }
            let rpc = parts.uri.path().to_owned();
            if request_streaming(&rpc) {
                // Streamed through as it comes (memory stays flat): one attempt, on the first
                // replica that is up.
                let replica = shared.order().into_iter().next().ok_or_else(|| -> BoxError { "no replica of the service is known".into() })?;
                let mut channel = replica.channel.clone();
                std::future::poll_fn(|cx| tower_service::Service::poll_ready(&mut channel, cx)).await?;
                let request = http::Request::from_parts(parts, body);
                return tower_service::Service::call(&mut channel, request).await.map_err(Into::into);
            }
            // Unary request messages: buffered so the call can be sent again.
            let body: Bytes = body.collect().await?.to_bytes();
            // Safe to send twice: a read, or an item write carrying its write key.
            let keyed = is_keyed_write(&rpc);
            if keyed && !parts.headers.contains_key(WRITE_KEY_METADATA) {
                parts.headers.insert(WRITE_KEY_METADATA, new_write_key()?);
            }
            let idempotent = is_idempotent(&rpc) || keyed;
            let order = shared.order();
            let attempts = (order.len() + 1).min(MAX_ATTEMPTS);
            let mut last_err: Option<BoxError> = None;
            let mut start = 0;
            if let (Some(after), true, [first, second, ..]) = (shared.hedge_after, idempotent && !streaming(&rpc), order.as_slice()) {
                match hedged(&shared, &rpc, first, second, &parts, &body, after).await {
                    Ok(res) => return Ok(res),
                    Err(tried) => start = tried,
                }
            }
            for attempt in start..attempts {
                let Some(replica) = order.get(attempt % order.len().max(1)) else {
                    return Err("no replica of the service is known".into());
                };
                if attempt > 0 {
                    service_runtime::metrics::global().grpc_client_retries.get_or_create(&vec![("rpc", rpc.clone())]).inc();
                    if attempt >= order.len() {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
                // A read's reply is buffered, so that a connection lost in the middle of it is
                // retried like one lost before it (streams are passed through).
                let outcome = send_once(replica, &parts, &body, idempotent && !streaming(&rpc)).await;
                match outcome {
                    Ok(res) if idempotent && unavailable(&res) && attempt + 1 < attempts => {
                        shared.mark_down(replica);
                        continue;
                    }
                    Ok(res) => return Ok(res),
                    Err(e) => {
                        shared.mark_down(replica);
                        let retry = idempotent || never_sent(&*e);
                        tracing::debug!(rpc = %rpc, replica = %replica.key, error = %e, retry, "call to a replica failed");
                        if !retry {
                            return Err(e);
                        }
                        last_err = Some(e);
                    }
                }
            }
            Err(last_err.unwrap_or_else(|| "the call failed on every replica".into()))
        });
        Box::pin(async move {
            let res = call.await?;
            // A write's token, for the request's later calls and its response.
            if let (Some(slot), Some(token)) = (answer_slot, res.headers().get(crate::consistency::HEADER)) {
                slot.issued(token.clone());
            }
            Ok(res)
        })
    }
}

/// The internal credential; never printed.
#[derive(Clone, Default)]
pub struct InternalToken(Option<http::HeaderValue>);

impl std::fmt::Debug for InternalToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(***)" } else { "None" })
    }
}

impl InternalToken {
    /// A credential; errors when it cannot travel as a header value.
    pub fn new(token: Option<&str>) -> anyhow::Result<Self> {
        Ok(Self(
            token
                .map(|t| {
                    http::HeaderValue::from_str(t).map(|mut v| {
                        v.set_sensitive(true);
                        v
                    })
                })
                .transpose()
                .map_err(|_| anyhow::anyhow!("INTERNAL_TOKEN must be printable ASCII"))?,
        ))
    }

    /// The header value, if any.
    pub fn header(&self) -> Option<&http::HeaderValue> {
        self.0.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_item_writes_are_keyed() {
        assert!(is_keyed_write("/cdapi.v1.ItemsService/CreateItems"));
        assert!(is_keyed_write("/cdapi.v1.ItemsService/DeleteItem"));
        assert!(!is_keyed_write("/cdapi.v1.ItemsService/Read"));
        assert!(!is_keyed_write("/cdapi.v1.FilesService/CreateItems"));
        assert!(!is_keyed_write("/cdapi.v1.AuthService/Login"));
        let (a, b) = (new_write_key().expect("a key"), new_write_key().expect("a key"));
        assert!(a.len() == 32 && a != b, "random keys: {a:?} {b:?}");
    }

    #[test]
    fn only_reads_are_idempotent() {
        assert!(is_idempotent("/cdapi.v1.ItemsService/Read"));
        assert!(is_idempotent("/grpc.health.v1.Health/Check"));
        assert!(!is_idempotent("/cdapi.v1.ItemsService/CreateItem"));
        assert!(!is_idempotent("/cdapi.v1.AuthService/Refresh"));
    }

    #[test]
    fn only_transport_unavailable_is_retried() {
        let mut h = http::HeaderMap::new();
        h.insert("grpc-status", http::HeaderValue::from_static("14"));
        assert!(retryable_status(&h), "a replica going away");
        h.insert("error-code", http::HeaderValue::from_static("SERVICE_UNAVAILABLE"));
        assert!(!retryable_status(&h), "the service's own answer (a statement timeout)");
        h.remove("error-code");
        h.insert("grpc-status", http::HeaderValue::from_static("7"));
        assert!(!retryable_status(&h));
    }

    #[test]
    fn urls_are_split_and_checked() -> anyhow::Result<()> {
        let t = parse_targets("http://a:1, http://10.0.0.2:2")?;
        assert_eq!((t[0].host.as_str(), t[0].port, t[1].host.as_str()), ("a", 1, "10.0.0.2"));
        assert!(parse_targets("").is_err());
        assert!(parse_targets("http://").is_err());
        Ok(())
    }
}
