//! A tower layer for the gRPC servers: every call gets a span carrying the request id and the
//! W3C trace id the edge sent (metadata `x-request-id`, `traceparent`), and is counted in
//! [`crate::metrics`] by RPC and status code.
//!
//! The status code is read from the response headers, where tonic puts it for failed unary
//! calls (trailers-only responses); a response without it in its headers counts as `0` (OK).
//! Each call ends with a debug event `rpc done` (code, elapsed_us): RUST_LOG=service_runtime=debug
//! makes an access log of it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;
use tracing::Instrument;

/// The layer: `Server::builder().layer(RpcLayer)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RpcLayer;

impl<S> tower_layer::Layer<S> for RpcLayer {
    type Service = RpcService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RpcService { inner }
    }
}

/// The service [`RpcLayer`] wraps around the server's routes.
#[derive(Debug, Clone)]
pub struct RpcService<S> {
    inner: S,
}

impl<S, B, RB> tower_service::Service<http::Request<B>> for RpcService<S>
where
    S: tower_service::Service<http::Request<B>, Response = http::Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let rpc = req.uri().path().to_owned();
        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let request_id = header("x-request-id").unwrap_or_else(|| "-".to_owned());
        let trace_id = header("traceparent").and_then(|t| crate::trace::TraceParent::parse(&t)).map(|t| t.trace_id_hex());
        let span = tracing::info_span!("grpc", rpc = %rpc, request_id = %request_id, trace_id = trace_id.as_deref().unwrap_or("-"));
        crate::otel::adopt_parent(&span, req.headers());
        let started = Instant::now();
        let fut = self.inner.call(req);
        Box::pin(
            async move {
                let res = fut.await;
                let code = match &res {
                    Ok(r) => r.headers().get("grpc-status").and_then(|v| v.to_str().ok()).unwrap_or("0").to_owned(),
                    Err(_) => "transport".to_owned(),
                };
                let elapsed = started.elapsed();
                tracing::debug!(code = %code, elapsed_us = elapsed.as_micros() as u64, "rpc done");
                let m = crate::metrics::global();
                m.grpc_requests.get_or_create(&vec![("rpc", rpc.clone()), ("code", code)]).inc();
                m.grpc_duration.get_or_create(&vec![("rpc", rpc)]).observe(elapsed.as_secs_f64());
                res
            }
            .instrument(span),
        )
    }
}

/// gRPC health of a service process, with readiness tied to shutdown. The overall service
/// (`""`, what readiness probes and the edges check) and `liveness` (what liveness probes
/// check) start SERVING; [`Health::shutdown`] turns `""` to NOT_SERVING at the signal, keeps
/// listening SHUTDOWN_DELAY_MS, then lets the server drain. Named services are set by the
/// caller on [`Health::reporter`].
pub struct Health {
    /// The reporter, for per-service statuses.
    pub reporter: tonic_health::server::HealthReporter,
}

impl Health {
    /// The reporter and the `grpc.health.v1.Health` service to add to the server.
    pub async fn new() -> (Self, tonic_health::pb::health_server::HealthServer<impl tonic_health::pb::health_server::Health>) {
        let (reporter, service) = tonic_health::server::health_reporter();
        reporter.set_service_status("", tonic_health::ServingStatus::Serving).await;
        reporter.set_service_status("liveness", tonic_health::ServingStatus::Serving).await;
        (Self { reporter }, service)
    }

    /// The future to give the server's graceful shutdown: `signal`, readiness off, the drain
    /// delay. Errors: SHUTDOWN_DELAY_MS does not parse.
    pub fn shutdown(&self, signal: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<impl Future<Output = ()> + Send + 'static> {
        let delay = crate::shutdown::delay_from_env()?;
        let reporter = self.reporter.clone();
        Ok(async move {
            signal.await;
            reporter.set_service_status("", tonic_health::ServingStatus::NotServing).await;
            crate::shutdown::drain_after(std::future::ready(()), delay, || {}).await;
        })
    }
}
