//! edge-graphql binary: reads settings, binds GRAPHQL_HOST:GRAPHQL_PORT, serves until SIGTERM/Ctrl-C.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    service_runtime::init_tracing();
    let settings = edge_graphql::config::Settings::from_env()?;
    tracing::info!(?settings, "edge-graphql starting");
    let listener = tokio::net::TcpListener::bind((settings.host, settings.port)).await?;
    edge_graphql::run(settings, listener, service_runtime::shutdown_signal()).await
}
