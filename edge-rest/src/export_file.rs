//! `POST /utils/export/:collection` `{query, format, file?}` (Directus's export to the file
//! library; docs/history.md "Utilities"): answers 204 at once, then, in the background, reads the
//! query's items with the caller's rights (core `ExportItems`; without a `limit`, all of them,
//! as Directus), renders them in `format` (`csv`, `json`, `xml`, `yaml`: [`crate::export`]) and
//! stores the result as a file with the caller's rights (core `UploadFile`), streaming all the
//! way (flat memory at any size). The file is titled `export-<collection>-<YYYYMMDD-HHMMSS>`
//! (`file` may set its fields: `title`, `folder`, `filename_download`...). Then the caller (a
//! signed-in user with app access, who can read notifications) gets a notification: `Your export
//! of <collection> is ready` with the file, or `Your export of <collection> failed`.

use crate::request::{Body, EdgeState, HttpRequest, json_body, typed_query, url_query};
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::files_service_client::FilesServiceClient;
use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::{CreateItemRequest, ExportFormat, ExportItemsRequest, Query, ReadRequest, UploadStart};
use edge_http::balance::Balanced;
use edge_http::caller::Caller;
use serde_json::{Map, Value, json};
use warp::reply::Response;

/// `POST /utils/export/:collection`. Errors (before the 204): INVALID_PAYLOAD (no `query`
/// object, no or an unknown `format`, `file` not an object), INVALID_QUERY.
pub async fn export(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, collection: String) -> Result<Response, ApiError> {
    let (_, token) = url_query(req)?;
    let caller = req.caller(request_id, token)?;
    let body = json_body(req, body, state.max_payload_size).await?;
    let Some(Value::Object(query)) = body.get("query") else { return Err(ApiError::invalid_payload("\"query\" is required")) };
    let mut query = typed_query(query)?;
    if query.limit.is_none() {
        query.limit = Some(-1);
    }
    let format = match body.get("format").and_then(Value::as_str) {
        None => return Err(ApiError::invalid_payload("\"format\" is required")),
        Some("csv") => ExportFormat::Csv,
        Some("json") => ExportFormat::Json,
        Some("xml") => ExportFormat::Xml,
        Some("yaml") => ExportFormat::Yaml,
        Some(other) => return Err(ApiError::invalid_payload(format!("Illegal export type used: \"{other}\""))),
    };
    let file = match body.get("file") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(_) => return Err(ApiError::invalid_payload("\"file\" must be an object")),
    };
    let job = Job { items: state.long_items.clone(), files: state.files.clone(), caller, collection, query, format, file };
    tokio::spawn(edge_http::consistency::carry(job.run()));
    Ok(crate::reply::no_content())
}

/// One export running in the background.
struct Job {
    items: ItemsServiceClient<Balanced>,
    files: FilesServiceClient<Balanced>,
    caller: Caller,
    collection: String,
    query: Query,
    format: ExportFormat,
    file: Map<String, Value>,
}

impl Job {
    async fn run(self) {
        let outcome = self.store().await;
        let me = match self.me().await {
            Ok(me) => me,
            Err(e) => {
                tracing::info!(code = %e.code, "export: no user to notify");
                return;
            }
        };
        let collection = &self.collection;
        let (subject, message, item) = match outcome {
            Ok(id) => (
                format!("Your export of {collection} is ready"),
                format!("\nHello {},\n\nYour export of {collection} is ready. <a href=\"/admin/files/{id}\">Click here to view.</a>\n", me.1),
                Some(id),
            ),
            Err(e) => {
                tracing::warn!(code = %e.code, message = %e.message, collection, "export to a file failed");
                (format!("Your export of {collection} failed"), "Please contact your system administrator for more information.".to_owned(), None)
            }
        };
        let collection_field = item.as_ref().map(|_| "directus_files");
        let data = json!({"recipient": me.0, "sender": me.0, "subject": subject, "message": message, "collection": collection_field, "item": item});
        let created = async {
            let call =
                self.caller.request(CreateItemRequest { collection: "directus_notifications".into(), data: Bytes::from(data.to_string()), query: None })?;
            self.items.clone().create_item(call).await.map_err(ApiError::from)
        };
        if let Err(e) = created.await {
            tracing::warn!(code = %e.code, "export: the notification could not be created");
        }
    }

    /// Renders the items into a new file; returns its id.
    async fn store(&self) -> Result<String, ApiError> {
        let call = self.caller.request(ExportItemsRequest { collection: self.collection.clone(), query: Some(self.query.clone()) })?;
        let stream = self.items.clone().export_items(call).await?.into_inner();
        let renderer = crate::export::Renderer::new(self.format);
        let (content_type, ext) = renderer.kind();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let title = format!("export-{}-{}", self.collection, crate::export::timestamp(now));
        let mut item = self.file.clone();
        item.entry("title").or_insert_with(|| Value::String(title.clone()));
        let filename = match item.remove("filename_download") {
            Some(Value::String(name)) => name,
            _ => format!("{title}.{ext}"),
        };
        let start = UploadStart {
            item: Bytes::from(Value::Object(item).to_string()),
            filename,
            content_type: content_type.split(';').next().unwrap_or(content_type).to_owned(),
            query: Some(typed_query(&Map::from_iter([("fields".to_owned(), json!(["id"]))]))?),
            key: String::new(),
        };
        // The rendered items, then what closes the file.
        let chunks = futures_util::stream::unfold(Some((stream, renderer)), |state| async move {
            let (mut stream, mut renderer) = state?;
            match stream.message().await {
                Ok(Some(chunk)) => Some((renderer.chunk(&chunk.data).map_err(ApiError::internal_because), Some((stream, renderer)))),
                Ok(None) => Some((Ok(renderer.finish()), None)),
                Err(status) => Some((Err(ApiError::from(status)), None)),
            }
        });
        let res = crate::files::store(&self.files, &self.caller, start, chunks).await?;
        let stored: Value = serde_json::from_slice(&res.get_ref().data).map_err(ApiError::internal_because)?;
        stored["id"].as_str().map(str::to_owned).ok_or_else(ApiError::forbidden)
    }

    /// The caller's id and name (Directus's `userName`). Errors: not a signed-in user.
    async fn me(&self) -> Result<(String, String), ApiError> {
        let query = typed_query(&Map::from_iter([("fields".to_owned(), json!(["id", "first_name", "last_name", "email"]))]))?;
        let call = self.caller.request(ReadRequest { collection: "directus_users".into(), key: Some("me".into()), query: Some(query) })?;
        let res = self.items.clone().read(call).await?;
        let me: Value = serde_json::from_slice(&res.get_ref().data).map_err(ApiError::internal_because)?;
        let id = me["id"].as_str().ok_or_else(ApiError::forbidden)?.to_owned();
        let text = |k: &str| me[k].as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        let name = match (text("first_name"), text("last_name"), text("email")) {
            (Some(first), Some(last), _) => format!("{first} {last}"),
            (Some(first), None, _) => first,
            (None, _, Some(email)) => email,
            _ => "Unknown User".to_owned(),
        };
        Ok((id, name))
    }
}
