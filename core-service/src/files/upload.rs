//! `UploadFile`: a file streamed to storage, then its `directus_files` item (see
//! `files.proto`). The order keeps failures clean: the caller's create grant (to replace a
//! file: their update rights on that item) is checked before any byte is stored; the blob is
//! written under a temporary name; the item is created or updated (with the caller's
//! permissions: fields, validation, presets) and given its server-owned fields in one
//! transaction (an image's `width` and `height` read from its header), during which the blob
//! takes its final name; any failure removes the blob and rolls the item back. A replaced
//! file's old blob is queued for removal in that transaction (migration 0009's
//! `file_blobs_deleted`), so it goes only once the change committed; the new blob has a name of
//! its own, so a failed replacement leaves the old file as it was.

use super::locations::Location;
use super::storage_error;
use crate::auth::Caller;
use crate::permissions::Action;
use bytes::Bytes;
use cdapi_proto::v1::{UploadChunk, UploadStart, upload_chunk::Part};
use cdapi_proto::{ApiError, ErrorCode};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt as _, WriteMultipart};
use serde_json::{Map, Value};

/// Fields of a file item an upload takes from the file part itself (besides the server-owned
/// ones, [`crate::write::server_owned`]); sent by a client as text parts, they are dropped.
const FROM_FILE_PART: &[&str] = &["id", "filename_download", "type"];

/// The fields a replacement writes from the file part as the caller: their update rights must
/// cover them (as Directus's `FilesService.uploadOne` updates them with the caller's rights).
const REPLACED: &[&str] = &["filename_download", "type"];

/// A file's extension as its blob keeps it: `.` and up to 16 ASCII letters or digits, lower
/// case; none when the name has no such extension.
pub fn extension(filename: &str) -> String {
    match filename.rsplit_once('.') {
        Some((_, ext)) if !ext.is_empty() && ext.len() <= 16 && ext.bytes().all(|b| b.is_ascii_alphanumeric()) => format!(".{}", ext.to_ascii_lowercase()),
        _ => String::new(),
    }
}

/// Directory (under the location's root) of blobs being written.
const INCOMING: &str = ".incoming";

/// A random name for a blob being written.
fn temporary_name() -> String {
    use argon2::password_hash::rand_core::{OsRng, RngCore};
    let mut bytes = [0u8; 16];
    OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Removes what is left of a temporary blob when the upload ends in any way, the call being
/// dropped mid-way (a client gone) included: on a local location the blob and the store's part
/// files of it at once; on another location the blob is deleted by a task (a multipart upload
/// still open is aborted by [`Parts`]). Nothing is done once the blob has its final name.
struct Incoming {
    store: std::sync::Arc<dyn ObjectStore>,
    temp: Path,
    /// A local location's directory of temporary blobs, and this blob's name.
    local: Option<(std::path::PathBuf, String)>,
    /// The blob was moved to its final name.
    done: bool,
}

impl Drop for Incoming {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some((dir, name)) = &self.local {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                if entry.file_name().to_string_lossy().starts_with(name.as_str()) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
            return;
        }
        let (store, temp) = (self.store.clone(), self.temp.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = store.delete(&temp).await;
            });
        }
    }
}

/// A multipart upload in progress, aborted (by a task) when dropped unfinished, so a cut upload
/// leaves no parts behind in an S3 bucket.
struct Parts(Option<WriteMultipart>);

impl Drop for Parts {
    fn drop(&mut self) {
        if let Some(w) = self.0.take() {
            drop(abort(w));
        }
    }
}

/// Aborts a multipart upload in a task of its own, so that the call being dropped meanwhile (a
/// client cancelling after its cut upload) cannot stop it half-way; the returned future waits
/// for it (dropping that future leaves the task running).
fn abort(w: WriteMultipart) -> impl Future<Output = ()> {
    let task = tokio::runtime::Handle::try_current().ok().map(|rt| {
        rt.spawn(async move {
            if let Err(e) = w.abort().await {
                tracing::warn!(error = %e, "aborting a cut upload's multipart upload failed");
            }
        })
    });
    async move {
        if let Some(t) = task {
            let _ = t.await;
        }
    }
}

