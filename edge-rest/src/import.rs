//! `POST /utils/import/:collection` (Directus's import; docs/history.md "Utilities"): a
//! `multipart/form-data` body whose file part is JSON (`application/json`: one array of item
//! objects) or CSV (`text/csv`, `application/vnd.ms-excel`: a header row, then one item per
//! row), as the part's own Content-Type says. Every item is created, or updated when it
//! carries the key of an item that exists, in one transaction (core `ImportItems`): a bad
//! item, a malformed file or a client gone mid-way changes nothing. Answers 200 with no body.
//!
//! CSV cells as Directus reads them: an empty cell leaves the field out; a cell holding JSON
//! other than a number (`true`, `null`, `{"a":1}`, `[1,2]`) is that JSON value; anything else
//! (numbers included) is the text.
//!
//! Budgets: the file is spooled to a temporary file first (so the core's transaction never
//! waits for a slow client), at most IMPORT_MAX_SIZE bytes (413 past it); one item at most
//! [`MAX_ITEM_BYTES`]; items go to the core in chunks of [`CHUNK_ITEMS`] or [`CHUNK_BYTES`],
//! parsed as they are sent, so memory stays flat at any size.

use crate::request::{Body, EdgeState, HttpRequest, url_query};
use bytes::Bytes;
use cdapi_proto::v1::ImportChunk;
use cdapi_proto::{ApiError, ErrorCode};
use http::header;
use serde_json::{Map, Value};
use std::io::{BufRead, BufReader, Read};
use tokio::io::AsyncWriteExt;
use warp::reply::Response;

/// Most items in one chunk sent to the core.
pub const CHUNK_ITEMS: usize = 500;
/// Most bytes of items in one chunk (a chunk is sent once it passes this).
pub const CHUNK_BYTES: usize = 1 << 20;
/// The largest single item of an import (bytes of its JSON).
pub const MAX_ITEM_BYTES: usize = 1 << 20;

/// The file formats an import takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON array of objects.
    Json,
    /// A header row, then rows.
    Csv,
}

impl Format {
    /// The format of a part's media type. Errors: UNSUPPORTED_MEDIA_TYPE, worded as Directus.
    pub fn of(media_type: &str) -> Result<Self, ApiError> {
        match media_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase().as_str() {
            "application/json" => Ok(Self::Json),
            "text/csv" | "application/vnd.ms-excel" => Ok(Self::Csv),
            other => Err(unsupported(other, "file import")),
        }
    }
}

/// UNSUPPORTED_MEDIA_TYPE as Directus words it, with its `mediaType` and `where` extensions.
fn unsupported(media_type: &str, place: &str) -> ApiError {
    let mut e = ApiError::new(ErrorCode::UnsupportedMediaType, format!("Unsupported media type \"{media_type}\" in {place}."));
    e.extensions.insert("mediaType".into(), media_type.into());
    e.extensions.insert("where".into(), place.into());
    e
}

/// A temporary file, removed when dropped.
struct Spool(std::path::PathBuf);

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `POST /utils/import/:collection`. Errors: UNSUPPORTED_MEDIA_TYPE (not multipart, a file of
/// another type), INVALID_PAYLOAD (no file part, a malformed file), CONTENT_TOO_LARGE, the
/// core's.
pub async fn import(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, collection: String) -> Result<Response, ApiError> {
    let content_type = req.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    if !crate::files::is_multipart(req) {
        return Err(unsupported(&content_type, "Content-Type header"));
    }
    let (_, token) = url_query(req)?;
    let caller = req.caller(request_id, token)?;
    let boundary = multer::parse_boundary(&content_type).map_err(|e| ApiError::invalid_payload(format!("The multipart body has no boundary: {e}")))?;
    let mut parts = multer::Multipart::new(body, boundary);
    let broken = |e: multer::Error| ApiError::invalid_payload(format!("The multipart body could not be read: {e}"));
    let (format, spool) = loop {
        let Some(mut part) = parts.next_field().await.map_err(broken)? else {
            return Err(ApiError::invalid_payload("The import holds no file"));
        };
        if part.file_name().is_none() {
            continue;
        }
        let format = Format::of(part.content_type().map(|m| m.essence_str()).unwrap_or("text/plain"))?;
        let spool = Spool(std::env::temp_dir().join(format!("cdapi-import-{}", edge_http::random::hex128().map_err(ApiError::internal_because)?)));
        let mut file = tokio::fs::File::create(&spool.0).await.map_err(|e| spool_error(&e))?;
        let mut size = 0u64;
        while let Some(chunk) = part.chunk().await.map_err(broken)? {
            size += chunk.len() as u64;
            if size > state.import_max_size {
                return Err(ApiError::new(ErrorCode::ContentTooLarge, format!("An import file is at most {} bytes (IMPORT_MAX_SIZE)", state.import_max_size)));
            }
            file.write_all(&chunk).await.map_err(|e| spool_error(&e))?;
        }
        file.flush().await.map_err(|e| spool_error(&e))?;
        break (format, spool);
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<ImportChunk>(2);
    let path = spool.0.clone();
    let parse = tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&path).map_err(|e| spool_error(&e))?;
        let mut chunks = Chunker { collection: Some(collection), tx, items: Vec::new(), count: 0 };
        match format {
            Format::Json => json_items(BufReader::new(file), &mut |item| chunks.push(item))?,
            Format::Csv => csv_items(file, &mut |item| chunks.push(item))?,
        }
        chunks.finish()
    });
    let call = caller.request(tokio_stream::wrappers::ReceiverStream::new(rx))?;
    let sent = state.long_items.clone().import_items(call).await;
    // A parse error ends the stream without `done`: the core changed nothing, and the parse
    // error is the answer.
    parse.await.map_err(ApiError::internal_because)??;
    sent?;
    drop(spool);
    let mut res = crate::reply::no_content();
    *res.status_mut() = http::StatusCode::OK;
    Ok(res)
}

