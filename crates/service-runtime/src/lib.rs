//! Start-up and operation pieces every binary shares: tracing set-up, the shutdown signal and
//! drain, metrics, and the request context carried from the edges to the services.
//!
//! Layout: [`init_tracing`] (RUST_LOG filter, LOG_FORMAT `text`|`json`), [`shutdown_signal`]
//! (SIGINT, SIGTERM, and stdin EOF when SHUTDOWN_ON_STDIN_EOF=1, which lets a parent process —
//! the test harness, the local launcher — stop its children simply by exiting), [`env_or`],
//! [`secret_env`] (a secret from `NAME` or the file `NAME_FILE`);
//! [`shutdown`] (readiness and the drain delay), [`metrics`] (Prometheus registry and the
//! `/metrics` listener), [`grpc`] (the servers' span-and-metrics layer), [`trace`] (W3C
//! `traceparent`), [`otel`] (optional OpenTelemetry export), [`holders`] (places counted per
//! caller, for the per-caller budgets).

pub mod grpc;
pub mod holders;
pub mod metrics;
pub mod otel;
pub mod shutdown;
pub mod trace;

use std::str::FromStr;

/// Installs the global tracing subscriber. `RUST_LOG` filters (default `info`); `LOG_FORMAT=json`
/// prints one JSON object per event with the fields of its spans (`spans`: e.g. `request_id`,
/// `trace_id`), anything else prints human-readable lines. Logs go to stderr. With
/// `OTEL_EXPORTER_OTLP_ENDPOINT` set, spans are also exported as `service` ([`otel`]). Keep
/// the returned guard until the end of `main`: dropping it flushes the exporter.
pub fn init_tracing(service: &str) -> otel::Guard {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let json = std::env::var("LOG_FORMAT").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
    // Two layer values, not one turned either way: each sits at its own place in the stack,
    // so each has its own subscriber type.
    let (json_layer, text_layer) = if json {
        (Some(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).json().with_current_span(false).with_span_list(true)), None)
    } else {
        (None, Some(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false)))
    };
    let (provider, otel_error) = if otel::requested() {
        match otel::provider(service) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e)),
        }
    } else {
        (None, None)
    };
    let otel_layer = provider.as_ref().map(|p| {
        use opentelemetry::trace::TracerProvider;
        tracing_opentelemetry::layer().with_tracer(p.tracer(service.to_owned()))
    });
    let result = tracing_subscriber::registry().with(filter).with(json_layer).with(text_layer).with(otel_layer).try_init();
    if let Err(e) = result {
        eprintln!("tracing already initialised: {e}");
    }
    if let Some(e) = otel_error {
        tracing::error!(error = %e, "OpenTelemetry export is off: the exporter could not be built");
    } else if provider.is_some() {
        tracing::info!("exporting spans over OTLP/HTTP");
    }
    otel::Guard(provider)
}

/// Resolves when the process should shut down gracefully: Ctrl-C, SIGTERM, or — when
/// `SHUTDOWN_ON_STDIN_EOF=1` — standard input reaching end of file.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    let stdin_eof = async {
        if std::env::var("SHUTDOWN_ON_STDIN_EOF").as_deref() == Ok("1") {
            // A plain thread, not Tokio's blocking pool: a read that never returns must not
            // hold the runtime open at exit (a SIGTERM'd process would then never end).
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            std::thread::spawn(move || {
                use std::io::Read;
                let mut buf = [0u8; 64];
                let mut stdin = std::io::stdin();
                while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
                let _ = tx.send(());
            });
            if rx.await.is_err() {
                std::future::pending::<()>().await;
            }
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        _ = ctrl_c => tracing::info!("SIGINT received, shutting down"),
        _ = term => tracing::info!("SIGTERM received, shutting down"),
        _ = stdin_eof => tracing::info!("stdin closed, shutting down"),
    }
}

/// STREAM_STALL_TIMEOUT_MS (milliseconds, default 10,000; at least 1): how long a reader may take
/// nothing before it is cut off, the same for the edges' clients and the core's stream readers
/// (docs/security.md "Budgets"). Errors: the variable does not parse.
pub fn stall_timeout_from_env() -> anyhow::Result<std::time::Duration> {
    Ok(std::time::Duration::from_millis(env_or("STREAM_STALL_TIMEOUT_MS", 10_000u64)?.max(1)))
}

/// Reads env var `name` parsed as `T`, or `default` when unset or empty.
/// Errors: the variable is set but does not parse (message names the variable).
pub fn env_or<T: FromStr>(name: &str, default: T) -> anyhow::Result<T>
where
    T::Err: std::fmt::Display,
{
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v.trim().parse().map_err(|e| anyhow::anyhow!("environment variable {name}={v:?} is invalid: {e}")),
        _ => Ok(default),
    }
}

/// Reads an optional env var (unset or empty = `None`).
pub fn env_opt(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// A comma-separated list from env var `name` (entries trimmed, empty ones dropped; unset =
/// empty).
pub fn env_list(name: &str) -> Vec<String> {
    env_opt(name).map(|v| v.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()).unwrap_or_default()
}

/// A secret from the environment: `NAME` itself, or the contents of the file `NAME_FILE`
/// (a mounted Kubernetes Secret; surrounding whitespace trimmed). Unset or empty: `None`.
/// Errors: both are set, or the file cannot be read.
pub fn secret_env(name: &str) -> anyhow::Result<Option<String>> {
    let file_var = format!("{name}_FILE");
    match (env_opt(name), env_opt(&file_var)) {
        (Some(_), Some(_)) => anyhow::bail!("set {name} or {file_var}, not both"),
        (Some(v), None) => Ok(Some(v.trim().to_owned())),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path.trim()).map_err(|e| anyhow::anyhow!("{file_var}={path:?} cannot be read: {e}"))?;
            Ok(Some(text.trim().to_owned()).filter(|t| !t.is_empty()))
        }
        (None, None) => Ok(None),
    }
}
