//! auth-service binary.
//! - `auth-service`: serves gRPC.
//! - `auth-service keygen`: prints a new Ed25519 private key (PKCS#8 PEM) for AUTH_KEYS_FILE,
//!   and its key id on stderr (for AUTH_SIGNING_KID when rotating).

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _tracing = service_runtime::init_tracing("auth-service");
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("keygen") => {
            let (pem, kid) = auth_service::keys::keygen_pem()?;
            print!("{pem}");
            eprintln!("key id: {kid}");
            Ok(())
        }
        Some(other) => anyhow::bail!("unknown command {other:?} (commands: keygen)"),
        None => {
            let settings = auth_service::config::Settings::from_env()?;
            tracing::info!(?settings, "auth-service starting");
            let listener = tokio::net::TcpListener::bind(settings.grpc_addr).await?;
            auth_service::run(settings, listener, service_runtime::shutdown_signal()).await
        }
    }
}
