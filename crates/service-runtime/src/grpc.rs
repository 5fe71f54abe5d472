//! A tower layer for the gRPC servers: every call gets a span carrying the request id and the
//! W3C trace id the edge sent (metadata `x-request-id`, `traceparent`), and is counted in
//! [`crate::metrics`] by RPC and status code.
//!
//! The status code is read from the response headers, where tonic puts it for failed unary
//! calls (trailers-only responses); a response without it in its headers counts as `0` (OK).
//! Each call ends with a debug event `rpc done` (code, elapsed_us): RUST_LOG=service_runtime=debug
//! makes an access log of it.
//!
//! An [`AnswerHook`] ([`RpcLayer::with_answer_hook`]) may add a header to successful answers:
//! core-service's consistency tokens.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tracing::Instrument;

/// What an [`AnswerHook`] gives for one call: work run once the call succeeded, before its
/// answer leaves, yielding a header to add to it (or none).
pub type AnswerWork = Pin<Box<dyn Future<Output = Option<(http::HeaderName, http::HeaderValue)>> + Send>>;

/// Called with each call's RPC path (`/cdapi.v1.ItemsService/CreateItem`) as it arrives: the
/// work to run on its successful answer, or `None` for none.
pub type AnswerHook = Arc<dyn Fn(&str) -> Option<AnswerWork> + Send + Sync>;

/// The layer: `Server::builder().layer(RpcLayer::default())`.
#[derive(Clone, Default)]
pub struct RpcLayer {
    hook: Option<AnswerHook>,
}

impl RpcLayer {
    /// The layer running `hook` on every call (see [`AnswerHook`]).
    pub fn with_answer_hook(hook: AnswerHook) -> Self {
        Self { hook: Some(hook) }
    }
}

impl<S> tower_layer::Layer<S> for RpcLayer {
    type Service = RpcService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RpcService { inner, hook: self.hook.clone() }
    }
}

/// The service [`RpcLayer`] wraps around the server's routes.
#[derive(Clone)]
pub struct RpcService<S> {
    inner: S,
    hook: Option<AnswerHook>,
}