/// A file's bytes as they arrive: chunks, or the error that cut them short (the stream ends
/// after an error).
pub type Chunks<'a> = std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<Bytes, ApiError>> + Send + 'a>>;

/// Uploads one file for `caller` (see the module docs); returns the item as the caller reads
/// it back (empty when they may not read it). Errors: FORBIDDEN (no create grant on
/// `directus_files`), INVALID_PAYLOAD (no `start` first, a broken stream), CONTENT_TOO_LARGE,
/// the item write's errors, SERVICE_UNAVAILABLE (storage, database).
pub async fn upload(state: &crate::AppState, caller: &Caller, mut stream: tonic::Streaming<UploadChunk>) -> Result<Bytes, ApiError> {
    let start = match stream.message().await {
        Ok(Some(UploadChunk { part: Some(Part::Start(s)) })) => s,
        Ok(_) => return Err(ApiError::invalid_payload("An upload starts with the file's description")),
        Err(s) => return Err(ApiError::invalid_payload(format!("The upload was cut short: {}", s.message()))),
    };
    if start.key.is_empty() {
        caller.access.grant(&caller.schema, "directus_files", Action::Create)?;
    } else {
        // Before any byte is stored: the item exists and the caller may update it so.
        let collection = files_collection(caller)?;
        let (item, _) = item_fields(&start, false)?;
        let mut tx = state.pool.begin().await.map_err(crate::db::map_error)?;
        caller.writer(&mut tx, state.limits).require_update(&collection, &start.key, &item, REPLACED).await?;
    }
    // Data until `end`; a stream that ends without it was cut short (see `files.proto`).
    let chunks = futures_util::stream::unfold(Some(stream), |stream| async move {
        let mut stream = stream?;
        let next = match stream.message().await {
            Ok(Some(UploadChunk { part: Some(Part::Data(data)) })) => return Some((Ok(data), Some(stream))),
            Ok(Some(UploadChunk { part: Some(Part::End(_)) })) => match stream.message().await {
                Ok(None) => return None,
                _ => ApiError::invalid_payload("Nothing may follow the end of a file"),
            },
            Ok(None) => ApiError::invalid_payload("The upload was cut short: it ended before the file did"),
            Ok(Some(_)) => ApiError::invalid_payload("Only data may follow the file's description"),
            Err(s) => ApiError::invalid_payload(format!("The upload was cut short: {}", s.message())),
        };
        Some((Err(next), None))
    });
    let out = store(state, caller, &start, Box::pin(chunks)).await?;
    if !start.key.is_empty() {
        // The replaced blob, queued by the committed change.
        state.files.sweep(&state.pool).await;
    }
    Ok(out)
}

/// Stores `chunks` as the file `start` describes and creates its item (the caller's create
/// grant is checked by the caller of this function, before any byte is fetched or received).
/// Errors: as [`upload`].
pub(super) async fn store(state: &crate::AppState, caller: &Caller, start: &UploadStart, mut chunks: Chunks<'_>) -> Result<Bytes, ApiError> {
    let location = state.files.upload_location()?;
    let name = temporary_name();
    let temp = Path::from(format!("{INCOMING}/{name}"));
    let mut cleanup = Incoming {
        store: location.store.clone(),
        temp: temp.clone(),
        local: location.local_root.as_ref().map(|root| (root.join(INCOMING), name.clone())),
        done: false,
    };
    let size = match receive(location, state.files.max_upload_size, &temp, &mut chunks).await {
        Ok(size) => size,
        Err(e) => {
            let _ = location.store.delete(&temp).await;
            return Err(e);
        }
    };
    let dimensions = if start.content_type.starts_with("image/") { image_size(location, &temp, size).await } else { None };
    let final_name = std::sync::Mutex::new(None::<Path>);
    let out = create_item(state, caller, start, location, &temp, Stored { size, dimensions }, &final_name).await;
    if out.is_err() {
        let _ = location.store.delete(&temp).await;
        if let Some(name) = final_name.lock().ok().and_then(|mut n| n.take()) {
            let _ = location.store.delete(&name).await;
        }
    } else {
        cleanup.done = true;
    }
    out
}

