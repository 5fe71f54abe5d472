//! Starting, stopping and restarting the processes of an environment: the service binaries
//! (with their logs), the SMTP sink and the S3 server, and the controls tests use to make
//! faults ([`TestApp::roll`], [`TestApp::stop_auth`], [`TestApp::signal`], ...).

use crate::TestApp;
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How a service replica was started: enough to start it again the same way.
pub(crate) struct Launch {
    pub(crate) name: &'static str,
    pub(crate) bin: PathBuf,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) log: PathBuf,
    pub(crate) port: u16,
}

pub(crate) fn bin_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    // <target>/<profile>/deps/<test-binary>
    let dir = exe.parent().and_then(Path::parent).context("test binary has no profile dir")?;
    Ok(dir.to_path_buf())
}

pub(crate) fn spawn(bin: &Path, envs: &[(String, String)], log: &Path) -> Result<Child> {
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

pub(crate) fn wait_healthy(url: &str, child: &mut Child, log: &Path) -> Result<()> {
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

impl TestApp {
    /// Stops auth-service (its first replica, killed) and starts it again on the same address
    /// with `env` on top of its settings (e.g. another AUTH_SIGNING_KID, as a rolling restart
    /// would). Errors: it does not come back.
    pub fn restart_auth(&mut self, env: &[(&str, &str)]) -> Result<()> {
        self.relaunch("auth", 0, env, false)
    }

    /// Kills replica `index` of `name` (`core`, `auth` or `edge`: SIGKILL, no drain, as a crash
    /// or an OOM kill) and starts it again as it was launched, on the same address; returns once
    /// it listens. Errors: no such replica, or it did not come back.
    pub fn kill_and_restart(&mut self, name: &str, index: usize) -> Result<()> {
        self.relaunch(name, index, &[], false)
    }

    /// Stops every auth-service replica (as if the service went away). Errors: none runs.
    pub fn stop_auth(&mut self) -> Result<()> {
        let before = self.children.len();
        let (auth, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.children).into_iter().partition(|(n, _)| *n == "auth");
        self.children = rest;
        anyhow::ensure!(self.children.len() < before, "no auth-service runs");
        for (_, mut child) in auth {
            let _ = child.kill();
            let _ = child.wait();
        }
        Ok(())
    }

    /// Stops this environment's own Redis ([`Spec::own_redis`]). Errors: there is none.
    pub fn stop_redis(&mut self) -> Result<()> {
        let i = self.children.iter().position(|(n, _)| *n == "redis").context("this environment has no Redis of its own")?;
        let (_, mut child) = self.children.remove(i);
        child.kill()?;
        child.wait()?;
        Ok(())
    }

    /// Rolls replica `index` of `name` (`core`, `auth` or `edge`, edge-rest), as a rolling restart does: SIGTERM,
    /// waits for it to drain and exit (at most 30 s), starts it again with the same settings on
    /// the same address, and returns once it listens. Errors: no such replica, it did not exit
    /// in time, or did not come back.
    pub fn roll(&mut self, name: &str, index: usize) -> Result<()> {
        self.relaunch(name, index, &[], true)
    }

    /// Stops replica `index` of `name` (`graceful`: SIGTERM and its drain, at most 30 s; else
    /// killed) and starts it again as it was launched, `extra` on top of its settings, in its
    /// place among the processes; returns once it listens. Its log: `<log>.rolled.log` or
    /// `<log>.restarted.log`.
    fn relaunch(&mut self, name: &str, index: usize, extra: &[(&str, &str)], graceful: bool) -> Result<()> {
        let slot = self.children.iter().enumerate().filter(|(_, (n, _))| *n == name).nth(index).map(|(i, _)| i);
        let slot = slot.with_context(|| format!("no {name} replica {index}"))?;
        let launch = self.launches.iter().filter(|l| l.name == name).nth(index).with_context(|| format!("{name} replicas cannot be restarted"))?;
        let mut env = launch.env.clone();
        env.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        let (bin, port) = (launch.bin.clone(), launch.port);
        let log = launch.log.with_extension(if graceful { "rolled.log" } else { "restarted.log" });
        if graceful {
            self.signal(name, index, "TERM")?;
            let exited = self.wait_exit(name, index, Duration::from_secs(30))?;
            anyhow::ensure!(exited.is_some(), "{name} replica {index} did not exit within 30 s of SIGTERM");
        } else {
            let old = &mut self.children[slot].1;
            let _ = old.kill();
            let _ = old.wait();
        }
        let mut child = spawn(&bin, &env, &log)?;
        wait_tcp(port, &mut child, &log)?;
        self.children[slot].1 = child;
        Ok(())
    }

    /// Stops this environment's own PostgreSQL ([`Spec::own_postgres`]) with a fast shutdown
    /// (sessions cut, as in a restart). Errors: there is none, or pg_ctl failed.
    pub fn stop_postgres(&self) -> Result<()> {
        self.postgres.as_ref().context("this environment has no PostgreSQL of its own")?.halt()
    }

    /// The streaming replica of [`crate::Spec::read_replica`], to stop ([`crate::postgres::PrivatePostgres::halt`])
    /// and start again. Errors: there is none.
    pub fn read_replica(&self) -> Result<&crate::postgres::PrivatePostgres> {
        self.replica.as_ref().context("this environment has no read replica")
    }

    /// Starts this environment's own PostgreSQL again; returns once it accepts connections.
    /// Errors: there is none, or pg_ctl failed.
    pub fn start_postgres(&self) -> Result<()> {
        self.postgres.as_ref().context("this environment has no PostgreSQL of its own")?.resume()
    }

    /// The process ids of the processes named `name` (`core`, `auth`, `edge`, `graphql`), in
    /// replica order.
    pub fn pids(&self, name: &str) -> Vec<u32> {
        self.children.iter().filter(|(n, _)| *n == name).map(|(_, c)| c.id()).collect()
    }

    /// Sends `signal` (`TERM`, `KILL`, ...) to replica `index` of `name`. Errors: no such
    /// process, or `kill` failed.
    pub fn signal(&self, name: &str, index: usize, signal: &str) -> Result<()> {
        let pid = *self.pids(name).get(index).with_context(|| format!("no {name} replica {index}"))?;
        let status = Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status()?;
        anyhow::ensure!(status.success(), "kill -{signal} {pid} failed");
        Ok(())
    }

    /// Waits up to `timeout` for replica `index` of `name` to exit; its exit status, or
    /// `None` if it still runs. Errors: no such process.
    pub fn wait_exit(&mut self, name: &str, index: usize, timeout: Duration) -> Result<Option<std::process::ExitStatus>> {
        let deadline = Instant::now() + timeout;
        let child = self.children.iter_mut().filter(|(n, _)| *n == name).nth(index).map(|(_, c)| c).with_context(|| format!("no {name} replica {index}"))?;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A keys file with one new key (`auth-service keygen`).
pub(crate) fn keys_file(bins: &Path, logs: &Path) -> Result<PathBuf> {
    let out = Command::new(bins.join("auth-service")).arg("keygen").output().context("running auth-service keygen")?;
    if !out.status.success() {
        bail!("auth-service keygen failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let path = logs.join("auth-keys.pem");
    std::fs::write(&path, &out.stdout)?;
    Ok(path)
}

/// Starts aiosmtpd on `port` with the JSON-directory handler of `smtp_sink.py`.
pub(crate) fn spawn_smtp_sink(root: &Path, dir: &Path, port: u16, log: &Path) -> Result<Child> {
    std::fs::create_dir_all(dir)?;
    let python = std::env::var("CDAPI_PYTHON").unwrap_or_else(|_| "python3".into());
    let file = std::fs::File::create(log)?;
    let mut child = Command::new(&python)
        .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}"), "-c", "smtp_sink.JsonDir"])
        .arg(dir)
        .env("PYTHONPATH", root.join("crates/test-harness"))
        .stdin(Stdio::piped())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()
        .with_context(|| format!("starting {python} -m aiosmtpd (deploy/local/test installs it)"))?;
    wait_tcp(port, &mut child, log)?;
    Ok(child)
}

/// Waits until something accepts connections on 127.0.0.1:`port`, while `child` lives.
pub(crate) fn wait_tcp(port: u16, child: &mut Child, log: &Path) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            bail!("process exited with {status}; log:\n{}", std::fs::read_to_string(log).unwrap_or_default());
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("port {port} did not open in time; log:\n{}", std::fs::read_to_string(log).unwrap_or_default())
}
