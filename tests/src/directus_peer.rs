//! The real Directus 11.3.5 as a test peer (docs/directus-compatibility.md "The differential suite"): found installed
//! outside the clone (`deploy/local/lib.sh` `ensure_directus_peer` installs it), bootstrapped
//! on a database of its own loaded with the same SQL as ours, started on a free port, stopped
//! when dropped.
//!
//! Configuration: CDAPI_DIRECTUS_DIR (default `~/.cache/cdapi/directus-11.3.5`), the npm
//! project holding `node_modules/directus`; CDAPI_DIRECTUS_UNAVAILABLE, a reason the installer
//! gave for not installing it (shown when the peer is missing).

use crate::free_port;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use test_harness::database_url;

/// The version the suite is written against (the reference peer is `directus@11.3.5`).
pub const VERSION: &str = "11.3.5";
/// The peer's bootstrap admin (its ADMIN_EMAIL / ADMIN_PASSWORD / ADMIN_TOKEN).
pub const ADMIN_EMAIL: &str = "admin@example.com";
/// See [`ADMIN_EMAIL`].
pub const ADMIN_PASSWORD: &str = "admin-password";
/// See [`ADMIN_EMAIL`].
pub const ADMIN_TOKEN: &str = "peer-admin-token";

/// A running Directus.
pub struct Peer {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// Its log file.
    pub log: PathBuf,
    /// Its database's name.
    pub database: String,
    /// Its local storage (STORAGE_LOCAL_ROOT).
    pub uploads: PathBuf,
    child: Child,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where the peer is installed.
pub fn install_dir() -> PathBuf {
    std::env::var_os("CDAPI_DIRECTUS_DIR").map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/root"));
        home.join(".cache/cdapi").join(format!("directus-{VERSION}"))
    })
}

/// Why the peer cannot run here, or `None` when it is installed (the right version, with its
/// native `isolated-vm` module built: Directus loads it at start).
pub fn unavailable() -> Option<String> {
    let dir = install_dir();
    let why = std::env::var("CDAPI_DIRECTUS_UNAVAILABLE").ok().filter(|s| !s.is_empty());
    let manifest = std::fs::read_to_string(dir.join("node_modules/directus/package.json")).unwrap_or_default();
    let problem = if manifest.is_empty() {
        Some(format!("directus is not installed in {}", dir.display()))
    } else if !manifest.contains(&format!("\"version\": \"{VERSION}\"")) {
        Some(format!("{} does not hold directus {VERSION}", dir.display()))
    } else if !dir.join("node_modules/isolated-vm/out/isolated_vm.node").exists() {
        Some(format!("isolated-vm is not built in {}", dir.display()))
    } else {
        None
    };
    problem.map(|p| match why {
        Some(w) => format!("{p} ({w})"),
        None => format!("{p} (deploy/local/test installs it: lib.sh ensure_directus_peer)"),
    })
}

fn psql(url: &str, args: &[&str]) -> Result<(), String> {
    test_harness::psql(url, args).map_err(|e| format!("{e:#}"))
}

/// Bootstraps Directus on a new database `cdapi_test_<name>_<pid>` after loading `sql_files`
/// into it, and starts it. Errors: the database, the bootstrap or the start failing (with the
/// log's tail).
pub fn start(name: &str, sql_files: &[&Path]) -> Result<Peer, String> {
    start_with(name, sql_files, Vec::new())
}

/// [`start`] with more settings (`extra_env`, e.g. storage locations), over the defaults.
pub fn start_with(name: &str, sql_files: &[&Path], extra_env: Vec<(String, String)>) -> Result<Peer, String> {
    let dir = install_dir();
    let db = format!("cdapi_test_{name}_{}", std::process::id());
    let admin = database_url("postgres");
    psql(&admin, &["-c", &format!("DROP DATABASE IF EXISTS \"{db}\""), "-c", &format!("CREATE DATABASE \"{db}\"")])?;
    let db_url = database_url(&db);
    for f in sql_files {
        psql(&db_url, &["-f", &f.to_string_lossy()])?;
    }
    let logs = std::env::temp_dir().join(&db);
    std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
    let log = logs.join("directus.log");
    // Directus looks for a package.json in its working directory (for module extensions).
    std::fs::write(logs.join("package.json"), r#"{"name": "directus-peer", "private": true}"#).map_err(|e| e.to_string())?;
    let env: Vec<(&str, String)> = vec![
        ("DB_CLIENT", "pg".into()),
        ("DB_CONNECTION_STRING", db_url),
        ("SECRET", format!("differential-{db}-secret-0123456789abcdef")),
        ("ADMIN_EMAIL", ADMIN_EMAIL.into()),
        ("ADMIN_PASSWORD", ADMIN_PASSWORD.into()),
        ("ADMIN_TOKEN", ADMIN_TOKEN.into()),
        ("HOST", "127.0.0.1".into()),
        ("CACHE_ENABLED", "false".into()),
        // Read the schema from the database on every request: with the in-memory schema cache,
        // a collection made or changed a moment before is sometimes missing from the next
        // request's schema (Directus then answers 403), which made peer setups flaky.
        ("CACHE_SCHEMA", "false".into()),
        ("RATE_LIMITER_ENABLED", "false".into()),
        ("TELEMETRY", "false".into()),
        ("WEBSOCKETS_ENABLED", "false".into()),
        ("LOG_LEVEL", "warn".into()),
        ("EXTENSIONS_PATH", logs.join("extensions").to_string_lossy().into_owned()),
        ("STORAGE_LOCAL_ROOT", logs.join("uploads").to_string_lossy().into_owned()),
        ("NO_UPDATE_NOTIFIER", "1".into()),
    ];
    let cli = dir.join("node_modules/directus/cli.js");
    let run = |args: &[&str], out: &Path, port: u16| -> Result<Child, String> {
        let file = std::fs::File::create(out).map_err(|e| e.to_string())?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        Command::new("node")
            .arg(&cli)
            .args(args)
            .current_dir(&logs)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .envs(extra_env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("PORT", port.to_string())
            .env("PUBLIC_URL", format!("http://127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("node {}: {e}", cli.display()))
    };
    let boot_log = logs.join("bootstrap.log");
    let status = run(&["bootstrap"], &boot_log, 0)?.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("directus bootstrap failed: {}", std::fs::read_to_string(&boot_log).unwrap_or_default()));
    }
    // A free port may be taken by another test's server before Directus listens on it: then
    // Directus exits, and another port is tried (only Directus's answer counts, see `ping`).
    let mut last = String::new();
    for _ in 0..3 {
        let port = free_port().map_err(|e| e.to_string())?;
        let child = run(&["start"], &log, port)?;
        let mut peer = Peer { url: format!("http://127.0.0.1:{port}"), log: log.clone(), database: db.clone(), uploads: logs.join("uploads"), child };
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Ok(Some(status)) = peer.child.try_wait() {
                last = format!("directus exited with {status}: {}", std::fs::read_to_string(&peer.log).unwrap_or_default());
                break;
            }
            if ping(port) {
                return Ok(peer);
            }
            if Instant::now() > deadline {
                return Err(format!("directus did not answer /server/ping in 120 s: {}", std::fs::read_to_string(&peer.log).unwrap_or_default()));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    Err(last)
}

fn ping(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = write!(s, "GET /server/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    // Directus's own answer, not another server that took the port meanwhile.
    buf.starts_with("HTTP/1.1 200") && buf.to_ascii_lowercase().contains("x-powered-by: directus")
}
