//! End-to-end test support: a fresh database (Pagila from `../shared/datasets`, or the project's
//! demo schema), the real `core-service` and `edge-rest` binaries started on free ports against
//! it, and their addresses. Each environment starts once per test binary and is shared by its
//! tests; the processes stop when the test binary exits (their stdin closes:
//! SHUTDOWN_ON_STDIN_EOF=1).
//!
//! Configuration: CDAPI_REPO_ROOT (default: found above the working directory),
//! TEST_DATABASE_ADMIN_URL (default `postgres://postgres@127.0.0.1:5432/postgres`),
//! a superuser URL used with `psql` to create the databases. Binaries are taken from the
//! directory of the running test binary's profile (`<target>/debug/`), so build them first
//! (`deploy/local/test` does).

use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The static admin token every test environment's bootstrap admin gets.
pub const ADMIN_TOKEN: &str = "test-admin-token";

/// A running system: database plus core-service and edge-rest.
pub struct TestApp {
    /// `http://127.0.0.1:<port>` of edge-rest.
    pub rest_url: String,
    /// `http://127.0.0.1:<port>` of core-service's gRPC server.
    pub grpc_url: String,
    /// URL of the test database (for ground-truth SQL).
    pub database_url: String,
    /// File receiving core-service's JSON logs (debug level for `sqlx::query`).
    pub core_log: PathBuf,
    _children: Vec<Child>,
}

/// Which database to serve.
#[derive(Clone, Copy, Debug)]
pub enum Dataset {
    /// Pagila from `../shared/datasets/pagila`, with the `film.actors` alias configured for the
    /// `film_actor` junction.
    Pagila,
    /// The project's demo schema (`deploy/demo/demo.sql`).
    Demo,
    /// Another instance of the demo schema, for tests that write (so reads elsewhere never race
    /// with them).
    DemoWrites,
}

static PAGILA: OnceLock<std::result::Result<TestApp, String>> = OnceLock::new();
static DEMO: OnceLock<std::result::Result<TestApp, String>> = OnceLock::new();
static DEMO_WRITES: OnceLock<std::result::Result<TestApp, String>> = OnceLock::new();

/// The shared environment for `dataset`, started on first use. Panics (failing the test) with the
/// reason when it cannot start.
pub fn app(dataset: Dataset) -> &'static TestApp {
    let cell = match dataset {
        Dataset::Pagila => &PAGILA,
        Dataset::Demo => &DEMO,
        Dataset::DemoWrites => &DEMO_WRITES,
    };
    match cell.get_or_init(|| start(dataset).map_err(|e| format!("{e:#}"))) {
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
    cwd.ancestors()
        .find(|d| d.join("deploy/demo/demo.sql").exists())
        .map(Path::to_path_buf)
        .unwrap_or(cwd)
}

