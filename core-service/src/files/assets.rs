//! `ReadAsset` (`GET /assets/:id`): a file's bytes for a caller who may read its item, with a
//! strong `ETag` (`If-None-Match` → 304) and one byte `Range` (→ 206; outside the file →
//! RANGE_NOT_SATISFIABLE; several ranges or an unparsable header → the whole file, as RFC 9110
//! allows).

use super::storage_error;
use crate::auth::Caller;
use crate::query::Planner;
use crate::query::read::ReadShape;
use bytes::Bytes;
use cdapi_proto::v1::AssetHead;
use cdapi_proto::{ApiError, ErrorCode};
use futures_util::stream::BoxStream;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStoreExt as _};
use sqlx::Row as _;

/// A byte range `start..=end` of a file of `size` bytes, from a `Range` header. `Ok(None)`: serve
/// the whole file. Errors: RANGE_NOT_SATISFIABLE.
pub fn byte_range(header: &str, size: u64) -> Result<Option<(u64, u64)>, ApiError> {
    let unsatisfiable = || ApiError::new(ErrorCode::RangeNotSatisfiable, format!("Range \"{header}\" is outside the file ({size} bytes)."));
    let Some(spec) = header.trim().strip_prefix("bytes=") else { return Ok(None) };
    if spec.contains(',') {
        return Ok(None);
    }
    let Some((a, b)) = spec.trim().split_once('-') else { return Ok(None) };
    let (a, b) = (a.trim(), b.trim());
    let range = match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(start), Ok(end)) if start <= end => (start, end.min(size.saturating_sub(1))),
        (Ok(start), Err(_)) if b.is_empty() => (start, size.saturating_sub(1)),
        (Err(_), Ok(n)) if a.is_empty() && n > 0 => (size.saturating_sub(n.min(size)), size.saturating_sub(1)),
        _ => return Ok(None),
    };
    if size == 0 || range.0 >= size {
        return Err(unsatisfiable());
    }
    Ok(Some(range))
}

/// Whether an `If-None-Match` header matches `etag` (`*`, or one of its tags, weak or not).
fn matches(if_none_match: &str, etag: &str) -> bool {
    let bare = |t: &str| t.trim().trim_start_matches("W/").to_owned();
    if_none_match.split(',').any(|t| t.trim() == "*" || bare(t) == bare(etag))
}

