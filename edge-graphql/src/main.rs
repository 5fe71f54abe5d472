//! edge-graphql binary: reads settings, binds GRAPHQL_HOST:GRAPHQL_PORT, serves until SIGTERM/Ctrl-C.

/// mimalloc: GraphQL execution allocates per field and per value; glibc's malloc spent a quarter
/// of the edge's CPU under load (arena lock contention included), mimalloc much less.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _tracing = service_runtime::init_tracing("edge-graphql");
    let settings = edge_graphql::config::Settings::from_env()?;
    tracing::info!(?settings, "edge-graphql starting");
    let listener = tokio::net::TcpListener::bind((settings.host, settings.port)).await?;
    edge_graphql::run(settings, listener, service_runtime::shutdown_signal()).await
}