fn admin_url() -> String {
    std::env::var("TEST_DATABASE_ADMIN_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// `admin_url` with its database name replaced by `db`.
pub fn database_url(db: &str) -> String {
    let admin = admin_url();
    let (base, query) = match admin.split_once('?') {
        Some((b, q)) => (b.to_owned(), format!("?{q}")),
        None => (admin.clone(), String::new()),
    };
    let cut = base.rfind('/').filter(|&i| i > "postgres://".len()).unwrap_or(base.len());
    format!("{}/{db}{query}", &base[..cut])
}

fn psql(url: &str, args: &[&str]) -> Result<()> {
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
    let Ok(out) = Command::new("psql")
        .arg(admin)
        .args(["-X", "-At", "-c", "SELECT datname FROM pg_database WHERE datname LIKE 'cdapi_test_%'"])
        .output()
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

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn bin_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    // <target>/<profile>/deps/<test-binary>
    let dir = exe.parent().and_then(Path::parent).context("test binary has no profile dir")?;
    Ok(dir.to_path_buf())
}

fn spawn(bin: &Path, envs: &[(&str, String)], log: &Path) -> Result<Child> {
    if !bin.exists() {
        bail!("{} not found: build the binaries first (cargo build --workspace --bins)", bin.display());
    }
    let file = std::fs::File::create(log)?;
    let mut cmd = Command::new(bin);
    cmd.stdin(Stdio::piped()).stdout(file.try_clone()?).stderr(file).env("SHUTDOWN_ON_STDIN_EOF", "1");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    Ok(cmd.spawn()?)
}

fn wait_healthy(url: &str, child: &mut Child, log: &Path) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let addr = url.trim_start_matches("http://").to_owned();
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            bail!("process exited with {status}; log:\n{}", std::fs::read_to_string(log).unwrap_or_default());
        }
        if let Ok(mut s) = std::net::TcpStream::connect(&addr) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = write!(s, "GET /server/health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
            let mut buf = String::new();
            let _ = std::io::Read::read_to_string(&mut s, &mut buf);
            if buf.starts_with("HTTP/1.1 200") {
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("{url} did not become healthy in time; log:\n{}", std::fs::read_to_string(log).unwrap_or_default())
}

fn start(dataset: Dataset) -> Result<TestApp> {
    let admin = admin_url();
    drop_stale_databases(&admin);
    let name = format!("cdapi_test_{}_{}", format!("{dataset:?}").to_lowercase(), std::process::id());
    psql(&admin, &["-c", &format!("DROP DATABASE IF EXISTS \"{name}\""), "-c", &format!("CREATE DATABASE \"{name}\"")])?;
    let db = database_url(&name);
    let root = repo_root();
    let bins = bin_dir()?;
    let migrate = Command::new(bins.join("core-service"))
        .arg("migrate")
        .env("DATABASE_URL", &db)
        .output()
        .context("running core-service migrate")?;
    if !migrate.status.success() {
        bail!("core-service migrate failed: {}", String::from_utf8_lossy(&migrate.stderr));
    }
    match dataset {
        Dataset::Pagila => {
            let dir = root.join("../shared/datasets/pagila");
            for f in ["pagila-schema.sql", "pagila-data.sql"] {
                psql(&db, &["-f", &dir.join(f).to_string_lossy()])?;
            }
            psql(&db, &["-c", "INSERT INTO cdapi.relations (many_collection, many_field, one_collection, one_field, junction_field) \
                VALUES ('film_actor', 'film_id', 'film', 'actors', 'actor_id'), ('film_actor', 'actor_id', 'actor', 'films', 'film_id')"])?;
        }
        Dataset::Demo | Dataset::DemoWrites => psql(&db, &["-f", &root.join("deploy/demo/demo.sql").to_string_lossy()])?,
    }
    let logs = std::env::temp_dir().join(&name);
    std::fs::create_dir_all(&logs)?;
    let core_port = free_port()?;
    let rest_port = free_port()?;
    let core_log = logs.join("core-service.log");
    let core = spawn(
        &bins.join("core-service"),
        &[
            ("DATABASE_URL", db.clone()),
            ("CORE_GRPC_ADDR", format!("127.0.0.1:{core_port}")),
            ("ADMIN_EMAIL", "admin@example.com".into()),
            ("ADMIN_PASSWORD", "test-password".into()),
            ("ADMIN_TOKEN", ADMIN_TOKEN.into()),
            ("LOG_FORMAT", "json".into()),
            ("RUST_LOG", "info,sqlx::query=debug".into()),
        ],
        &core_log,
    )?;
    let rest_log = logs.join("edge-rest.log");
    let mut rest = spawn(
        &bins.join("edge-rest"),
        &[
            ("REST_HOST", "127.0.0.1".into()),
            ("REST_PORT", rest_port.to_string()),
            ("CORE_GRPC_URL", format!("http://127.0.0.1:{core_port}")),
        ],
        &rest_log,
    )?;
    let rest_url = format!("http://127.0.0.1:{rest_port}");
    let mut children = vec![core];
    let ready = wait_healthy(&rest_url, &mut rest, &rest_log);
    children.push(rest);
    if let Err(e) = ready {
        let core_out = std::fs::read_to_string(&core_log).unwrap_or_default();
        bail!("{e:#}\ncore-service log:\n{core_out}");
    }
    Ok(TestApp { rest_url, grpc_url: format!("http://127.0.0.1:{core_port}"), database_url: db, core_log, _children: children })
}
