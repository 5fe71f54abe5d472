//! core-service: owns items. It introspects the served PostgreSQL database into a schema
//! snapshot, turns typed gRPC queries into one SQL statement each, and checks who is calling.
//!
//! Layout:
//! - [`config`]: settings from the environment.
//! - [`db`]: pool, system-table migrations, database error mapping.
//! - [`sql`]: statement text, identifiers (quoted only here) and bound parameters.
//! - [`schema`]: the snapshot (collections, fields, relations) and its introspection.
//! - [`query`]: the query engine (fields, filter, search, sort, pagination, meta → SQL).
//! - [`write`]: creates, updates and deletes, one transaction per request (user accounts and
//!   comments included).
//! - [`versions`]: content versions (deltas, compare, promote, reads in a version).
//! - [`activity`]: who changed what (activity and revisions).
//! - [`asset_settings`]: what the project's settings allow of asset transformations.
//! - [`schema_admin`]: schema management (collections, fields, relations as DDL + metadata).
//! - [`validation_rule`]: a permission's validation rule, compiled once with the rows.
//! - [`replicas`]: read replicas, routing reads with read-your-writes (consistency tokens).
//! - [`policies`]: the permission data (rules, grants, a caller's access), carried by the snapshot.
//! - [`permissions`]: enforcing them: read views of the snapshot; payload validation.
//! - [`auth`]: who is calling ([`auth::Caller`]) and the bootstrap admin.
//! - [`grpc`]: ItemsService and SchemaService.
//!
//! [`run`] serves on a given listener until a shutdown future resolves, so tests can use port 0.

pub mod activity;
pub mod asset_settings;
pub mod auth;
pub mod cache;
pub mod config;
pub mod db;
pub mod directus_import;
pub mod events;
pub mod files;
pub mod grpc;
pub mod permissions;
pub mod policies;
pub mod query;
pub mod realtime;
pub mod replicas;
pub mod schema;
pub mod schema_admin;
pub mod sql;
pub mod validation_rule;
pub mod versions;
pub mod write;

use access_token::ip::peer_as_client_ip;
use arc_swap::ArcSwap;
use cdapi_proto::ApiError;
use cdapi_proto::v1::files_service_server::FilesServiceServer;
use cdapi_proto::v1::items_service_server::ItemsServiceServer;
use cdapi_proto::v1::schema_service_server::SchemaServiceServer;
use cdapi_proto::v1::versions_service_server::VersionsServiceServer;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;

/// State shared by every request.
pub struct AppState {
    /// The database pool (the primary).
    pub pool: sqlx::PgPool,
    /// The read replicas (none unless DATABASE_REPLICA_URLS is set) and where reads go.
    pub replicas: Arc<replicas::Replicas>,
    /// The current schema snapshot; read lock-free, swapped on reload.
    pub schema: ArcSwap<schema::Schema>,
    /// Token checks.
    pub auth: auth::Authenticator,
    /// Read views of the snapshot per role (permissions).
    pub views: permissions::Views,
    /// `limit` rules.
    pub limits: query::Limits,
    /// Write transactions' idle timeout and write keys' lifetime.
    pub writes: write::keys::WriteSettings,
    /// The places of long streams (lists, exports) on this replica.
    pub streams: Arc<grpc::stream_budget::StreamBudget>,
    /// What user writes need: session store, password policy and hasher (`own` is filled per
    /// caller).
    pub accounts: write::users::Accounts,
    /// Where files' blobs are kept.
    pub files: files::Storage,
    /// This replica's realtime subscriptions.
    pub realtime: Arc<realtime::hub::Hub>,
    /// The result cache shared by every replica (disabled unless CACHE_ENABLED).
    pub cache: Arc<cache::ResultCache>,
    /// The version of the newest snapshot, announced to `WatchSchema` streams.
    pub schema_changed: tokio::sync::watch::Sender<u64>,
    /// Turns true when the server starts shutting down, so open streams end and the drain can
    /// finish.
    pub stopping: tokio::sync::watch::Sender<bool>,
    /// True while the readiness check finds the database away: calls then fail at once with
    /// 503 instead of each waiting DB_ACQUIRE_TIMEOUT_MS for a connection (docs/operations.md "What failures look like").
    pub database_away: Arc<std::sync::atomic::AtomicBool>,
    db_schema: String,
    version: AtomicU64,
}