/// Most bytes read from the start of an uploaded image to learn its size from its header.
const HEADER_BYTES: u64 = 1 << 20;

/// An uploaded image's width and height, from its header (the first [`HEADER_BYTES`]); `None`
/// when they cannot be read there.
async fn image_size(location: &Location, blob: &Path, size: u64) -> Option<(u32, u32)> {
    let head = location.store.get_range(blob, 0..size.min(HEADER_BYTES)).await.ok()?;
    tokio::task::spawn_blocking(move || image::ImageReader::new(std::io::Cursor::new(head)).with_guessed_format().ok()?.into_dimensions().ok())
        .await
        .ok()
        .flatten()
}

/// What was stored: the blob's size and, for an image, its width and height.
struct Stored {
    size: u64,
    dimensions: Option<(u32, u32)>,
}

/// Writes the chunks to `temp`; returns its size. Errors: the stream's own, CONTENT_TOO_LARGE,
/// SERVICE_UNAVAILABLE (storage).
async fn receive(location: &Location, max_upload_size: u64, temp: &Path, chunks: &mut Chunks<'_>) -> Result<u64, ApiError> {
    use futures_util::StreamExt as _;
    let upload = location.store.put_multipart(temp).await.map_err(storage_error)?;
    let mut parts = Parts(Some(WriteMultipart::new_with_chunk_size(upload, super::PART_SIZE)));
    let mut size = 0u64;
    let received: Result<(), ApiError> = async {
        loop {
            let Some(data) = chunks.next().await else { return Ok(()) };
            let data = data?;
            size += data.len() as u64;
            if size > max_upload_size {
                return Err(ApiError::new(ErrorCode::ContentTooLarge, format!("The file is larger than {max_upload_size} bytes (FILES_MAX_UPLOAD_SIZE).")));
            }
            let writer = parts.0.as_mut().ok_or_else(|| ApiError::internal_because("the upload writer is gone"))?;
            // At most two parts in flight: memory stays flat whatever the file's size.
            writer.wait_for_capacity(2).await.map_err(storage_error)?;
            writer.write(&data);
        }
    }
    .await;
    let writer = parts.0.take().ok_or_else(|| ApiError::internal_because("the upload writer is gone"))?;
    match received {
        Ok(()) => {
            writer.finish().await.map_err(storage_error)?;
            Ok(size)
        }
        Err(e) => {
            abort(writer).await;
            Err(e)
        }
    }
}

/// The `directus_files` collection as the caller sees it. Errors: FORBIDDEN.
fn files_collection(caller: &Caller) -> Result<std::sync::Arc<crate::schema::Collection>, ApiError> {
    caller.schema.collection("directus_files").cloned().ok_or_else(ApiError::forbidden)
}

/// The item's own fields of an upload (those the client may set), a new file's `title` from
/// its name when it has none (`titled`), and the file name as stored (`filename_download`).
/// Errors: INVALID_PAYLOAD (not a JSON object).
fn item_fields(start: &UploadStart, titled: bool) -> Result<(Map<String, Value>, String), ApiError> {
    let mut item: Map<String, Value> = if start.item.is_empty() {
        Map::new()
    } else {
        match serde_json::from_slice(&start.item) {
            Ok(Value::Object(o)) => o,
            _ => return Err(ApiError::invalid_payload("The file's fields must be a JSON object")),
        }
    };
    item.retain(|k, _| !FROM_FILE_PART.contains(&k.as_str()) && !crate::write::server_owned::is_server_owned("directus_files", k));
    let filename = start.filename.chars().filter(|c| !c.is_control()).take(255).collect::<String>();
    if titled && !item.contains_key("title") && !filename.is_empty() {
        // Directus titles a file after its name without the extension.
        let stem = filename.rsplit_once('.').map_or(filename.as_str(), |(s, _)| s);
        item.insert("title".into(), Value::String(stem.to_owned()));
    }
    Ok((item, filename))
}

