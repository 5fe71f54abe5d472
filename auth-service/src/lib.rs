//! auth-service: owns identities and tokens. It signs access and session tokens with an Ed25519
//! key only it holds (and publishes the public keys), keeps refresh sessions in Redis, mails
//! password-reset links and notifications, checks TOTP codes, signs users in through SSO providers and limits
//! attempts per account and address. The edges expose it as `/auth/*` and `/users/me/tfa/*`.
//!
//! Layout:
//! - [`config`]: settings from the environment.
//! - [`keys`]: the signing keys, rotation, `auth-service keygen`.
//! - [`passwords`]: the dummy hash and `/utils/hash/*`; hashing itself is
//!   [`access_token::passwords`] (bounded).
//! - [`sessions`]: refresh sessions in Redis (rotation, grace window, reuse detection).
//! - [`login`]: login, refresh, logout and the tokens of each mode.
//! - [`shares`]: signing in to a share, its refreshes and its public facts (docs/shares.md).
//! - [`reset`] and [`mail`]: password reset by mail (lettre over SMTP).
//! - [`notification_mail`]: mails new notifications (mentions) to their recipients.
//! - [`tfa`]: TOTP enrolment and checks.
//! - [`sso`]: OAuth 2.0 / OpenID Connect providers.
//! - [`limits`]: attempt limits per account, per address and per both, in Redis.
//! - [`grpc`]: the AuthService.
//!
//! [`run`] serves on a given listener until a shutdown future resolves, so tests can use port 0.

pub mod config;
pub mod grpc;
pub mod keys;
pub mod limits;
pub mod lockout;
pub mod login;
pub mod mail;
pub mod notification_mail;
pub mod passwords;
pub mod reset;
pub mod sessions;
pub mod shares;
pub mod sso;
pub mod tfa;

use cdapi_proto::v1::auth_service_server::AuthServiceServer;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// State shared by every request.
pub struct Auth {
    /// The settings.
    pub settings: config::Settings,
    /// The system tables.
    pub pool: sqlx::PgPool,
    /// The signing keys.
    pub keys: keys::Keys,
    /// Refresh sessions (and the Redis handle).
    pub sessions: sessions::SessionStore,
    /// Attempt limits.
    pub attempts: limits::Attempts,
    /// The mailer, when EMAIL_SMTP_HOST is set.
    pub mailer: Option<mail::Mailer>,
    /// SSO providers.
    pub providers: sso::Providers,
    /// Who is calling (the TOTP RPCs act for the signed-in user).
    pub authenticator: access_token::Authenticator,
    /// True while the readiness check finds the database away: the calls that need it are
    /// refused at once (503, `Retry-After`; see `grpc`).
    pub database_away: Arc<std::sync::atomic::AtomicBool>,
    dummy_hash: String,
}

pub use access_token::db_error;

/// Connects, migrates, loads the keys, then serves gRPC (auth, health, reflection) on `listener`
/// until `shutdown` resolves; in-flight calls finish first. Errors: start-up failures (database
/// unreachable, bad keys or settings).
pub async fn run(settings: config::Settings, listener: TcpListener, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
    // One TLS implementation (rustls with ring) for SMTP and the SSO providers' HTTPS.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Read INTERNAL_TOKEN now, so its state is logged at start (which callers' `x-client-ip`
    // is believed).
    let _ = access_token::ip::edge_trust();
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(settings.pool_max)
        .acquire_timeout(Duration::from_millis(settings.acquire_timeout_ms))
        .connect_with(
            <sqlx::postgres::PgConnectOptions as std::str::FromStr>::from_str(&settings.database_url)?.application_name("cdapi-auth").options([("jit", "off")]),
        )
        .await?;
    system_tables::migrate_or_wait(&settings.database_url).await?;
    let keys = keys::Keys::load(settings.keys_file.as_deref(), settings.signing_kid.as_deref())?;
    let redis = access_token::sessions::Redis::new(&settings.redis_url, &settings.redis_prefix)?;
    let redis_probe = redis.conn();
    let max_ttl = settings.refresh_ttl.max(settings.session_ttl);
    let auth = Arc::new(Auth {
        mailer: settings.mail.as_ref().map(|m| mail::Mailer::new(m, &settings.project_name)).transpose()?,
        providers: sso::Providers::new(settings.providers.clone())?,
        authenticator: access_token::Authenticator::new(
            pool.clone(),
            // No cache: the TOTP RPCs must see the user's current TOTP state.
            Duration::ZERO,
            access_token::KeySource::Local(keys.verifying().clone()),
            Some(redis.clone()),
        ),
        attempts: limits::Attempts::new(redis.clone(), settings.attempts),
        sessions: sessions::SessionStore::new(redis, settings.refresh_grace, max_ttl),
        database_away: Arc::default(),
        dummy_hash: passwords::dummy_hash(&settings.hasher).await?,
        keys,
        pool,
        settings,
    });

    notification_mail::spawn(auth.clone());
    let (health, health_service) = service_runtime::grpc::Health::new().await;
    health.reporter.set_serving::<AuthServiceServer<grpc::AuthApi>>().await;
    // Readiness follows this replica's database connection; Redis is reported but not required:
    // every replica shares it, and token checks go on without it (docs/operations.md "What failures
    // look like").
    let every = service_runtime::grpc::check_interval_from_env()?;
    health.watch("postgres", true, every, system_tables::readiness::postgres_flagging((*auth.pool.connect_options()).clone(), auth.database_away.clone()));
    health.watch("redis", false, every, move || {
        let mut conn = redis_probe.clone();
        async move { redis::cmd("PING").query_async::<String>(&mut conn).await.map(|_| ()).map_err(|e| e.to_string()) }
    });
    let shutdown = health.shutdown(shutdown)?;
    let pool = auth.pool.clone();
    service_runtime::metrics::global().observe_pool(auth.settings.pool_max, move || (pool.size(), pool.num_idle()));
    service_runtime::metrics::serve_from_env().await?;
    let reflection = tonic_reflection::server::Builder::configure().register_encoded_file_descriptor_set(cdapi_proto::FILE_DESCRIPTOR_SET).build_v1()?;
    tracing::info!(addr = %listener.local_addr()?, kid = %auth.keys.signing_kid(), "auth-service listening (gRPC)");
    tonic::transport::Server::builder()
        .layer(service_runtime::grpc::RpcLayer::default())
        .add_service(health_service)
        .add_service(reflection)
        .add_service(AuthServiceServer::with_interceptor(grpc::AuthApi::new(auth.clone()), access_token::ip::peer_as_client_ip))
        .serve_with_incoming_shutdown(tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)), shutdown)
        .await?;
    auth.pool.close().await;
    tracing::info!("auth-service stopped");
    Ok(())
}
