//! Files (issue 18; Directus `directus_files`, `/files`, `/assets`): blobs in a storage
//! location behind the `object_store` crate, each described by a `directus_files` item.
//!
//! - [`upload`]: a client-streamed upload goes to storage chunk by chunk (flat memory), then
//!   the item is created in one transaction; a failure at any point leaves neither.
//! - [`import`]: a file fetched from a URL (never from a private address) and stored as an
//!   upload is.
//! - [`assets`]: a file's bytes streamed back, with `Range` and a strong `ETag`; images
//!   transformed on the way ([`transform`]).
//! - Deleting file items (however: the API, SQL) queues their blobs in
//!   `cdapi.file_blobs_deleted` (migration 0009's trigger); [`Storage::sweep`] removes them,
//!   after every delete through the API and at start.
//!
//! Budgets: FILES_MAX_UPLOAD_SIZE bytes per file (default 2 GiB; more is CONTENT_TOO_LARGE and
//! nothing is kept); memory per upload: the gRPC chunks in flight plus the store's part buffer
//! ([`PART_SIZE`]).

pub mod assets;
pub mod import;
pub mod transform;
pub mod upload;

use cdapi_proto::{ApiError, ErrorCode};
use object_store::{ObjectStore, ObjectStoreExt as _};
use object_store::path::Path;
use std::sync::Arc;

/// Bytes buffered per upload before a part is handed to the store (5 MiB).
pub const PART_SIZE: usize = 5 << 20;

/// Storage settings (Directus's names): STORAGE_LOCATIONS (default `local`; only `local` is
/// supported yet), STORAGE_LOCAL_ROOT (default `./uploads`), FILES_MAX_UPLOAD_SIZE (bytes,
/// default 2147483648).
#[derive(Debug, Clone)]
pub struct StorageSettings {
    /// The one storage location's name (`local`).
    pub location: String,
    /// The directory of the `local` location (created when missing).
    pub local_root: std::path::PathBuf,
    /// The largest upload, in bytes.
    pub max_upload_size: u64,
    /// Image transformations (ASSETS_* settings).
    pub transform: transform::TransformSettings,
    /// Imports from URLs (FILES_IMPORT_* settings).
    pub import: import::ImportSettings,
}

impl StorageSettings {
    /// Reads the settings. Errors: a value that does not parse, a location other than `local`.
    pub fn from_env() -> anyhow::Result<Self> {
        let location = service_runtime::env_or("STORAGE_LOCATIONS", "local".to_string())?;
        anyhow::ensure!(location == "local", "STORAGE_LOCATIONS={location:?}: only \"local\" is supported");
        Ok(Self {
            location,
            local_root: service_runtime::env_or("STORAGE_LOCAL_ROOT", "./uploads".to_string())?.into(),
            max_upload_size: service_runtime::env_or("FILES_MAX_UPLOAD_SIZE", 2u64 << 30)?,
            transform: transform::TransformSettings::from_env()?,
            import: import::ImportSettings::from_env()?,
        })
    }
}

/// The storage location files go to.
pub struct Storage {
    /// The store (local disk).
    pub store: Arc<dyn ObjectStore>,
    /// Its name, written in `directus_files.storage`.
    pub location: String,
    /// FILES_MAX_UPLOAD_SIZE.
    pub max_upload_size: u64,
    /// The local location's directory (temporary blobs are cleaned up there directly).
    pub root: std::path::PathBuf,
    /// Image transformations of assets.
    pub transformer: transform::Transformer,
    /// The HTTP client of imports.
    pub importer: import::Importer,
}

impl Storage {
    /// Opens the location (creating its directory). Errors: the directory cannot be made.
    pub fn open(settings: &StorageSettings) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&settings.local_root)?;
        let store = object_store::local::LocalFileSystem::new_with_prefix(&settings.local_root)?;
        Ok(Self {
            store: Arc::new(store),
            location: settings.location.clone(),
            max_upload_size: settings.max_upload_size,
            root: settings.local_root.clone(),
            transformer: transform::Transformer::new(settings.transform.clone()),
            importer: import::Importer::new(&settings.import)?,
        })
    }

    /// Removes the blobs of deleted file rows (`cdapi.file_blobs_deleted`), at most 1,000 per
    /// call; a blob already gone counts as removed. Logged, never failing the caller.
    pub async fn sweep(&self, pool: &sqlx::PgPool) {
        let rows: Vec<(i64, String, String)> =
            match sqlx::query_as("SELECT id, storage, filename_disk FROM cdapi.file_blobs_deleted ORDER BY id LIMIT 1000").fetch_all(pool).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, "reading the deleted blobs failed");
                    return;
                }
            };
        let mut done = Vec::new();
        for (id, storage, name) in rows {
            if storage != self.location {
                continue;
            }
            match self.store.delete(&Path::from(name.as_str())).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => done.push(id),
                Err(e) => tracing::warn!(error = %e, file = %name, "removing a deleted file's blob failed"),
            }
        }
        if !done.is_empty()
            && let Err(e) = sqlx::query("DELETE FROM cdapi.file_blobs_deleted WHERE id = ANY($1)").bind(&done).execute(pool).await
        {
            tracing::warn!(error = %e, "forgetting removed blobs failed");
        }
    }
}

/// A storage failure as clients see it: SERVICE_UNAVAILABLE (logged with its cause).
pub fn storage_error(e: object_store::Error) -> ApiError {
    tracing::error!(error = %e, "file storage failed");
    ApiError::new(ErrorCode::ServiceUnavailable, "Service \"storage\" is unavailable.")
}