impl AppState {
    /// Who is calling, from the request's metadata, with what they may read: the snapshot, the
    /// caller's view of it, their access and dynamic variables. Errors: as
    /// [`auth::Authenticator::authenticate`].
    pub async fn caller(&self, md: &tonic::metadata::MetadataMap) -> Result<auth::Caller, ApiError> {
        if self.database_away.load(Ordering::Relaxed) {
            return Err(access_token::authenticate::database_away());
        }
        let who = self.auth.authenticate(md).await?;
        let schema = self.schema.load_full();
        // Admin access and grants come from the policies of this snapshot that admit the
        // client's address (a revoked policy stops applying on the next rebuild).
        let ip = access_token::ip::client_ip(md);
        let roles = schema.permissions.role_chain(who.role.as_deref());
        let policies = schema.permissions.admitted(who.user.as_deref(), &roles, ip);
        // A share session reads what its share reaches and writes what the public may.
        let access = match &who.share {
            Some(session) => permissions::share::access(&schema, session, ip, &self.views),
            None => schema.permissions.access(&policies, who.user.is_some()),
        };
        let read = self.views.read_view(&schema, &access);
        let accounts = write::users::Accounts { own: who.user.clone().zip(who.family.clone()), ..self.accounts.clone() };
        let vars = query::Variables { user: who.user, role: who.role, roles, policies };
        let client = activity::Client::from_metadata(md);
        // Read only where it routes reads: without replicas a token means nothing.
        let consistency = if self.replicas.enabled() { replicas::token::from_metadata(md)? } else { None };
        let skip_cache = self.cache.settings().skip_allowed && cache::asks_to_skip(md);
        let edge_reuse = md.contains_key(cdapi_proto::edge_feed::ASK_METADATA) && !who.session && who.share.is_none();
        Ok(auth::Caller { schema, read, access, vars, accounts, expires_at: who.expires_at, client, consistency, skip_cache, edge_reuse })
    }

    /// A snapshot introspected now, not swapped in (schema changes validate against it, so a
    /// change made through another replica a moment ago is seen). Errors: database errors.
    pub async fn fresh_schema(&self) -> Result<Arc<schema::Schema>, ApiError> {
        let mut conn = self.pool.acquire().await.map_err(db::map_error)?;
        self.schema_seen_by(&mut conn).await
    }

    /// A snapshot introspected now on `conn` (inside a transaction: with its uncommitted
    /// changes), not swapped in. Errors: database errors.
    pub async fn schema_seen_by(&self, conn: &mut sqlx::PgConnection) -> Result<Arc<schema::Schema>, ApiError> {
        let version = self.version.load(Ordering::SeqCst);
        let snapshot = schema::introspect::introspect(conn, &self.db_schema, version).await.map_err(db::map_error)?;
        Ok(Arc::new(snapshot))
    }

    /// Re-introspects the database and swaps the snapshot in. Errors: database errors.
    pub async fn reload_schema(&self) -> Result<Arc<schema::Schema>, ApiError> {
        let version = self.version.fetch_add(1, Ordering::SeqCst) + 1;
        let snapshot = {
            // Given back before the triggers below take a connection of their own.
            let mut conn = self.pool.acquire().await.map_err(db::map_error)?;
            schema::introspect::introspect(&mut conn, &self.db_schema, version).await.map_err(db::map_error)?
        };
        let snapshot = Arc::new(snapshot);
        // Before the swap: no read planned on this snapshot goes to a replica lacking its tables.
        self.replicas.schema_read().await;
        self.schema.store(snapshot.clone());
        if self.realtime.settings().enabled || self.cache.enabled() {
            let announced = realtime::triggers::install(&self.pool, &snapshot).await;
            // The result cache keeps user collections only: a system collection's reads may
            // depend on system tables whose writes are not announced.
            self.cache.set_announced(announced.into_iter().filter(|c| snapshot.collections.get(c).is_some_and(|c| !c.system)).collect());
        }
        self.schema_changed.send_replace(version);
        tracing::info!(version, collections = snapshot.collections.len(), "schema snapshot loaded");
        Ok(snapshot)
    }
}