fn spool_error(e: &std::io::Error) -> ApiError {
    ApiError::internal_because(format!("the import could not be spooled: {e}"))
}

/// Gathers items into chunks and sends them (from a blocking task).
struct Chunker {
    collection: Option<String>,
    tx: tokio::sync::mpsc::Sender<ImportChunk>,
    /// The chunk being gathered: `[` and items so far.
    items: Vec<u8>,
    /// How many items it holds.
    count: usize,
}

impl Chunker {
    fn push(&mut self, item: Vec<u8>) -> Result<(), ApiError> {
        if self.items.is_empty() {
            self.items.push(b'[');
        } else {
            self.items.push(b',');
        }
        self.items.extend_from_slice(&item);
        self.count += 1;
        if self.count >= CHUNK_ITEMS || self.items.len() >= CHUNK_BYTES {
            self.send(false)?;
        }
        Ok(())
    }

    fn send(&mut self, done: bool) -> Result<(), ApiError> {
        let mut items = std::mem::take(&mut self.items);
        if items.is_empty() {
            items.push(b'[');
        }
        items.push(b']');
        self.count = 0;
        let chunk = ImportChunk { collection: self.collection.take().unwrap_or_default(), items: Bytes::from(items), done };
        // The call ended (the core refused): its error is the answer.
        self.tx.blocking_send(chunk).map_err(|_| ApiError::new(ErrorCode::ServiceUnavailable, "The import was ended by the server"))
    }

    fn finish(mut self) -> Result<(), ApiError> {
        self.send(true)
    }
}

/// Calls `each` with every element of the JSON array `r` holds, as the bytes of one JSON
/// object, without reading more than one element at a time. Errors: INVALID_PAYLOAD (not an
/// array of objects, malformed JSON, an element over [`MAX_ITEM_BYTES`]).
pub fn json_items(mut r: impl BufRead, each: &mut dyn FnMut(Vec<u8>) -> Result<(), ApiError>) -> Result<(), ApiError> {
    let bad = |what: &str| ApiError::invalid_payload(format!("The import file is not a JSON array of objects: {what}"));
    let mut byte = || -> Result<Option<u8>, ApiError> {
        let mut b = [0u8; 1];
        match r.read(&mut b) {
            Ok(0) => Ok(None),
            Ok(_) => Ok(Some(b[0])),
            Err(e) => Err(spool_error(&e)),
        }
    };
    let next_significant = |byte: &mut dyn FnMut() -> Result<Option<u8>, ApiError>| -> Result<Option<u8>, ApiError> {
        loop {
            match byte()? {
                Some(b) if b.is_ascii_whitespace() => continue,
                // A byte-order mark before the array.
                Some(0xEF) | Some(0xBB) | Some(0xBF) => continue,
                other => return Ok(other),
            }
        }
    };
    if next_significant(&mut byte)? != Some(b'[') {
        return Err(bad("it does not start with ["));
    }
    let mut first = true;
    loop {
        let start = match next_significant(&mut byte)? {
            Some(b']') if first => break,
            Some(b) => b,
            None => return Err(bad("it ends early")),
        };
        first = false;
        if start != b'{' {
            return Err(bad("an element is not an object"));
        }
        // One object: count braces outside strings.
        let mut item = vec![b'{'];
        let (mut depth, mut in_string, mut escaped) = (1usize, false, false);
        while depth > 0 {
            let b = byte()?.ok_or_else(|| bad("it ends early"))?;
            item.push(b);
            if item.len() > MAX_ITEM_BYTES {
                return Err(ApiError::invalid_payload(format!("An item of the import file is larger than {MAX_ITEM_BYTES} bytes")));
            }
            match (in_string, escaped, b) {
                (true, true, _) => escaped = false,
                (true, false, b'\\') => escaped = true,
                (true, false, b'"') => in_string = false,
                (true, false, _) => {}
                (false, _, b'"') => in_string = true,
                (false, _, b'{' | b'[') => depth += 1,
                (false, _, b'}' | b']') => depth -= 1,
                _ => {}
            }
        }
        let value: Value = serde_json::from_slice(&item).map_err(|e| bad(&e.to_string()))?;
        if !value.is_object() {
            return Err(bad("an element is not an object"));
        }
        each(item)?;
        match next_significant(&mut byte)? {
            Some(b',') => continue,
            Some(b']') => break,
            _ => return Err(bad("elements must be separated by commas")),
        }
    }
    if next_significant(&mut byte)?.is_some() {
        return Err(bad("there is more after the array"));
    }
    Ok(())
}

