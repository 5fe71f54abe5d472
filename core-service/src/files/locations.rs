//! Storage locations (Directus's settings): `STORAGE_LOCATIONS` names them (comma-separated;
//! default `local`); uploads go to the first, assets are read from the location their file row
//! names (`directus_files.storage`). Each location `<NAME>` (upper case in the variables):
//!
//! - `STORAGE_<NAME>_DRIVER`: `local` (default for a location called `local`) or `s3`.
//! - local: `STORAGE_<NAME>_ROOT`, the directory (default `./uploads`; created when missing).
//! - s3 (any S3-compatible server): `STORAGE_<NAME>_BUCKET` (required), `STORAGE_<NAME>_REGION`
//!   (default `us-east-1`), `STORAGE_<NAME>_KEY` and `STORAGE_<NAME>_SECRET` (secrets, `_FILE`
//!   variants read; both unset: the usual AWS environment — web identity, container or
//!   instance credentials), `STORAGE_<NAME>_ENDPOINT` (another server than AWS; `http://` is
//!   allowed only when written so), `STORAGE_<NAME>_FORCE_PATH_STYLE` (`true`: `<endpoint>/<bucket>`
//!   instead of a bucket host name), `STORAGE_<NAME>_ROOT` (a key prefix inside the bucket).
//!
//! S3 copies objects of at most 5 GiB, which an upload's move to its final name needs: an S3
//! location refuses a FILES_MAX_UPLOAD_SIZE above that at start.

use object_store::ObjectStore;
use std::path::PathBuf;
use std::sync::Arc;

/// The largest object S3 copies in one request (5 GiB).
pub const S3_MAX_COPY: u64 = 5 << 30;

/// How one location stores its blobs.
#[derive(Clone)]
pub enum Driver {
    /// A directory on this machine (or a volume shared by the replicas).
    Local {
        /// The directory.
        root: PathBuf,
    },
    /// An S3-compatible bucket.
    S3(S3Settings),
}

/// An S3 location's settings (module docs).
#[derive(Clone)]
pub struct S3Settings {
    /// Bucket name.
    pub bucket: String,
    /// Region (`us-east-1` by default).
    pub region: String,
    /// Access key id and secret; `None`: the AWS environment's credentials.
    pub credentials: Option<(String, String)>,
    /// Endpoint URL of a server other than AWS.
    pub endpoint: Option<String>,
    /// Path-style URLs.
    pub force_path_style: bool,
    /// Key prefix inside the bucket (empty: none).
    pub root: String,
}

impl std::fmt::Debug for Driver {
    /// Prints the settings without the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Local { root } => f.debug_struct("Local").field("root", root).finish(),
            Self::S3(s) => f
                .debug_struct("S3")
                .field("bucket", &s.bucket)
                .field("region", &s.region)
                .field("key", &s.credentials.as_ref().map(|(k, _)| k))
                .field("secret", &s.credentials.as_ref().map(|_| "***"))
                .field("endpoint", &s.endpoint)
                .field("force_path_style", &s.force_path_style)
                .field("root", &s.root)
                .finish(),
        }
    }
}

/// A location's name and driver, as configured.
#[derive(Debug, Clone)]
pub struct LocationSettings {
    /// The name written in `directus_files.storage`.
    pub name: String,
    /// Where its blobs go.
    pub driver: Driver,
}

/// A setting of location `name`: `STORAGE_<NAME>_<key>`.
fn var(name: &str, key: &str) -> String {
    format!("STORAGE_{}_{key}", name.to_ascii_uppercase())
}

/// Reads STORAGE_LOCATIONS and each location's settings. Errors: an empty or invalid name, a
/// repeated one, an unknown driver, an S3 location without a bucket or with only one of key
/// and secret, an endpoint that is not an http(s) URL.
pub fn from_env() -> anyhow::Result<Vec<LocationSettings>> {
    let list = service_runtime::env_or("STORAGE_LOCATIONS", "local".to_string())?;
    let mut out: Vec<LocationSettings> = Vec::new();
    for name in list.split(',').map(str::trim) {
        anyhow::ensure!(
            !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
            "STORAGE_LOCATIONS={list:?}: a location is named by 1-64 letters, digits or underscores"
        );
        anyhow::ensure!(!out.iter().any(|l| l.name == name), "STORAGE_LOCATIONS={list:?} names {name:?} twice");
        let default_driver = if name == "local" { "local" } else { "" };
        let driver = service_runtime::env_or(&var(name, "DRIVER"), default_driver.to_string())?;
        let driver = match driver.as_str() {
            "local" => Driver::Local { root: service_runtime::env_or(&var(name, "ROOT"), "./uploads".to_string())?.into() },
            "s3" => Driver::S3(s3_from_env(name)?),
            "" => anyhow::bail!("{} is required for location {name:?} (local or s3)", var(name, "DRIVER")),
            other => anyhow::bail!("{}={other:?}: the drivers are local and s3", var(name, "DRIVER")),
        };
        out.push(LocationSettings { name: name.to_owned(), driver });
    }
    Ok(out)
}

