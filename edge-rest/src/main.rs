//! edge-rest binary: reads settings, binds REST_HOST:REST_PORT, serves until SIGTERM/Ctrl-C.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _tracing = service_runtime::init_tracing("edge-rest");
    let settings = edge_rest::config::Settings::from_env()?;
    tracing::info!(?settings, "edge-rest starting");
    let listener = tokio::net::TcpListener::bind((settings.host, settings.port)).await?;
    edge_rest::run(settings, listener, service_runtime::shutdown_signal()).await
}