/// Calls `each` with every row of the CSV `r` holds as a JSON object (see the module docs).
/// Errors: INVALID_PAYLOAD (malformed CSV, a row longer than the header).
pub fn csv_items(r: impl Read, each: &mut dyn FnMut(Vec<u8>) -> Result<(), ApiError>) -> Result<(), ApiError> {
    let bad = |e: csv::Error| ApiError::invalid_payload(format!("The import file is not valid CSV: {e}"));
    let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(true).from_reader(r);
    let headers: Vec<String> = reader.headers().map_err(bad)?.iter().map(|h| h.trim_start_matches('\u{feff}').trim().to_owned()).collect();
    let mut record = csv::StringRecord::new();
    while reader.read_record(&mut record).map_err(bad)? {
        if record.len() > headers.len() {
            return Err(ApiError::invalid_payload("A row of the import file has more cells than its header"));
        }
        let mut item = Map::new();
        for (name, cell) in headers.iter().zip(record.iter()) {
            if cell.is_empty() {
                continue;
            }
            let value = match serde_json::from_str::<Value>(cell) {
                Ok(Value::Number(_)) | Err(_) => Value::String(cell.to_owned()),
                Ok(v) => v,
            };
            item.insert(name.clone(), value);
        }
        let bytes = serde_json::to_vec(&Value::Object(item)).map_err(ApiError::internal_because)?;
        if bytes.len() > MAX_ITEM_BYTES {
            return Err(ApiError::invalid_payload(format!("An item of the import file is larger than {MAX_ITEM_BYTES} bytes")));
        }
        each(bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(f: impl FnOnce(&mut dyn FnMut(Vec<u8>) -> Result<(), ApiError>) -> Result<(), ApiError>) -> Result<Vec<Value>, ApiError> {
        let mut out = Vec::new();
        f(&mut |item| {
            out.push(serde_json::from_slice(&item).unwrap());
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn json_arrays_are_split_into_objects() {
        let text = "\u{feff} [ {\"a\": \"x}\\\"{\", \"b\": [1, {\"c\": 2}]} ,{}\n]\n";
        let items = collect(|each| json_items(text.as_bytes(), each)).unwrap();
        assert_eq!(items, vec![serde_json::json!({"a": "x}\"{", "b": [1, {"c": 2}]}), serde_json::json!({})]);
        assert_eq!(collect(|each| json_items("[]".as_bytes(), each)).unwrap(), Vec::<Value>::new());
        for bad in ["{}", "[1]", "[{}", "[{} {}]", "[{}] x", "", "[{\"a\": tru}]"] {
            assert_eq!(collect(|each| json_items(bad.as_bytes(), each)).unwrap_err().code, ErrorCode::InvalidPayload, "{bad}");
        }
    }

    #[test]
    fn csv_cells_are_read_as_directus_reads_them() {
        let text = "\u{feff}id, name ,flag,meta,n,none\n7,Ann,true,\"{\"\"k\"\":1}\",42,\n";
        let items = collect(|each| csv_items(text.as_bytes(), each)).unwrap();
        assert_eq!(items, vec![serde_json::json!({"id": "7", "name": "Ann", "flag": true, "meta": {"k": 1}, "n": "42"})]);
        assert!(collect(|each| csv_items("a\n1,2\n".as_bytes(), each)).is_err());
    }

    #[test]
    fn formats_follow_the_part_type() {
        assert_eq!(Format::of("application/json").unwrap(), Format::Json);
        assert_eq!(Format::of("text/csv; charset=utf-8").unwrap(), Format::Csv);
        assert_eq!(Format::of("text/plain").unwrap_err().code, ErrorCode::UnsupportedMediaType);
    }
}