fn s3_from_env(name: &str) -> anyhow::Result<S3Settings> {
    let bucket = service_runtime::env_opt(&var(name, "BUCKET")).ok_or_else(|| anyhow::anyhow!("{} is required", var(name, "BUCKET")))?;
    let credentials = match (service_runtime::secret_env(&var(name, "KEY"))?, service_runtime::secret_env(&var(name, "SECRET"))?) {
        (Some(k), Some(s)) => Some((k, s)),
        (None, None) => None,
        _ => anyhow::bail!("set both {} and {}, or neither", var(name, "KEY"), var(name, "SECRET")),
    };
    let endpoint = service_runtime::env_opt(&var(name, "ENDPOINT")).map(|e| e.trim().trim_end_matches('/').to_owned());
    if let Some(e) = &endpoint {
        let url = reqwest::Url::parse(e).map_err(|err| anyhow::anyhow!("{}={e:?} is not a URL: {err}", var(name, "ENDPOINT")))?;
        anyhow::ensure!(matches!(url.scheme(), "http" | "https"), "{}={e:?}: an http(s) URL is needed", var(name, "ENDPOINT"));
    }
    Ok(S3Settings {
        bucket,
        region: service_runtime::env_or(&var(name, "REGION"), "us-east-1".to_string())?,
        credentials,
        endpoint,
        force_path_style: service_runtime::env_or(&var(name, "FORCE_PATH_STYLE"), false)?,
        root: service_runtime::env_opt(&var(name, "ROOT")).unwrap_or_default().trim_matches('/').to_owned(),
    })
}

/// An opened location.
pub struct Location {
    /// Its name.
    pub name: String,
    /// Its store.
    pub store: Arc<dyn ObjectStore>,
    /// The directory of a local location (its temporary blobs are cleaned up there directly).
    pub local_root: Option<PathBuf>,
}

impl Location {
    /// Opens a location: creates a local one's directory, builds an S3 client (no request is
    /// made until the first file). Errors: the directory cannot be made; the S3 settings are
    /// refused by the client.
    pub fn open(settings: &LocationSettings) -> anyhow::Result<Self> {
        let (store, local_root): (Arc<dyn ObjectStore>, _) = match &settings.driver {
            Driver::Local { root } => {
                std::fs::create_dir_all(root)?;
                (Arc::new(object_store::local::LocalFileSystem::new_with_prefix(root)?), Some(root.clone()))
            }
            Driver::S3(s) => {
                // The S3 client's TLS (reqwest with rustls) takes the process's crypto provider.
                let _ = rustls::crypto::ring::default_provider().install_default();
                // From the AWS environment first (web identity, container and instance
                // credentials when no key is set), then this location's settings.
                let mut b = object_store::aws::AmazonS3Builder::from_env()
                    .with_bucket_name(&s.bucket)
                    .with_region(&s.region)
                    .with_virtual_hosted_style_request(!s.force_path_style);
                if let Some((key, secret)) = &s.credentials {
                    b = b.with_access_key_id(key).with_secret_access_key(secret);
                }
                if let Some(e) = &s.endpoint {
                    b = b.with_endpoint(e).with_allow_http(e.starts_with("http://"));
                }
                let store: Arc<dyn ObjectStore> = Arc::new(b.build()?);
                let store: Arc<dyn ObjectStore> =
                    if s.root.is_empty() { store } else { Arc::new(object_store::prefix::PrefixStore::new(store, s.root.as_str())) };
                (store, None)
            }
        };
        Ok(Self { name: settings.name.clone(), store, local_root })
    }
}
