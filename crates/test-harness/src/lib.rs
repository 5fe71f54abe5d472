//! End-to-end test support: a fresh database (Pagila from `../shared/datasets`, or the project's
//! demo schema), the real `core-service`, `auth-service`, `edge-graphql` and `edge-rest` binaries started on
//! free ports against it (with Redis, and optionally a real SMTP server: aiosmtpd with the
//! handler in `smtp_sink.py`), and their addresses. [`app`] environments start once per test
//! binary and are shared by its tests; [`start`] makes one of a test's own (with its own
//! settings), stopped when dropped. Processes also stop when the test binary exits (their
//! stdin closes: SHUTDOWN_ON_STDIN_EOF=1).
//!
//! Configuration: CDAPI_REPO_ROOT (default: found above the working directory),
//! TEST_DATABASE_ADMIN_URL (default `postgres://postgres@127.0.0.1:5432/postgres`),
//! a superuser URL used with `psql` to create the databases; REDIS_URL (default
//! `redis://127.0.0.1:6379`; every environment uses its own key prefix); CDAPI_PYTHON (default
//! `python3`), a Python with aiosmtpd, for environments with mail. Binaries are taken from the
//! directory of the running test binary's profile (`<target>/debug/`), so build them first
//! (`deploy/local/test` does).

pub mod postgres;
mod processes;
mod s3;

use processes::{Launch, bin_dir, keys_file, spawn, spawn_smtp_sink, wait_healthy, wait_tcp};
use s3::spawn_s3;
pub use s3::{S3Server, s3_location_env, s3_server};

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

/// The static admin token every test environment's bootstrap admin gets.
pub const ADMIN_TOKEN: &str = "test-admin-token";

