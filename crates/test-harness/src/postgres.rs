//! A PostgreSQL server of one test environment's own ([`crate::Spec::own_postgres`]), so a
//! fault test can stop and start it without touching the shared server: a fresh cluster made
//! by `initdb` in a temporary directory, on a free port of 127.0.0.1, trusting local
//! connections. As root (initdb refuses root) the cluster belongs to the `postgres` user, as
//! `deploy/local/lib.sh` does it. Stopped and removed when dropped.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The private server.
pub struct PrivatePostgres {
    bin: PathBuf,
    home: PathBuf,
    port: u16,
}

/// The newest Debian server bin dir holding `initdb`, else the dir of an `initdb` on PATH.
fn bin_dir() -> Result<PathBuf> {
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path().join("bin"))).filter(|b| b.join("initdb").exists()).collect())
        .unwrap_or_default();
    debian.sort_by_key(|p| p.to_string_lossy().split('/').nth(4).and_then(|v| v.parse::<u32>().ok()).unwrap_or(0));
    if let Some(b) = debian.pop() {
        return Ok(b);
    }
    let out = Command::new("sh").args(["-c", "command -v initdb"]).output().context("looking for initdb")?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    match Path::new(&path).parent() {
        Some(dir) if out.status.success() => Ok(dir.to_path_buf()),
        _ => bail!("initdb not found (install the PostgreSQL server: deploy/local/test does)"),
    }
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

/// An empty server home `/var/tmp/cdapi-test-pg-<name>` with a `socket` directory, the
/// `postgres` user's when root (initdb refuses root; the postgres user must reach it, which a
/// home such as /root is not). Errors: it cannot be made or given away.
fn new_home(name: &str) -> Result<PathBuf> {
    let home = PathBuf::from(format!("/var/tmp/cdapi-test-pg-{name}"));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(home.join("socket"))?;
    if is_root() {
        let ok = Command::new("chown").args(["-R", "postgres:"]).arg(&home).status()?.success();
        anyhow::ensure!(ok, "chown of {} to postgres failed", home.display());
    }
    Ok(home)
}

/// `program args...`, as the `postgres` user when root. Errors: it fails (with its output).
fn run(program: &Path, args: &[&str]) -> Result<()> {
    let mut cmd = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    let out = cmd.args(args).stdin(Stdio::null()).output().with_context(|| format!("running {}", program.display()))?;
    if !out.status.success() {
        bail!("{} {args:?} failed: {}{}", program.display(), String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

impl PrivatePostgres {
    /// Makes and starts a cluster for the environment `label`. Errors: no PostgreSQL server
    /// binaries, initdb or the start failing.
    pub fn start(label: &str) -> Result<Self> {
        let bin = bin_dir()?;
        let home = new_home(&format!("{label}-{}", std::process::id()))?;
        let data = home.join("data");
        run(&bin.join("initdb"), &["-D", &data.to_string_lossy(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"])?;
        let port = crate::free_port()?;
        let conf = format!(
            "\n# test-harness private server\nport = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             max_connections = 200\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\n",
            home.join("socket").display()
        );
        let conf_path = data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf_path)?;
        text.push_str(&conf);
        std::fs::write(&conf_path, text)?;
        let pg = Self { bin, home, port };
        pg.resume()?;
        Ok(pg)
    }

    /// A streaming replica of this server (`pg_basebackup -R` after a fast checkpoint, hot standby), applying each
    /// commit `apply_delay_ms` after it happened (`recovery_min_apply_delay`: so a test knows it
    /// is behind), started; stopped and removed when dropped. Errors: the backup or the start
    /// failing.
    pub fn replica(&self, label: &str, apply_delay_ms: u64) -> Result<Self> {
        let home = new_home(&format!("{label}-replica-{}", std::process::id()))?;
        let data = home.join("data");
        let source_port = self.port.to_string();
        run(
            &self.bin.join("pg_basebackup"),
            &["-h", "127.0.0.1", "-p", &source_port, "-U", "postgres", "-D", &data.to_string_lossy(), "-R", "-X", "stream", "-c", "fast"],
        )?;
        let port = crate::free_port()?;
        let conf = format!(
            "\n# test-harness replica\nport = {port}\nunix_socket_directories = '{}'\nhot_standby = on\nrecovery_min_apply_delay = '{apply_delay_ms}ms'\n",
            home.join("socket").display()
        );
        let conf_path = data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf_path)?;
        text.push_str(&conf);
        std::fs::write(&conf_path, text)?;
        let pg = Self { bin: self.bin.clone(), home, port };
        pg.resume()?;
        Ok(pg)
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn admin_url(&self) -> String {
        self.url("postgres")
    }

    /// `postgres://postgres@127.0.0.1:<port>/<database>`.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Starts the server again (after [`Self::halt`]) on the same port; returns once it accepts
    /// connections. Errors: pg_ctl failing.
    pub fn resume(&self) -> Result<()> {
        let data = self.home.join("data");
        let log = self.home.join("postgres.log");
        run(&self.bin.join("pg_ctl"), &["-D", &data.to_string_lossy(), "-l", &log.to_string_lossy(), "-w", "-t", "60", "start"])
    }

    /// Promotes a replica ([`Self::replica`]) to a primary of its own (`pg_ctl promote`); returns
    /// once it is. Errors: pg_ctl failing.
    pub fn promote(&self) -> Result<()> {
        run(&self.bin.join("pg_ctl"), &["-D", &self.home.join("data").to_string_lossy(), "-w", "promote"])
    }

    /// Stops the server (fast shutdown: sessions are cut, as in a restart). Errors: pg_ctl failing.
    pub fn halt(&self) -> Result<()> {
        self.stop("fast")
    }

    /// `pg_ctl stop` in shutdown `mode` (`fast`, `immediate`).
    fn stop(&self, mode: &str) -> Result<()> {
        run(&self.bin.join("pg_ctl"), &["-D", &self.home.join("data").to_string_lossy(), "-m", mode, "-w", "stop"])
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = self.stop("immediate");
        let _ = std::fs::remove_dir_all(&self.home);
    }
}