/// The item, in one transaction with the blob's move to its final name (recorded in `moved`
/// for the caller to remove should the transaction fail after it): created, or with
/// `start.key` updated (its file replaced: the file part's name and type written with the
/// caller's rights, the old blob queued for removal).
async fn create_item(
    state: &crate::AppState,
    caller: &Caller,
    start: &UploadStart,
    location: &Location,
    temp: &Path,
    stored: Stored,
    moved: &std::sync::Mutex<Option<Path>>,
) -> Result<Bytes, ApiError> {
    let replacing = !start.key.is_empty();
    let (mut item, filename) = item_fields(start, !replacing)?;
    let content_type = if start.content_type.is_empty() { "application/octet-stream".to_owned() } else { start.content_type.clone() };
    let collection = files_collection(caller)?;
    let mut tx = state.pool.begin().await.map_err(crate::db::map_error)?;
    let out = {
        let mut w = caller.writer(&mut tx, state.limits);
        let (keys, disk) = if replacing {
            item.insert("filename_download".into(), Value::String(filename.clone()));
            item.insert("type".into(), Value::String(content_type.clone()));
            w.require_update(&collection, &start.key, &item, &[]).await?;
            // The row locked, so two replacements of one file queue each old blob once; the
            // id as stored (not as the client spelled it) names the new blob.
            let id: String = sqlx::query_scalar(
                "WITH old AS (SELECT id, storage, filename_disk FROM cdapi.files WHERE id = $1::uuid FOR UPDATE), \
                 queued AS (INSERT INTO cdapi.file_blobs_deleted (storage, filename_disk) \
                   SELECT storage, filename_disk FROM old WHERE filename_disk IS NOT NULL) \
                 SELECT id::text FROM old",
            )
            .bind(&start.key)
            .fetch_optional(&mut *w.conn)
            .await
            .map_err(crate::db::map_error)?
            .ok_or_else(ApiError::forbidden)?;
            let disk = format!("{id}-{}{}", &temporary_name()[..8], extension(&filename));
            (vec![id], disk)
        } else {
            let keys = w.create(&collection, &Value::Object(item.clone())).await?;
            let id = keys.first().cloned().ok_or_else(|| ApiError::internal_because("a file item was created without a key"))?;
            let disk = format!("{id}{}", extension(&filename));
            (keys, disk)
        };
        let id = keys.first().cloned().ok_or_else(|| ApiError::internal_because("a file item was created without a key"))?;
        // `uploaded_by` is who made the item (Directus's `user-created`); a replacement is
        // `modified_by` the caller.
        sqlx::query(
            "UPDATE cdapi.files SET storage = $2, filename_disk = $3, filename_download = $4, type = $5, filesize = $6, \
             uploaded_by = CASE WHEN $10 THEN uploaded_by ELSE $7::uuid END, modified_by = CASE WHEN $10 THEN $7::uuid ELSE modified_by END, \
             width = $8, height = $9, uploaded_on = now(), modified_on = now() WHERE id = $1::uuid",
        )
        .bind(&id)
        .bind(&location.name)
        .bind(&disk)
        .bind(&filename)
        .bind(&content_type)
        .bind(stored.size as i64)
        .bind(caller.vars.user.as_deref())
        .bind(stored.dimensions.and_then(|d| i32::try_from(d.0).ok()))
        .bind(stored.dimensions.and_then(|d| i32::try_from(d.1).ok()))
        .bind(replacing)
        .execute(&mut *w.conn)
        .await
        .map_err(crate::db::map_error)?;
        if replacing {
            // Recorded as the caller's update (activity and revision), with the new file's values.
            w.update_keys(&collection, &keys, &Value::Object(item)).await?;
        }
        let target = Path::from(disk.as_str());
        location.store.rename(temp, &target).await.map_err(storage_error)?;
        if let Ok(mut m) = moved.lock() {
            *m = Some(target);
        }
        let q = start.query.clone().unwrap_or_default();
        w.read_back(&collection, &keys, &q).await?
    };
    tx.commit().await.map_err(crate::db::map_error)?;
    crate::grpc::items::first(&out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn extensions_are_kept_only_when_plain() {
        assert_eq!(super::extension("photo.JPG"), ".jpg");
        assert_eq!(super::extension("archive.tar.gz"), ".gz");
        assert_eq!(super::extension("no-extension"), "");
        assert_eq!(super::extension("evil.php/../x"), "");
        assert_eq!(super::extension("x.a b"), "");
    }
}
