//! The HTTP server loop of both edges: accept on a given listener, serve each connection with
//! hyper (HTTP/1.1, and HTTP/2 by prior knowledge) through a warp filter, and on shutdown stop
//! accepting and let in-flight requests finish.
//!
//! It replaces `warp::serve` for one reason: every connection is wrapped in
//! [`crate::request_target::LenientTarget`] first, so URLs with raw JSON (`?filter={"id":…}`)
//! reach the routes instead of being refused by hyper with an empty 400. The peer address
//! travels as the request extension [`Peer`] (read it with [`peer`]).
//!
//! [`run`] is the one entry both edges serve through: metrics, readiness and the drain on
//! shutdown, the catch-all [`incoming`] filter, and [`serve`].

use crate::request_target::LenientTarget;
use crate::write_stall::WriteStall;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use tokio::net::TcpListener;
use warp::Filter;
use warp::reply::Response;

/// The TCP peer of a request's connection (a request extension).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// A filter extracting the connection's peer address (`None` outside [`serve`]).
pub fn peer() -> impl Filter<Extract = (Option<SocketAddr>,), Error = Infallible> + Clone {
    warp::ext::optional::<Peer>().map(|p: Option<Peer>| p.map(|Peer(a)| a))
}

/// One request as both edges take it from their one catch-all filter ([`incoming`]).
pub struct Incoming {
    /// Method (SEARCH included).
    pub method: http::Method,
    /// Path, still percent-encoded.
    pub path: String,
    /// Raw query string, without `?` (empty when there is none).
    pub query: String,
    /// Headers.
    pub headers: http::HeaderMap,
    /// The connection's peer (see [`peer`]).
    pub peer: Option<SocketAddr>,
    /// The body, unread (see [`crate::body`]).
    pub body: crate::body::Body,
    /// A WebSocket handshake (`Upgrade: websocket`), to accept with
    /// [`crate::upgrade::Handshake::accept`]; `None` for other requests.
    pub websocket: Option<crate::upgrade::Handshake>,
}

/// The catch-all filter of both edges: every request, whatever its path and method, as an
/// [`Incoming`], so routing (and ROUTE_NOT_FOUND / 405 in Directus's error body) is the edge's.
pub fn incoming() -> impl Filter<Extract = (Incoming,), Error = warp::Rejection> + Clone {
    warp::method()
        .and(warp::path::full())
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and(warp::header::headers_cloned())
        .and(peer())
        .and(warp::ext::optional::<hyper::upgrade::OnUpgrade>())
        .and(warp::body::stream())
        .map(|method, path: warp::path::FullPath, query, headers, peer, on_upgrade, body| {
            let websocket = crate::upgrade::Handshake::from_parts(&method, &headers, on_upgrade);
            Incoming { method, path: path.as_str().to_owned(), query, headers, peer, body: crate::body::boxed(body), websocket }
        })
}

/// Serves `filter` on `listener` until `shutdown` resolves; then closes the listener and waits
/// for the open connections' in-flight requests (idle keep-alive connections are closed). A
/// connection whose client takes no bytes for `stall` is cut off ([`WriteStall`]).
pub async fn serve<F>(listener: TcpListener, filter: F, stall: std::time::Duration, shutdown: impl Future<Output = ()> + Send + 'static)
where
    F: Filter<Extract = (Response,), Error = warp::Rejection> + Clone + Send + Sync + 'static,
{
    let service = warp::service(filter);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, addr) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        let per_request = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(Peer(addr));
            let mut service = service.clone();
            tower_service::Service::call(&mut service, req)
        });
        let io = hyper_util::rt::TokioIo::new(WriteStall::new(LenientTarget::new(stream), stall));
        let conn =
            hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new()).serve_connection_with_upgrades(io, per_request).into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Serves an edge on `listener`: the metrics listener (METRICS_ADDR), then every request as an
/// [`Incoming`] to `handler`, until `shutdown` resolves; then `readiness` turns off at once, the
/// listener stays open SHUTDOWN_DELAY_MS longer (so balancers stop routing here), and in-flight
/// requests finish. Errors: an invalid METRICS_ADDR, SHUTDOWN_DELAY_MS or
/// STREAM_STALL_TIMEOUT_MS.
pub async fn run<H, F>(
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    readiness: service_runtime::shutdown::Readiness,
    handler: H,
) -> anyhow::Result<()>
where
    H: Fn(Incoming) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response> + Send + 'static,
{
    service_runtime::metrics::serve_from_env().await?;
    let delay = service_runtime::shutdown::delay_from_env()?;
    let stall = service_runtime::stall_timeout_from_env()?;
    let shutdown = service_runtime::shutdown::drain_after(shutdown, delay, move || readiness.stop());
    // Each request with its consistency-token slot (see [`crate::consistency`]).
    let handler = move |i: Incoming| {
        let token = crate::consistency::from_request(&i.headers);
        crate::consistency::scope(token, handler(i))
    };
    serve(listener, incoming().then(handler), stall, shutdown).await;
    Ok(())
}
