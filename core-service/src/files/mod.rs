//! Files (docs/files.md; Directus `directus_files`, `/files`, `/assets`): blobs in storage
//! locations behind the `object_store` crate (local disk, S3-compatible: [`locations`]), each
//! described by a `directus_files` item.
//!
//! - [`upload`]: a client-streamed upload goes to storage chunk by chunk (flat memory), then
//!   the item is created in one transaction; a failure at any point leaves neither.
//! - [`import`]: a file fetched from a URL (never from a private address) and stored as an
//!   upload is.
//! - [`assets`]: a file's bytes streamed back, with `Range` and a strong `ETag`; images
//!   transformed on the way ([`transform`], run by [`transformer`]).
//! - Deleting file items (however: the API, SQL) queues their blobs in
//!   `cdapi.file_blobs_deleted` (migration 0009's trigger); [`Storage::sweep`] removes them,
//!   after every delete through the API and at start.
//!
//! Budgets: FILES_MAX_UPLOAD_SIZE bytes per file (default 2 GiB; more is CONTENT_TOO_LARGE and
//! nothing is kept); memory per upload: the gRPC chunks in flight plus the store's part buffer
//! ([`PART_SIZE`]).

pub mod assets;
pub mod import;
pub mod locations;
pub mod transform;
pub mod transformer;
pub mod upload;

use cdapi_proto::{ApiError, ErrorCode};
use object_store::ObjectStoreExt as _;
use object_store::path::Path;

/// Bytes buffered per upload before a part is handed to the store (5 MiB).
pub const PART_SIZE: usize = 5 << 20;

/// Storage settings (Directus's names): the locations ([`locations`]: STORAGE_LOCATIONS,
/// STORAGE_<NAME>_*), FILES_MAX_UPLOAD_SIZE (bytes, default 2147483648).
#[derive(Debug, Clone)]
pub struct StorageSettings {
    /// The locations; uploads go to the first.
    pub locations: Vec<locations::LocationSettings>,
    /// The largest upload, in bytes.
    pub max_upload_size: u64,
    /// Image transformations (ASSETS_* settings).
    pub transform: transform::TransformSettings,
    /// Imports from URLs (FILES_IMPORT_* settings).
    pub import: import::ImportSettings,
}

impl StorageSettings {
    /// Reads the settings. Errors: a value that does not parse, a location's settings
    /// ([`locations::from_env`]), FILES_MAX_UPLOAD_SIZE above what S3 copies with an S3 location.
    pub fn from_env() -> anyhow::Result<Self> {
        let locations = locations::from_env()?;
        let max_upload_size = service_runtime::env_or("FILES_MAX_UPLOAD_SIZE", 2u64 << 30)?;
        if locations.iter().any(|l| matches!(l.driver, locations::Driver::S3(_))) {
            anyhow::ensure!(
                max_upload_size <= locations::S3_MAX_COPY,
                "FILES_MAX_UPLOAD_SIZE={max_upload_size}: an S3 location stores files of at most {} bytes",
                locations::S3_MAX_COPY
            );
        }
        Ok(Self { locations, max_upload_size, transform: transform::TransformSettings::from_env()?, import: import::ImportSettings::from_env()? })
    }
}

/// The storage locations files go to.
pub struct Storage {
    /// The locations (at least one); uploads go to the first.
    pub locations: Vec<locations::Location>,
    /// FILES_MAX_UPLOAD_SIZE.
    pub max_upload_size: u64,
    /// Image transformations of assets.
    pub transformer: transformer::Transformer,
    /// The HTTP client of imports.
    pub importer: import::Importer,
}

impl Storage {
    /// Opens the locations. Errors: as [`locations::Location::open`]; no location.
    pub fn open(settings: &StorageSettings) -> anyhow::Result<Self> {
        let locations = settings.locations.iter().map(locations::Location::open).collect::<anyhow::Result<Vec<_>>>()?;
        anyhow::ensure!(!locations.is_empty(), "STORAGE_LOCATIONS names no location");
        Ok(Self {
            locations,
            max_upload_size: settings.max_upload_size,
            transformer: transformer::Transformer::new(settings.transform.clone()),
            importer: import::Importer::new(&settings.import)?,
        })
    }

    /// Where uploads go: the first location.
    pub fn upload_location(&self) -> Result<&locations::Location, ApiError> {
        self.locations.first().ok_or_else(|| ApiError::internal_because("no storage location is configured"))
    }

    /// The location called `name`, if configured.
    pub fn location(&self, name: &str) -> Option<&locations::Location> {
        self.locations.iter().find(|l| l.name == name)
    }

    /// Removes the blobs of deleted file rows (`cdapi.file_blobs_deleted`), at most 1,000 per
    /// call; a blob already gone counts as removed; rows of locations not configured here stay
    /// queued. Logged, never failing the caller.
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
            let Some(location) = self.location(&storage) else { continue };
            match location.store.delete(&Path::from(name.as_str())).await {
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
