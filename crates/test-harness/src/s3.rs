//! S3-compatible servers for tests: moto's server (from CDAPI_PYTHON, installed by
//! deploy/local/test) with the bucket [`S3_BUCKET`], and the storage settings that point this
//! API, or Directus, at it.

use crate::processes::wait_tcp;
use crate::{S3_BUCKET, free_port};
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// An S3-compatible server of a test's own (moto's, from CDAPI_PYTHON) with the bucket
/// [`S3_BUCKET`]; stopped when dropped.
pub struct S3Server {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    child: Child,
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts an [`S3Server`] logging to `log`. Errors: moto missing or not answering.
pub fn s3_server(log: &Path) -> Result<S3Server> {
    let port = free_port()?;
    let child = spawn_s3(port, log)?;
    Ok(S3Server { url: format!("http://127.0.0.1:{port}"), child })
}

/// The settings of the storage location `name` (`STORAGE_<NAME>_*`, `name` upper-case) in the
/// bucket [`S3_BUCKET`] of the S3 server at `url`, as both this API and Directus read them.
pub fn s3_location_env(name: &str, url: &str) -> Vec<(String, String)> {
    [
        ("DRIVER", "s3"),
        ("BUCKET", S3_BUCKET),
        ("REGION", "us-east-1"),
        ("KEY", "test-key"),
        ("SECRET", "test-secret"),
        ("FORCE_PATH_STYLE", "true"),
        ("ENDPOINT", url),
    ]
    .map(|(k, v)| (format!("STORAGE_{name}_{k}"), v.to_owned()))
    .to_vec()
}

/// Starts moto's S3 server on `port` and creates [`S3_BUCKET`] in it.
pub(crate) fn spawn_s3(port: u16, log: &Path) -> Result<Child> {
    use std::io::{Read, Write};
    let python = std::env::var("CDAPI_PYTHON").unwrap_or_else(|_| "python3".into());
    let file = std::fs::File::create(log)?;
    let mut child = Command::new(&python)
        .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()
        .with_context(|| format!("starting {python} -m moto.server (deploy/local/test installs it)"))?;
    wait_tcp(port, &mut child, log)?;
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port))?;
    conn.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(conn, "PUT /{S3_BUCKET} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
    let mut answer = String::new();
    conn.read_to_string(&mut answer)?;
    if !answer.starts_with("HTTP/1.1 200") {
        bail!("creating the bucket failed: {answer}");
    }
    Ok(child)
}