/// A running system: database plus core-service, auth-service and edge-rest.
pub struct TestApp {
    /// `http://127.0.0.1:<port>` of edge-rest (which also forwards `/graphql*`).
    pub rest_url: String,
    /// Every edge-rest's URL ([`Spec::edges`]); `rest_url` is the first.
    pub rest_urls: Vec<String>,
    /// `http://127.0.0.1:<port>` of edge-graphql.
    pub graphql_url: String,
    /// `http://127.0.0.1:<port>` of core-service's gRPC server.
    pub grpc_url: String,
    /// `http://127.0.0.1:<port>` of auth-service's gRPC server.
    pub auth_url: String,
    /// URL of the test database (for ground-truth SQL).
    pub database_url: String,
    /// The Redis server and this environment's key prefix.
    pub redis: (String, String),
    /// File receiving core-service's JSON logs (debug level for `sqlx::query`).
    pub core_log: PathBuf,
    /// Where the SMTP sink stores delivered mail (one JSON file per message), with mail on.
    pub mail_dir: Option<PathBuf>,
    /// Every core-service replica's gRPC URL ([`Spec::replicas`]); `grpc_url` is the first.
    pub core_urls: Vec<String>,
    /// Every auth-service replica's gRPC URL; `auth_url` is the first.
    pub auth_urls: Vec<String>,
    /// `/metrics` URLs by process (`core`, `auth`, `edge`, `graphql`), in replica order, with
    /// [`Spec::metrics`].
    pub metrics: Vec<(&'static str, String)>,
    /// `http://127.0.0.1:<port>` of the S3 server, with [`Spec::s3`] (it takes unsigned
    /// requests: tests read the bucket directly).
    pub s3_url: Option<String>,
    logs: PathBuf,
    children: Vec<(&'static str, Child)>,
    /// How each core and auth replica was started, for [`TestApp::roll`].
    launches: Vec<Launch>,
    /// The streaming replica of [`Spec::read_replica`] (see [`TestApp::read_replica`]).
    replica: Option<postgres::PrivatePostgres>,
    /// Last field: dropped (stopped) after the processes ([`Spec::own_postgres`]).
    postgres: Option<postgres::PrivatePostgres>,
}

/// What to start: the dataset, and settings beyond the defaults.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    /// The database.
    pub dataset: Dataset,
    /// Start an SMTP server and point auth-service at it.
    pub mail: bool,
    /// Extra environment of auth-service.
    pub auth_env: Vec<(String, String)>,
    /// Extra environment of edge-rest.
    pub edge_env: Vec<(String, String)>,
    /// Extra environment of edge-graphql.
    pub graphql_env: Vec<(String, String)>,
    /// Extra environment of core-service.
    pub core_env: Vec<(String, String)>,
    /// A name for the database and logs (default: the dataset's).
    pub name: Option<String>,
    /// The edge's port (default: a free one), for tests that must name it beforehand.
    pub rest_port: Option<u16>,
    /// Run a Redis of this environment's own (stoppable: [`TestApp::stop_redis`]).
    pub own_redis: bool,
    /// Replicas of core-service and of auth-service (0 = 1); the edges balance over them.
    pub replicas: usize,
    /// Serve `/metrics` from every process (METRICS_ADDR on free ports).
    pub metrics: bool,
    /// SQL files run on the database after the dataset, before the services start.
    pub sql: Vec<PathBuf>,
    /// Store files in an S3-compatible server of this environment's own (moto's server, from
    /// CDAPI_PYTHON; bucket [`S3_BUCKET`]) as location `s3`, instead of the local directory.
    pub s3: bool,
    /// edge-rest processes (0 = 1), each over every core replica; `rest_urls` lists them.
    pub edges: usize,
    /// A PostgreSQL server of this environment's own ([`postgres::PrivatePostgres`]), which
    /// [`TestApp::stop_postgres`] and [`TestApp::start_postgres`] stop and start.
    pub own_postgres: bool,
    /// Serve this existing database (a Directus peer's) instead of a new one: no dataset is
    /// loaded; Directus's system tables are imported into ours (`core-service
    /// import-directus`) before the services start.
    pub directus_database: Option<String>,
    /// With [`Spec::own_postgres`]: a streaming replica of it that applies each commit this
    /// many milliseconds late, made once the dataset is loaded and given to core-service as
    /// DATABASE_REPLICA_URLS.
    pub read_replica: Option<u64>,
}

/// The bucket of an environment with [`Spec::s3`], and of every [`S3Server`].
pub const S3_BUCKET: &str = "cdapi-test";

impl Drop for TestApp {
    /// Stops the processes (shared environments are never dropped; they stop with the binary).
    fn drop(&mut self) {
        for (_, child) in self.children.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Which database to serve.
#[derive(Clone, Copy, Debug, Default)]
pub enum Dataset {
    /// Pagila from `../shared/datasets/pagila`, with the `film.actors` alias configured for the
    /// `film_actor` junction.
    Pagila,
    /// The project's demo schema (`deploy/demo/demo.sql`).
    #[default]
    Demo,
    /// Another instance of the demo schema, for tests that write (so reads elsewhere never race
    /// with them).
    DemoWrites,
    /// The benchmark's blog data (`../shared/bench/blog.sql`) with the relations its reference
    /// peer had registered: `authors.articles` (O2M, the default name) and the M2M aliases
    /// `articles.tags` and `tags.articles` through `articles_tags`.
    Blog,
    /// No content tables: the system tables only (a target for schema snapshots).
    Empty,
}

static PAGILA: OnceLock<std::result::Result<TestApp, String>> = OnceLock::new();
static DEMO: OnceLock<std::result::Result<TestApp, String>> = OnceLock::new();
static DEMO_WRITES: OnceLock<std::result::Result<TestApp, String>> = OnceLock::new();
static BLOG: OnceLock<std::result::Result<TestApp, String>> = OnceLock::new();
static EMPTY: OnceLock<std::result::Result<TestApp, String>> = OnceLock::new();

/// The shared environment for `dataset`, started on first use. Panics (failing the test) with the
/// reason when it cannot start.
pub fn app(dataset: Dataset) -> &'static TestApp {
    let cell = match dataset {
        Dataset::Pagila => &PAGILA,
        Dataset::Demo => &DEMO,
        Dataset::DemoWrites => &DEMO_WRITES,
        Dataset::Blog => &BLOG,
        Dataset::Empty => &EMPTY,
    };
    match cell.get_or_init(|| start(Spec { dataset, ..Spec::default() }).map_err(|e| format!("{e:#}"))) {
        Ok(app) => app,
        Err(e) => panic!("test environment {dataset:?} failed to start: {e}"),
    }
}

/// The repository root: CDAPI_REPO_ROOT, else the nearest directory above the working
/// directory (cargo runs tests in their package's directory) holding `deploy/demo/demo.sql`.
/// Found at run time, not compiled in, so a binary built from another clone cannot point at it.
pub fn repo_root() -> PathBuf {
    if let Some(root) = std::env::var_os("CDAPI_REPO_ROOT") {
        return PathBuf::from(root);
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    cwd.ancestors().find(|d| d.join("deploy/demo/demo.sql").exists()).map(Path::to_path_buf).unwrap_or(cwd)
}

fn admin_url() -> String {
    std::env::var("TEST_DATABASE_ADMIN_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// `admin_url` with its database name replaced by `db`.
pub fn database_url(db: &str) -> String {
    database_url_on(&admin_url(), db)
}

/// `admin` (a server's URL) with its database name replaced by `db`.
fn database_url_on(admin: &str, db: &str) -> String {
    let admin = admin.to_owned();
    let (base, query) = match admin.split_once('?') {
        Some((b, q)) => (b.to_owned(), format!("?{q}")),
        None => (admin.clone(), String::new()),
    };
    let cut = base.rfind('/').filter(|&i| i > "postgres://".len()).unwrap_or(base.len());
    format!("{}/{db}{query}", &base[..cut])
}

/// Runs `psql` on `url` with `args` (stopping at the first error). Errors: psql missing or
/// failing (with its stderr).
pub fn psql(url: &str, args: &[&str]) -> Result<()> {
    let out = Command::new("psql")
        .arg(url)
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1"])
        .args(args)
        .stdout(Stdio::null())
        .output()
        .context("running psql (is the PostgreSQL client installed?)")?;
    if !out.status.success() {
        bail!("psql {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// Drops test databases left by earlier runs whose process is gone.
fn drop_stale_databases(admin: &str) {
    let Ok(out) = Command::new("psql").arg(admin).args(["-X", "-At", "-c", "SELECT datname FROM pg_database WHERE datname LIKE 'cdapi_test_%'"]).output()
    else {
        return;
    };
    for name in String::from_utf8_lossy(&out.stdout).lines() {
        let pid = name.rsplit('_').next().and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
            let _ = psql(admin, &["-c", &format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")]);
        }
    }
}

/// A TCP port nothing listens on now and that this test process has not handed out before.
///
/// The OS may give the same ephemeral port to two `bind(0)` calls once the first listener is
/// closed, so an environment whose services start later (the REST port is chosen before the core
/// replicas) could get one port twice; remembering every handed-out port rules that out within a
/// test binary (tests of one binary run as threads of one process).
pub fn free_port() -> Result<u16> {
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    for _ in 0..100 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut seen = HANDED_OUT.lock().map_err(|_| anyhow::anyhow!("port registry poisoned"))?;
        if !seen.contains(&port) {
            seen.push(port);
            return Ok(port);
        }
    }
    bail!("no fresh TCP port after 100 tries")
}

/// The Redis server tests use (REDIS_URL, default `redis://127.0.0.1:6379`).
pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// Starts an environment of `spec`: a fresh database, an SMTP sink when asked, and the three
/// services. Errors: any of them failing to start (with its log).
pub fn start(spec: Spec) -> Result<TestApp> {
    let label = spec.name.clone().unwrap_or_else(|| format!("{:?}", spec.dataset).to_lowercase());
    let postgres = if spec.own_postgres { Some(postgres::PrivatePostgres::start(&label)?) } else { None };
    let admin = postgres.as_ref().map(postgres::PrivatePostgres::admin_url).unwrap_or_else(admin_url);
    drop_stale_databases(&admin);
    let name = spec.directus_database.clone().unwrap_or_else(|| format!("cdapi_test_{label}_{}", std::process::id()));
    if spec.directus_database.is_none() {
        psql(&admin, &["-c", &format!("DROP DATABASE IF EXISTS \"{name}\""), "-c", &format!("CREATE DATABASE \"{name}\"")])?;
    }
    let db = database_url_on(&admin, &name);
    let root = repo_root();
    let bins = bin_dir()?;
    let migrate = Command::new(bins.join("core-service")).arg("migrate").env("DATABASE_URL", &db).output().context("running core-service migrate")?;
    if !migrate.status.success() {
        bail!("core-service migrate failed: {}", String::from_utf8_lossy(&migrate.stderr));
    }
    if spec.directus_database.is_some() {
        let import =
            Command::new(bins.join("core-service")).arg("import-directus").env("DATABASE_URL", &db).output().context("running core-service import-directus")?;
        if !import.status.success() {
            bail!("core-service import-directus failed: {}{}", String::from_utf8_lossy(&import.stdout), String::from_utf8_lossy(&import.stderr));
        }
    }
    match spec.dataset {
        _ if spec.directus_database.is_some() => {}
        Dataset::Pagila => {
            let dir = root.join("../shared/datasets/pagila");
            for f in ["pagila-schema.sql", "pagila-data.sql"] {
                psql(&db, &["-f", &dir.join(f).to_string_lossy()])?;
            }
            psql(
                &db,
                &[
                    "-c",
                    "INSERT INTO cdapi.relations (many_collection, many_field, one_collection, one_field, junction_field) \
                VALUES ('film_actor', 'film_id', 'film', 'actors', 'actor_id'), ('film_actor', 'actor_id', 'actor', 'films', 'film_id')",
                ],
            )?;
        }
        Dataset::Empty => {}
        Dataset::Demo | Dataset::DemoWrites => psql(&db, &["-f", &root.join("deploy/demo/demo.sql").to_string_lossy()])?,
        Dataset::Blog => {
            psql(&db, &["-f", &root.join("../shared/bench/blog.sql").to_string_lossy()])?;
            psql(
                &db,
                &[
                    "-c",
                    "INSERT INTO cdapi.relations (many_collection, many_field, one_collection, one_field, junction_field) \
                VALUES ('articles_tags', 'articles_id', 'articles', 'tags', 'tags_id'), ('articles_tags', 'tags_id', 'tags', 'articles', 'articles_id')",
                ],
            )?;
        }
    }
    for file in &spec.sql {
        psql(&db, &["-f", &file.to_string_lossy()])?;
    }
    let replica = match (spec.read_replica, &postgres) {
        (Some(delay), Some(primary)) => Some(primary.replica(&label, delay)?),
        (Some(_), None) => bail!("Spec::read_replica needs Spec::own_postgres"),
        (None, _) => None,
    };
    let logs = std::env::temp_dir().join(&name);
    std::fs::create_dir_all(&logs)?;
    let mut children: Vec<(&'static str, Child)> = Vec::new();
    let mut launches: Vec<Launch> = Vec::new();
    let redis = if spec.own_redis {
        let port = free_port()?;
        let log = logs.join("redis.log");
        let mut child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log)?)
            .stderr(Stdio::null())
            .spawn()
            .context("starting redis-server")?;
        wait_tcp(port, &mut child, &log)?;
        children.push(("redis", child));
        (format!("redis://127.0.0.1:{port}"), format!("{name}:"))
    } else {
        (redis_url(), format!("{name}:"))
    };
    let rest_port = match spec.rest_port {
        Some(p) => p,
        None => free_port()?,
    };
    let rest_url = format!("http://127.0.0.1:{rest_port}");

    // The edges authenticate to the services with it (they believe x-client-ip only then).
    let internal_token = format!("internal-{name}-{}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    let internal = ("INTERNAL_TOKEN".to_owned(), internal_token);
    let mut auth_env: Vec<(String, String)> = vec![
        internal.clone(),
        ("DATABASE_URL".into(), db.clone()),
        ("REDIS_URL".into(), redis.0.clone()),
        ("REDIS_KEY_PREFIX".into(), redis.1.clone()),
        ("AUTH_KEYS_FILE".into(), keys_file(&bins, &logs)?.to_string_lossy().into_owned()),
        ("LOG_FORMAT".into(), "json".into()),
        ("PUBLIC_URL".into(), rest_url.clone()),
    ];
    let mail_dir = if spec.mail {
        let dir = logs.join("mail");
        let port = free_port()?;
        let sink = spawn_smtp_sink(&root, &dir, port, &logs.join("smtp.log"))?;
        children.push(("smtp", sink));
        auth_env.push(("EMAIL_SMTP_HOST".into(), "127.0.0.1".into()));
        auth_env.push(("EMAIL_SMTP_PORT".into(), port.to_string()));
        auth_env.push(("EMAIL_SMTP_TLS".into(), "none".into()));
        auth_env.push(("EMAIL_FROM".into(), "cdapi@example.com".into()));
        Some(dir)
    } else {
        None
    };
    let replicas = spec.replicas.max(1);
    let mut metrics: Vec<(&'static str, String)> = Vec::new();
    let mut metrics_env = |name: &'static str, env: &mut Vec<(String, String)>| -> Result<()> {
        if spec.metrics {
            let port = free_port()?;
            env.push(("METRICS_ADDR".into(), format!("127.0.0.1:{port}")));
            metrics.push((name, format!("http://127.0.0.1:{port}/metrics")));
        }
        Ok(())
    };
    auth_env.extend(spec.auth_env.iter().cloned());
    let mut auth_urls = Vec::new();
    for i in 0..replicas {
        let auth_port = free_port()?;
        let mut env = auth_env.clone();
        env.push(("AUTH_GRPC_ADDR".into(), format!("127.0.0.1:{auth_port}")));
        metrics_env("auth", &mut env)?;
        let log = logs.join(if i == 0 { "auth-service.log".to_owned() } else { format!("auth-service.{i}.log") });
        let mut auth = spawn(&bins.join("auth-service"), &env, &log)?;
        wait_tcp(auth_port, &mut auth, &log)?;
        children.push(("auth", auth));
        launches.push(Launch { name: "auth", bin: bins.join("auth-service"), env, log, port: auth_port });
        auth_urls.push(format!("http://127.0.0.1:{auth_port}"));
    }
    let auth_url = auth_urls[0].clone();

    let core_log = logs.join("core-service.log");
    let core_env: Vec<(String, String)> = vec![
        internal.clone(),
        ("DATABASE_URL".into(), db.clone()),
        ("AUTH_GRPC_URL".into(), auth_url.clone()),
        ("REDIS_URL".into(), redis.0.clone()),
        ("REDIS_KEY_PREFIX".into(), redis.1.clone()),
        ("ADMIN_EMAIL".into(), "admin@example.com".into()),
        ("ADMIN_PASSWORD".into(), "test-password".into()),
        ("ADMIN_TOKEN".into(), ADMIN_TOKEN.into()),
        ("LOG_FORMAT".into(), "json".into()),
        ("RUST_LOG".into(), "info,sqlx::query=debug".into()),
        // Every replica of this environment shares one storage location, beside its logs.
        ("STORAGE_LOCAL_ROOT".into(), logs.join("uploads").to_string_lossy().into_owned()),
    ];
    let mut core_env = core_env;
    if let Some(r) = &replica {
        core_env.push(("DATABASE_REPLICA_URLS".into(), r.url(&name)));
    }
    let s3_url = if spec.s3 {
        let port = free_port()?;
        let server = spawn_s3(port, &logs.join("s3.log"))?;
        children.push(("s3", server));
        let url = format!("http://127.0.0.1:{port}");
        core_env.push(("STORAGE_LOCATIONS".into(), "s3".into()));
        core_env.extend(s3_location_env("S3", &url));
        Some(url)
    } else {
        None
    };
    let mut core_urls = Vec::new();
    for i in 0..replicas {
        let core_port = free_port()?;
        let mut env = core_env.clone();
        env.push(("CORE_GRPC_ADDR".into(), format!("127.0.0.1:{core_port}")));
        env.extend(spec.core_env.iter().cloned());
        metrics_env("core", &mut env)?;
        let log = if i == 0 { core_log.clone() } else { logs.join(format!("core-service.{i}.log")) };
        children.push(("core", spawn(&bins.join("core-service"), &env, &log)?));
        launches.push(Launch { name: "core", bin: bins.join("core-service"), env, log, port: core_port });
        core_urls.push(format!("http://127.0.0.1:{core_port}"));
    }
    let (core_list, auth_list) = (core_urls.join(","), auth_urls.join(","));
    let graphql_port = free_port()?;
    let graphql_url = format!("http://127.0.0.1:{graphql_port}");
    let graphql_log = logs.join("edge-graphql.log");
    let mut graphql_env: Vec<(String, String)> = vec![
        internal.clone(),
        ("GRAPHQL_HOST".into(), "127.0.0.1".into()),
        ("GRAPHQL_PORT".into(), graphql_port.to_string()),
        ("CORE_GRPC_URL".into(), core_list.clone()),
        ("AUTH_GRPC_URL".into(), auth_list.clone()),
        ("IP_TRUSTED_PROXIES".into(), "127.0.0.1".into()),
    ];
    graphql_env.extend(spec.graphql_env.iter().cloned());
    metrics_env("graphql", &mut graphql_env)?;
    let mut graphql = spawn(&bins.join("edge-graphql"), &graphql_env, &graphql_log)?;
    let graphql_ready = wait_healthy(&graphql_url, &mut graphql, &graphql_log);
    children.push(("graphql", graphql));
    graphql_ready?;
    let rest_log = logs.join("edge-rest.log");
    let mut edge_env: Vec<(String, String)> = vec![
        internal,
        ("REST_HOST".into(), "127.0.0.1".into()),
        ("REST_PORT".into(), rest_port.to_string()),
        ("CORE_GRPC_URL".into(), core_list),
        ("AUTH_GRPC_URL".into(), auth_list),
        ("GRAPHQL_URL".into(), graphql_url.clone()),
        // Used with EDGE_CACHE_ENABLED only.
        ("REDIS_URL".into(), redis.0.clone()),
        ("REDIS_KEY_PREFIX".into(), redis.1.clone()),
    ];
    edge_env.extend(spec.edge_env.iter().cloned());
    metrics_env("edge", &mut edge_env)?;
    let mut rest = spawn(&bins.join("edge-rest"), &edge_env, &rest_log)?;
    let mut ready = wait_healthy(&rest_url, &mut rest, &rest_log);
    children.push(("edge", rest));
    launches.push(Launch { name: "edge", bin: bins.join("edge-rest"), env: edge_env.clone(), log: rest_log, port: rest_port });
    let mut rest_urls = vec![rest_url.clone()];
    for i in 1..spec.edges.max(1) {
        if ready.is_err() {
            break;
        }
        let port = free_port()?;
        let url = format!("http://127.0.0.1:{port}");
        let log = logs.join(format!("edge-rest.{i}.log"));
        let mut env = edge_env.clone();
        env.push(("REST_PORT".into(), port.to_string()));
        if let Some((_, addr)) = env.iter_mut().find(|(k, _)| k == "METRICS_ADDR") {
            *addr = format!("127.0.0.1:{}", free_port()?);
            metrics.push(("edge", format!("http://{addr}/metrics")));
        }
        let mut edge = spawn(&bins.join("edge-rest"), &env, &log)?;
        ready = wait_healthy(&url, &mut edge, &log);
        children.push(("edge", edge));
        launches.push(Launch { name: "edge", bin: bins.join("edge-rest"), env, log, port });
        rest_urls.push(url);
    }
    let app = TestApp {
        rest_url,
        rest_urls,
        graphql_url,
        grpc_url: core_urls[0].clone(),
        auth_url,
        core_urls,
        auth_urls,
        metrics,
        s3_url,
        database_url: db,
        redis,
        core_log,
        mail_dir,
        logs,
        children,
        launches,
        replica,
        postgres,
    };
    if let Err(e) = ready {
        let core_out = std::fs::read_to_string(&app.core_log).unwrap_or_default();
        bail!("{e:#}\ncore-service log:\n{core_out}");
    }
    Ok(app)
}

impl TestApp {
    /// The log file of process `name` (replica 0), e.g. `auth-service.log`.
    pub fn log_file(&self, file: &str) -> PathBuf {
        self.logs.join(file)
    }

    /// The directory of this environment's `local` storage location (STORAGE_LOCAL_ROOT).
    pub fn storage_dir(&self) -> PathBuf {
        self.logs.join("uploads")
    }

    /// The auth-service's keys file (PEM), for tests that rotate keys.
    pub fn keys_file(&self) -> PathBuf {
        self.logs.join("auth-keys.pem")
    }
}

/// The path of one of our binaries (`core-service`, ...), as the tests start them.
/// Errors: no build directory found.
pub fn binary(name: &str) -> Result<PathBuf> {
    Ok(processes::bin_dir()?.join(name))
}
