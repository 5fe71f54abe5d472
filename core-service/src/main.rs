//! core-service binary. `core-service` serves; `core-service migrate` runs the system-table
//! migrations and exits (for launchers and Kubernetes migration jobs).

use core_service::config::Settings;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    service_runtime::init_tracing();
    let settings = Settings::from_env()?;
    if std::env::args().nth(1).as_deref() == Some("migrate") {
        core_service::db::migrate(&settings.database_url).await?;
        tracing::info!("migrations applied");
        return Ok(());
    }
    tracing::info!(?settings, "core-service starting");
    let listener = tokio::net::TcpListener::bind(settings.grpc_addr).await?;
    core_service::run(settings, listener, service_runtime::shutdown_signal()).await
}
