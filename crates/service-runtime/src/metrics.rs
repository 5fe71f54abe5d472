//! Prometheus metrics of one process, served as text on `GET /metrics` at METRICS_ADDR
//! (docs/operations.md "What to monitor"; unset = not served). One registry per process ([`global`]); the names:
//!
//! - `cdapi_http_requests_total{route,method,status}`, `cdapi_http_request_duration_seconds{route,method}`
//!   — the edges, per route template (`/items/:collection/:id`, never raw ids);
//! - `cdapi_grpc_requests_total{rpc,code}`, `cdapi_grpc_request_duration_seconds{rpc}` — the
//!   services, per RPC (`/cdapi.v1.ItemsService/Read`) and gRPC status code;
//! - `cdapi_grpc_client_retries_total{rpc}` — calls an edge sent again to another replica;
//! - `cdapi_grpc_client_hedges_total{rpc}` — reads an edge also sent to another replica because
//!   the first had not answered within GRPC_HEDGE_AFTER_MS;
//! - `cdapi_db_pool_connections{state="idle"|"in_use"}`, `cdapi_db_pool_max` — the services' pools;
//! - `cdapi_redis_errors_total{op}` — failed Redis commands;
//! - `cdapi_rate_limited_total{limiter}` — requests refused by a rate limiter (429);
//! - `cdapi_graphql_answers_total{path}` — edge-graphql's `/graphql` requests by how they were
//!   answered: `direct` (a validated query of fast-path reads, without the executor) or
//!   `executor`;
//! - `cdapi_dependency_up{dependency}` — 1 while a dependency (`postgres`, `redis`) answers its
//!   readiness check, 0 while it does not (see [`crate::grpc::Health::watch`]).
//!
//! Durations are in seconds (Prometheus convention).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::{Mutex, OnceLock};