impl<S, B, RB> tower_service::Service<http::Request<B>> for RpcService<S>
where
    S: tower_service::Service<http::Request<B>, Response = http::Response<RB>>,
    S::Future: Send + 'static,
    S::Error: Send,
    RB: Send,
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
        let after = self.hook.as_ref().and_then(|hook| hook(&rpc));
        let fut = self.inner.call(req);
        Box::pin(
            async move {
                let mut res = fut.await;
                let code = match &res {
                    Ok(r) => r.headers().get("grpc-status").and_then(|v| v.to_str().ok()).unwrap_or("0").to_owned(),
                    Err(_) => "transport".to_owned(),
                };
                if let (Some(work), "0") = (after, code.as_str()) {
                    res = match res {
                        Ok(mut r) => {
                            if let Some((name, value)) = work.await {
                                r.headers_mut().insert(name, value);
                            }
                            Ok(r)
                        }
                        failed => failed,
                    };
                }
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

/// gRPC health of a service process, with readiness tied to shutdown and to the process's
/// dependencies. The overall service (`""`, what readiness probes and the edges' `/server/health`
/// check) and `liveness` (what liveness probes check) start SERVING; [`Health::shutdown`] turns
/// `""` to NOT_SERVING at the signal, keeps listening SHUTDOWN_DELAY_MS, then lets the server
/// drain. [`Health::watch`] checks a dependency (PostgreSQL, Redis) on an interval: its own
/// named service reports it, and a *required* one that fails turns `""` to NOT_SERVING until it
/// answers again (readiness probes report each dependency: docs/operations.md). Named services of the
/// gRPC API are set by the caller on [`Health::reporter`].
pub struct Health {
    /// The reporter, for per-service statuses.
    pub reporter: tonic_health::server::HealthReporter,
    ready: std::sync::Arc<std::sync::Mutex<Ready>>,
}

/// What readiness (`""`) is made of.
#[derive(Default)]
struct Ready {
    stopping: bool,
    /// Required dependencies failing now.
    failing: std::collections::BTreeSet<&'static str>,
}

/// READINESS_CHECK_INTERVAL_MS (milliseconds, default 1000): how often each dependency is
/// checked; a check not answered within the interval fails.
pub fn check_interval_from_env() -> anyhow::Result<std::time::Duration> {
    Ok(std::time::Duration::from_millis(crate::env_or("READINESS_CHECK_INTERVAL_MS", 1000u64)?.max(50)))
}

impl Health {
    /// The reporter and the `grpc.health.v1.Health` service to add to the server.
    pub async fn new() -> (Self, tonic_health::pb::health_server::HealthServer<impl tonic_health::pb::health_server::Health>) {
        let (reporter, service) = tonic_health::server::health_reporter();
        reporter.set_service_status("", tonic_health::ServingStatus::Serving).await;
        reporter.set_service_status("liveness", tonic_health::ServingStatus::Serving).await;
        (Self { reporter, ready: Default::default() }, service)
    }

    /// Sets `""` from the shutdown state and the failing required dependencies.
    async fn publish(reporter: &tonic_health::server::HealthReporter, ready: &std::sync::Mutex<Ready>) {
        let serving = ready.lock().map(|r| !r.stopping && r.failing.is_empty()).unwrap_or(false);
        let status = if serving { tonic_health::ServingStatus::Serving } else { tonic_health::ServingStatus::NotServing };
        reporter.set_service_status("", status).await;
    }

    /// Checks the dependency `name` with `check` every `every`, for as long as the process runs
    /// (a check that takes longer than `every` fails). The health service `name` and the gauge
    /// `cdapi_dependency_up{dependency}` report it; a change is logged (`warn` when it fails,
    /// with the reason; `info` when it is back). With `required`, readiness (`""`) is
    /// NOT_SERVING while it fails: set it for what this replica cannot serve without and could
    /// have lost alone (its own database connection), not for what every replica shares and some
    /// calls do without (see docs/operations.md "What failures look like").
    pub fn watch<F, Fut>(&self, name: &'static str, required: bool, every: std::time::Duration, check: F)
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), String>> + Send,
    {
        let (reporter, ready) = (self.reporter.clone(), self.ready.clone());
        let gauge = crate::metrics::global().dependency_up.get_or_create(&vec![("dependency", name.to_owned())]).clone();
        tokio::spawn(async move {
            // Unknown until the first check, whose outcome is published either way.
            let mut was_up: Option<bool> = None;
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let outcome = match tokio::time::timeout(every, check()).await {
                    Ok(r) => r,
                    Err(_) => Err(format!("no answer within {} ms", every.as_millis())),
                };
                let up = outcome.is_ok();
                gauge.set(i64::from(up));
                if was_up == Some(up) {
                    continue;
                }
                match &outcome {
                    Err(reason) => tracing::warn!(dependency = name, required, %reason, "a dependency stopped answering"),
                    Ok(()) if was_up.is_some() => tracing::info!(dependency = name, "a dependency answers again"),
                    Ok(()) => {}
                }
                was_up = Some(up);
                let status = if up { tonic_health::ServingStatus::Serving } else { tonic_health::ServingStatus::NotServing };
                reporter.set_service_status(name, status).await;
                if required {
                    if let Ok(mut r) = ready.lock() {
                        if up {
                            r.failing.remove(name);
                        } else {
                            r.failing.insert(name);
                        }
                    }
                    Self::publish(&reporter, &ready).await;
                }
            }
        });
    }

    /// The future to give the server's graceful shutdown: `signal`, readiness off, the drain
    /// delay. Errors: SHUTDOWN_DELAY_MS does not parse.
    pub fn shutdown(&self, signal: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<impl Future<Output = ()> + Send + 'static> {
        let delay = crate::shutdown::delay_from_env()?;
        let (reporter, ready) = (self.reporter.clone(), self.ready.clone());
        Ok(async move {
            signal.await;
            if let Ok(mut r) = ready.lock() {
                r.stopping = true;
            }
            Self::publish(&reporter, &ready).await;
            crate::shutdown::drain_after(std::future::ready(()), delay, || {}).await;
        })
    }
}
