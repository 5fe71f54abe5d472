//! core-service binary.
//! - `core-service`: serves gRPC.
//! - `core-service migrate`: runs the system-table migrations and exits (launchers, Kubernetes
//!   migration jobs).
//! - `core-service sql COLLECTION QUERY_JSON [KEY]`: prints the one SQL statement a read would
//!   run (parameters written in as literals), for benchmarks against raw Postgres (pgbench) and
//!   for debugging. QUERY_JSON is a Directus query object, e.g. `{"fields":"*,author.*"}`;
//!   with KEY it is a read by primary key.
//! - `core-service import-directus [--dry-run] [--force]`: makes this API serve the Directus 11 database
//!   DATABASE_URL names (its system tables copied into ours; see
//!   `core_service::directus_import`), or with `--dry-run` prints what it would do.

use core_service::config::Settings;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _tracing = service_runtime::init_tracing("core-service");
    let settings = Settings::from_env()?;
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("migrate") => {
            system_tables::migrate(&settings.database_url).await?;
            tracing::info!("migrations applied");
            Ok(())
        }
        Some("sql") => {
            let (Some(collection), Some(query)) = (args.get(2), args.get(3)) else {
                anyhow::bail!("usage: core-service sql COLLECTION QUERY_JSON [KEY]");
            };
            let sql = core_service::plan_sql(&settings, collection, query, args.get(4).map(String::as_str)).await?;
            println!("{sql}");
            Ok(())
        }
        Some("import-directus") => {
            let mut options = core_service::directus_import::Options::default();
            for arg in &args[2..] {
                match arg.as_str() {
                    "--dry-run" => options.dry_run = true,
                    "--force" => options.force = true,
                    other => anyhow::bail!("unknown option {other:?} (usage: core-service import-directus [--dry-run] [--force])"),
                }
            }
            let report = core_service::directus_import::run(&settings, options).await?;
            print!("{report}");
            Ok(())
        }
        Some(other) => anyhow::bail!("unknown command {other:?} (commands: migrate, sql, import-directus)"),
        None => {
            tracing::info!(?settings, "core-service starting");
            let listener = tokio::net::TcpListener::bind(settings.grpc_addr).await?;
            core_service::run(settings, listener, service_runtime::shutdown_signal()).await
        }
    }
}