/// A label set: `(name, value)` pairs.
pub type Labels = Vec<(&'static str, String)>;

type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

/// The process's metrics. Cheap to use from any thread.
pub struct Metrics {
    registry: Registry,
    hooks: Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
    /// HTTP requests answered by an edge: labels route, method, status.
    pub http_requests: Family<Labels, Counter>,
    /// Their latency (seconds): labels route, method.
    pub http_duration: HistogramFamily,
    /// gRPC calls answered by a service: labels rpc, code.
    pub grpc_requests: Family<Labels, Counter>,
    /// Their latency (seconds): label rpc.
    pub grpc_duration: HistogramFamily,
    /// gRPC calls an edge retried on another replica: label rpc.
    pub grpc_client_retries: Family<Labels, Counter>,
    /// Reads an edge hedged on another replica: label rpc.
    pub grpc_client_hedges: Family<Labels, Counter>,
    /// Pool connections by state (`idle`, `in_use`), refreshed at each scrape.
    pub db_pool_connections: Family<Labels, Gauge>,
    /// The pool's size limit.
    pub db_pool_max: Gauge,
    /// Failed Redis commands: label op.
    pub redis_errors: Family<Labels, Counter>,
    /// Requests refused by a rate limiter: label limiter.
    pub rate_limited: Family<Labels, Counter>,
    /// Whether each dependency answers its readiness check (1) or not (0): label dependency.
    pub dependency_up: Family<Labels, Gauge>,
    /// Item reads by where they ran: label target (`primary`, `replica`).
    pub db_reads: Family<Labels, Counter>,
    /// Each read replica's lag at the last poll (milliseconds): label replica.
    pub db_replica_lag_ms: Family<Labels, Gauge>,
    /// Result cache lookups: label result (`hit`, `miss`, `bypass`).
    pub cache_lookups: Family<Labels, Counter>,
    /// Result cache generations changed: label reason (`write`, `schema`, `reset`).
    pub cache_invalidations: Family<Labels, Counter>,
    /// edge-graphql's `/graphql` requests by how they were answered: label path (`direct`,
    /// `executor`).
    pub graphql_answers: Family<Labels, Counter>,
}

fn latency_histogram() -> Histogram {
    // 0.5 ms … ~8 s.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(0.0005, 2.0, 15))
}

impl Metrics {
    fn new() -> Self {
        let mut m = Self {
            registry: Registry::with_prefix("cdapi"),
            hooks: Mutex::new(Vec::new()),
            http_requests: Family::default(),
            http_duration: Family::new_with_constructor(latency_histogram),
            grpc_requests: Family::default(),
            grpc_duration: Family::new_with_constructor(latency_histogram),
            grpc_client_retries: Family::default(),
            grpc_client_hedges: Family::default(),
            db_pool_connections: Family::default(),
            db_pool_max: Gauge::default(),
            redis_errors: Family::default(),
            rate_limited: Family::default(),
            dependency_up: Family::default(),
            db_reads: Family::default(),
            db_replica_lag_ms: Family::default(),
            cache_lookups: Family::default(),
            cache_invalidations: Family::default(),
            graphql_answers: Family::default(),
        };
        let r = &mut m.registry;
        r.register("http_requests", "HTTP requests answered, by route template, method and status", m.http_requests.clone());
        r.register("http_request_duration_seconds", "HTTP request latency in seconds", m.http_duration.clone());
        r.register("grpc_requests", "gRPC calls answered, by RPC and status code", m.grpc_requests.clone());
        r.register("grpc_request_duration_seconds", "gRPC call latency in seconds", m.grpc_duration.clone());
        r.register("grpc_client_retries", "gRPC calls sent again to another replica", m.grpc_client_retries.clone());
        r.register("grpc_client_hedges", "Reads also sent to another replica after GRPC_HEDGE_AFTER_MS", m.grpc_client_hedges.clone());
        r.register("db_pool_connections", "Database pool connections by state", m.db_pool_connections.clone());
        r.register("db_pool_max", "Database pool size limit", m.db_pool_max.clone());
        r.register("redis_errors", "Failed Redis commands", m.redis_errors.clone());
        r.register("rate_limited", "Requests refused by a rate limiter", m.rate_limited.clone());
        r.register("dependency_up", "Whether a dependency answers its readiness check (1) or not (0)", m.dependency_up.clone());
        r.register("db_reads", "Item reads by where they ran (primary or replica)", m.db_reads.clone());
        r.register("db_replica_lag_milliseconds", "Each read replica's lag at the last poll", m.db_replica_lag_ms.clone());
        r.register("cache_lookups", "Result cache lookups by result (hit, miss, bypass)", m.cache_lookups.clone());
        r.register("cache_invalidations", "Result cache generations changed, by reason (write, schema, reset)", m.cache_invalidations.clone());
        r.register("graphql_answers", "GraphQL requests by how they were answered (direct or executor)", m.graphql_answers.clone());
        m
    }

    /// Counts one `/graphql` request answered by `path` (`direct`, `executor`).
    pub fn graphql_answered(&self, path: &'static str) {
        self.graphql_answers.get_or_create(&vec![("path", path.to_owned())]).inc();
    }

    /// Runs `hook` before every scrape (to read gauges such as pool usage).
    pub fn on_scrape(&self, hook: impl Fn() + Send + Sync + 'static) {
        if let Ok(mut hooks) = self.hooks.lock() {
            hooks.push(Box::new(hook));
        }
    }

    /// The metrics in the Prometheus text format (OpenMetrics 1.0).
    pub fn encode(&self) -> String {
        if let Ok(hooks) = self.hooks.lock() {
            for h in hooks.iter() {
                h();
            }
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }

    /// Counts one answered HTTP request and its latency.
    pub fn observe_http(&self, route: &str, method: &str, status: u16, elapsed: std::time::Duration) {
        self.http_requests.get_or_create(&vec![("route", route.to_owned()), ("method", method.to_owned()), ("status", status.to_string())]).inc();
        self.http_duration.get_or_create(&vec![("route", route.to_owned()), ("method", method.to_owned())]).observe(elapsed.as_secs_f64());
    }

    /// Counts one request refused by `limiter`.
    pub fn rate_limited(&self, limiter: &'static str) {
        self.rate_limited.get_or_create(&vec![("limiter", limiter.to_owned())]).inc();
    }

    /// Reports a database pool at every scrape: `max` connections at most, `usage()` giving
    /// (open connections, idle ones).
    pub fn observe_pool(&self, max: u32, usage: impl Fn() -> (u32, usize) + Send + Sync + 'static) {
        self.db_pool_max.set(i64::from(max));
        let connections = self.db_pool_connections.clone();
        self.on_scrape(move || {
            let (size, free) = usage();
            connections.get_or_create(&vec![("state", "idle".to_owned())]).set(free as i64);
            connections.get_or_create(&vec![("state", "in_use".to_owned())]).set(i64::from(size).saturating_sub(free as i64));
        });
    }

    /// Counts one failed Redis command.
    pub fn redis_error(&self, op: &'static str) {
        self.redis_errors.get_or_create(&vec![("op", op.to_owned())]).inc();
    }
}

/// The process's metrics.
pub fn global() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

/// Serves `GET /metrics` (anything else: 404) on `listener` for as long as the process runs.
/// HTTP/1.1 only: this is for Prometheus scrapers, not clients.
pub async fn serve(listener: tokio::net::TcpListener) {
    use http_body_util::Full;
    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "metrics listener accept failed");
                continue;
            }
        };
        tokio::spawn(async move {
            let svc = service_fn(|req: hyper::Request<hyper::body::Incoming>| async move {
                let (status, body) = if req.uri().path() == "/metrics" {
                    (http::StatusCode::OK, global().encode())
                } else {
                    (http::StatusCode::NOT_FOUND, "not found\n".to_owned())
                };
                let mut res = hyper::Response::new(Full::new(bytes::Bytes::from(body)));
                *res.status_mut() = status;
                res.headers_mut()
                    .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"));
                Ok::<_, std::convert::Infallible>(res)
            });
            if let Err(e) = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await {
                tracing::debug!(error = %e, "metrics connection ended with an error");
            }
        });
    }
}

/// Binds METRICS_ADDR (when set) and serves [`serve`] there in the background (scrapes are
/// answered until the process exits, the drain included). Errors: METRICS_ADDR does not parse
/// or cannot be bound.
pub async fn serve_from_env() -> anyhow::Result<()> {
    let Some(addr) = crate::env_opt("METRICS_ADDR") else {
        return Ok(());
    };
    let addr: std::net::SocketAddr = addr.trim().parse().map_err(|e| anyhow::anyhow!("METRICS_ADDR={addr:?} is invalid: {e}"))?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "metrics listening (HTTP, /metrics)");
    tokio::spawn(serve(listener));
    Ok(())
}