/// The SQL (parameters inlined) of a read of `collection` with the Directus query object
/// `query_json`, by `key` when given, planned as `ItemsService.Read` plans it
/// ([`query::read::ReadShape`]). Errors: database unreachable, unknown collection, invalid
/// query, a content version (read in a transaction, not one statement).
pub async fn plan_sql(settings: &config::Settings, collection: &str, query_json: &str, key: Option<&str>) -> anyhow::Result<String> {
    let pool = db::connect(&settings.database_url, 1, 0, settings.acquire_timeout_ms).await?;
    let schema = schema::introspect::introspect(&mut *pool.acquire().await?, &settings.database_schema, 1).await?;
    let c = schema.collection(collection).ok_or_else(|| anyhow::anyhow!("no collection {collection:?}"))?;
    let obj: serde_json::Map<String, serde_json::Value> = serde_json::from_str(query_json)?;
    let q = query_language::query_json::query_from_json(&obj).map_err(|e| anyhow::anyhow!("{}", e.message))?;
    let vars = query::Variables::default();
    let planner = query::Planner::new(&schema, settings.limits, &vars);
    let shape = query::read::ReadShape::of(c, key, &q);
    let st = planner.read(c, shape, &q).map_err(|e| anyhow::anyhow!("{}", e.message))?;
    Ok(st.sql.inline())
}