/// The asset `id` for `caller`: its head and, unless 304, its bytes. Errors: FORBIDDEN (no
/// such file, not readable, no blob), RANGE_NOT_SATISFIABLE, SERVICE_UNAVAILABLE.
pub async fn asset(
    state: &crate::AppState,
    caller: &Caller,
    req: &cdapi_proto::v1::AssetRequest,
) -> Result<(AssetHead, Option<BoxStream<'static, Result<Bytes, ApiError>>>), ApiError> {
    let transform = super::transform::Transform::parse(&req.transform, &state.files.transformer.settings, &caller.schema.assets)?;
    // Readable by the caller: the item's key through their view (its filter applies).
    let files = caller.read.collection("directus_files").cloned().ok_or_else(ApiError::forbidden)?;
    let q = query_language::query_json::query_from_json(&serde_json::json!({"fields": ["id"]}).as_object().cloned().unwrap_or_default())?;
    let st = Planner::new(&caller.read, state.limits, &caller.vars).read(&files, ReadShape::of(&files, Some(&req.id), &q), &q)?;
    let row = st
        .sql
        .query()
        .fetch_one(&state.pool)
        .await
        .map_err(|e| if crate::db::is_data_exception(&e) { ApiError::forbidden() } else { crate::db::map_error(e) })?;
    let visible: Option<String> = row.try_get("data").map_err(crate::db::map_error)?;
    if visible.is_none() {
        return Err(ApiError::forbidden());
    }
    // Where its bytes are: read as the system (the caller need not read these fields).
    let (storage, disk, download, content_type): (String, Option<String>, String, Option<String>) =
        sqlx::query_as("SELECT storage, filename_disk, filename_download, type FROM cdapi.files WHERE id = $1::uuid")
            .bind(&req.id)
            .fetch_optional(&state.pool)
            .await
            .map_err(crate::db::map_error)?
            .ok_or_else(ApiError::forbidden)?;
    // A file of a location this process does not have is as good as missing.
    let location = state.files.location(&storage).ok_or_else(ApiError::forbidden)?;
    let disk = disk.ok_or_else(ApiError::forbidden)?;
    let path = Path::from(disk.as_str());
    let meta = match location.store.head(&path).await {
        Ok(m) => m,
        Err(object_store::Error::NotFound { .. }) => return Err(ApiError::forbidden()),
        Err(e) => return Err(storage_error(e)),
    };
    // S3 gives its ETag quoted; the local store gives a bare one.
    let tag = meta.e_tag.as_deref().map(|t| t.trim_start_matches("W/").trim_matches('"').to_owned());
    let etag = format!("\"{}\"", tag.unwrap_or_else(|| format!("{:x}-{:x}", meta.size, meta.last_modified.timestamp_micros())));
    let mut head = AssetHead {
        status: 200,
        content_type: content_type.unwrap_or_else(|| "application/octet-stream".into()),
        content_length: meta.size,
        content_range: String::new(),
        etag: etag.clone(),
        filename: download,
        last_modified: meta.last_modified.format("%a, %d %b %Y %H:%M:%S GMT").to_string(),
    };
    if let Some(t) = transform.filter(|_| head.content_type.starts_with("image/")) {
        // A transformed image: its own validator, the whole image (no ranges), from the cache
        // when it was made before.
        let etag = format!("\"{}-{}\"", etag.trim_matches('"'), &access_token::sha256_hex(&t.key())[..16]);
        head.etag = etag.clone();
        if !req.if_none_match.is_empty() && matches(&req.if_none_match, &etag) {
            head.status = 304;
            head.content_length = 0;
            return Ok((head, None));
        }
        let store = location.store.clone();
        let load = move || async move {
            let got = store.get(&path).await.map_err(storage_error)?;
            got.bytes().await.map_err(storage_error)
        };
        let (bytes, mime) = state.files.transformer.run(&format!("{}|{etag}", req.id), meta.size, &t, load).await?;
        head.content_type = mime.to_owned();
        head.content_length = bytes.len() as u64;
        use futures_util::StreamExt;
        return Ok((head, Some(futures_util::stream::once(async move { Ok(bytes) }).boxed())));
    }
    if !req.if_none_match.is_empty() && matches(&req.if_none_match, &etag) {
        head.status = 304;
        head.content_length = 0;
        return Ok((head, None));
    }
    let range = if req.range.is_empty() { None } else { byte_range(&req.range, meta.size)? };
    let mut opts = GetOptions::default();
    if let Some((start, end)) = range {
        opts.range = Some(GetRange::Bounded(start..end + 1));
        head.status = 206;
        head.content_length = end + 1 - start;
        head.content_range = format!("bytes {start}-{end}/{}", meta.size);
    }
    let got = location.store.get_opts(&path, opts).await.map_err(storage_error)?;
    use futures_util::StreamExt;
    Ok((head, Some(got.into_stream().map(|c| c.map_err(storage_error)).boxed())))
}

#[cfg(test)]
mod tests {
    use super::byte_range;

    #[test]
    fn ranges_follow_rfc_9110() {
        assert_eq!(byte_range("bytes=0-9", 100).ok().flatten(), Some((0, 9)));
        assert_eq!(byte_range("bytes=90-200", 100).ok().flatten(), Some((90, 99)));
        assert_eq!(byte_range("bytes=95-", 100).ok().flatten(), Some((95, 99)));
        assert_eq!(byte_range("bytes=-10", 100).ok().flatten(), Some((90, 99)));
        assert_eq!(byte_range("bytes=-500", 100).ok().flatten(), Some((0, 99)));
        assert_eq!(byte_range("bytes=0-1,5-6", 100).ok().flatten(), None);
        assert_eq!(byte_range("items=0-1", 100).ok().flatten(), None);
        assert_eq!(byte_range("bytes=9-1", 100).ok().flatten(), None);
        assert!(byte_range("bytes=100-", 100).is_err());
        assert!(byte_range("bytes=0-0", 0).is_err());
    }

    #[test]
    fn etags_match_weak_and_listed() {
        assert!(super::matches("\"a\"", "\"a\""));
        assert!(super::matches("W/\"a\", \"b\"", "\"a\""));
        assert!(super::matches("*", "\"a\""));
        assert!(!super::matches("\"b\"", "\"a\""));
    }
}