/// Connects, migrates, bootstraps the admin, loads the schema, then serves gRPC (items, schema,
/// health, reflection) on `listener` until `shutdown` resolves; in-flight calls finish first.
/// Errors: start-up failures (database unreachable, migration failed).
pub async fn run(settings: config::Settings, listener: TcpListener, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
    // Read INTERNAL_TOKEN now, so its state is logged at start (which callers' `x-client-ip` is
    // believed: docs/security.md "Client addresses and what the ports trust").
    let _ = access_token::ip::edge_trust();
    let pool = db::connect(&settings.database_url, settings.pool_max, settings.statement_timeout_ms, settings.acquire_timeout_ms).await?;
    system_tables::migrate_or_wait(&settings.database_url).await?;
    auth::bootstrap_admin(&pool, &settings.admin_email, settings.admin_password.as_deref(), settings.admin_token.as_deref()).await?;
    let keys = match &settings.auth_url {
        Some(url) => access_token::KeySource::Remote(access_token::keys::RemoteKeys::new(
            tonic::transport::Endpoint::from_shared(url.clone())?
                .tcp_nodelay(true)
                .connect_timeout(Duration::from_secs(2))
                .timeout(Duration::from_secs(5))
                .connect_lazy(),
        )),
        None => access_token::KeySource::None,
    };
    let redis = match &settings.redis_url {
        Some(url) => Some(access_token::sessions::Redis::new(url, &settings.redis_prefix)?),
        None => None,
    };
    let cache = Arc::new(cache::ResultCache::new(settings.cache, redis.as_ref())?);
    let replicas = Arc::new(replicas::Replicas::new(pool.clone(), settings.replicas.clone(), settings.statement_timeout_ms, settings.acquire_timeout_ms)?);
    let state = Arc::new(AppState {
        replicas: replicas.clone(),
        auth: auth::Authenticator::new(pool.clone(), Duration::from_secs(settings.token_cache_ttl_secs), keys, redis.clone()),
        accounts: write::users::Accounts { redis, own: None, policy: settings.password_policy, hasher: settings.password_hasher.clone(), dry_run: false },
        pool,
        views: permissions::Views::default(),
        schema: ArcSwap::from_pointee(schema::Schema::default()),
        limits: settings.limits,
        writes: settings.writes,
        streams: grpc::stream_budget::StreamBudget::new(settings.streams),
        schema_changed: tokio::sync::watch::Sender::new(0),
        stopping: tokio::sync::watch::Sender::new(false),
        database_away: Arc::default(),
        db_schema: settings.database_schema.clone(),
        files: files::Storage::open(&settings.files)?,
        realtime: Arc::new(realtime::hub::Hub::new(settings.realtime)),
        cache: cache.clone(),
        version: AtomicU64::new(0),
    });
    state.files.sweep(&state.pool).await;
    if replicas.enabled() {
        tracing::info!(replicas = ?replicas.members().iter().map(|r| r.label.as_str()).collect::<Vec<_>>(), "reads may go to read replicas");
        tokio::spawn(replicas::tracker::run(replicas.clone()));
    }
    state.reload_schema().await.map_err(|e| anyhow::anyhow!("loading the schema failed: {e}"))?;
    tokio::spawn(events::listen(state.clone()));
    tokio::spawn(write::keys::prune(state.pool.clone(), settings.writes.key_ttl_secs));
    tokio::spawn(activity::retention::prune(state.pool.clone(), settings.retention));

    let (health, health_service) = service_runtime::grpc::Health::new().await;
    health.reporter.set_serving::<ItemsServiceServer<grpc::items::Items>>().await;
    health.reporter.set_serving::<SchemaServiceServer<grpc::schema::SchemaApi>>().await;
    health.reporter.set_serving::<VersionsServiceServer<grpc::versions::VersionsApi>>().await;
    health.reporter.set_serving::<FilesServiceServer<grpc::files::FilesApi>>().await;
    // Readiness follows this replica's database connection (docs/operations.md "What failures look like").
    let check = system_tables::readiness::postgres_flagging((*state.pool.connect_options()).clone(), state.database_away.clone());
    health.watch("postgres", true, service_runtime::grpc::check_interval_from_env()?, check);
    let shutdown = health.shutdown(shutdown)?;
    let pool = state.pool.clone();
    service_runtime::metrics::global().observe_pool(settings.pool_max, move || (pool.size(), pool.num_idle()));
    service_runtime::metrics::serve_from_env().await?;
    let reflection = tonic_reflection::server::Builder::configure().register_encoded_file_descriptor_set(cdapi_proto::FILE_DESCRIPTOR_SET).build_v1()?;

    tracing::info!(addr = %listener.local_addr()?, "core-service listening (gRPC)");
    tonic::transport::Server::builder()
        .layer(service_runtime::grpc::RpcLayer::with_answer_hook(replicas::token::answer_hook(replicas, cache, state.pool.clone())))
        .add_service(health_service)
        .add_service(reflection)
        .add_service(ItemsServiceServer::with_interceptor(grpc::items::Items::new(state.clone()), peer_as_client_ip))
        .add_service(SchemaServiceServer::with_interceptor(grpc::schema::SchemaApi::new(state.clone()), peer_as_client_ip))
        .add_service(VersionsServiceServer::with_interceptor(grpc::versions::VersionsApi::new(state.clone()), peer_as_client_ip))
        .add_service(FilesServiceServer::with_interceptor(grpc::files::FilesApi::new(state.clone()), peer_as_client_ip))
        .serve_with_incoming_shutdown(
            // TCP_NODELAY: without it small replies wait ~40 ms for delayed ACKs (Nagle).
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            {
                let state = state.clone();
                async move {
                    shutdown.await;
                    state.stopping.send_replace(true);
                }
            },
        )
        .await?;
    state.pool.close().await;
    tracing::info!("core-service stopped");
    Ok(())
}
