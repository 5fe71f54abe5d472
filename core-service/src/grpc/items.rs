//! ItemsService: reads, aggregates, exports and writes, each a thin call into the query engine
//! or the writer. Reads go through the caller's view of the snapshot, writes through their
//! grants (see [`crate::permissions`]).

use super::request_span;
use crate::AppState;
use crate::auth::Caller;
use crate::cache;
use crate::cache::reuse::Reuse;
use crate::query::Planner;
use crate::query::read::{ReadShape, ReadStatement};
use crate::schema::Collection;
use crate::write::Writer;
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::items_service_server::ItemsService;
use cdapi_proto::v1::*;
use sqlx::Row;
use std::sync::Arc;
use tonic::{Request, Response, Status};
use tracing::Instrument;

/// The ItemsService implementation over the shared application state.
pub struct Items {
    state: Arc<AppState>,
}

impl Items {
    /// Wraps the state.
    pub fn new(state: Arc<AppState>) -> Self {
        Self { state }
    }

    /// Authenticates and looks the collection up in what the caller may read: their view of
    /// the snapshot (see [`crate::permissions`]). A collection that does not exist and one the
    /// caller may not read are both FORBIDDEN (docs/data-model.md "How the database is exposed").
    async fn readable(&self, md: &tonic::metadata::MetadataMap, name: &str) -> Result<(Caller, Arc<Collection>), ApiError> {
        let caller = self.state.caller(md).await?;
        let collection = readable_in(&caller, name)?;
        Ok((caller, collection))
    }

    /// Runs a planned read of `caller`'s, on a replica that has replayed the caller's
    /// consistency token or on the primary ([`crate::replicas::Replicas::route`]); returns (data
    /// JSON, meta JSON or empty). With `by_key`, a value that cannot be of the key's type means no
    /// such item: FORBIDDEN (docs/security.md "Threat model").
    ///
    /// With the result cache on, the answer may come from it, and an answer read on the
    /// primary is stored in it ([`crate::cache`]); either may then be kept by an edge
    /// ([`Reuse`]).
    async fn run(&self, caller: &Caller, collection: &str, st: ReadStatement, by_key: bool) -> Result<(Option<String>, Bytes, Option<Reuse>), ApiError> {
        let slot = self.state.cache.lookup(&st.sql, caller.skip_cache).await;
        if let cache::Slot::Hit(value) = &slot
            && let Some((data, meta)) = cache::decode(value)
        {
            self.state.limits.check_bytes(data.as_ref().map_or(0, String::len))?;
            return Ok((data, meta, reuse_of(caller, &st.sql)));
        }
        let route = self.state.replicas.route(collection, caller.consistency).await;
        let mut on_primary = route.replica.is_none();
        let row = match st.sql.query().fetch_one(&route.pool).await {
            Err(e) if route.replica.is_some() && crate::replicas::retry_on_primary(&e) => {
                self.state.replicas.failed(&route);
                on_primary = true;
                st.sql.query().fetch_one(&self.state.pool).await
            }
            done => done,
        };
        let row = row.map_err(|e| if by_key && crate::db::is_data_exception(&e) { ApiError::forbidden() } else { crate::db::map_error(e) })?;
        let data: Option<String> = row.try_get("data").map_err(crate::db::map_error)?;
        self.state.limits.check_bytes(data.as_ref().map_or(0, String::len))?;
        let meta = meta_of(&row, st.total_count, st.filter_count)?;
        // A replica may be behind the generations the entry is stored under: only the
        // primary's answers are kept.
        let mut reuse = None;
        if let cache::Slot::Miss(key) = slot
            && on_primary
        {
            reuse = reuse_of(caller, &st.sql);
            let (cache, value) = (self.state.cache.clone(), cache::encode(data.as_deref(), &meta));
            tokio::spawn(async move { cache.store(key, value).await });
        }
        Ok((data, meta, reuse))
    }

    /// Runs a write in one transaction, committed when `op` succeeds (rolled back otherwise):
    /// the caller is authorized, the collection looked up, and `op` given the writer. With a
    /// write key ([`crate::write::keys`]) the answer is recorded under it in the same
    /// transaction, and a key already committed answers what was recorded (the work of this
    /// attempt rolled back). Errors: `op`'s, the database's, INVALID_PAYLOAD (a malformed key, or
    /// another caller's or RPC's).
    async fn in_write_tx<T, F>(&self, md: &tonic::metadata::MetadataMap, rpc: &'static str, collection: &str, op: F) -> Result<T, ApiError>
    where
        T: crate::write::keys::Answer,
        F: for<'c> FnOnce(&'c mut Writer<'c>, &'c Collection) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, ApiError>> + Send + 'c>>,
    {
        use crate::write::keys;
        let caller = self.state.caller(md).await?;
        let key = keys::WriteKey::from_metadata(md)?;
        let collection = collection_in(&caller, &caller.schema, collection)?;
        let who = caller.vars.user.as_deref().unwrap_or_default();
        let mut tx = self.state.pool.begin_with(self.state.writes.begin()).await.map_err(crate::db::map_error)?;
        let done = {
            let mut w = caller.writer(&mut tx, self.state.limits);
            op(&mut w, &collection).await
        };
        let out = match (done, &key) {
            (Ok(out), _) => out,
            (Err(e), None) => return Err(e),
            (Err(e), Some(key)) => {
                // Failing because the attempt on another replica committed first (its unique
                // values now taken, say)? Then that attempt's answer is this write's answer.
                drop(tx);
                return match keys::recorded_if_any(&self.state.pool, key, who, rpc).await {
                    Ok(Some(answer)) => T::from_bytes(answer),
                    _ => Err(e),
                };
            }
        };
        if let Some(key) = &key
            && !keys::record(&mut tx, key, who, rpc, &out.to_bytes()).await?
        {
            // Applied already (by an attempt on another replica): its answer, not a second write.
            tx.rollback().await.map_err(crate::db::map_error)?;
            return T::from_bytes(keys::recorded(&self.state.pool, key, who, rpc).await?);
        }
        tx.commit().await.map_err(crate::db::map_error)?;
        Ok(out)
    }

    /// An item as it reads in a content version: the delta applied in a transaction that is
    /// rolled back (see [`crate::versions`]).
    async fn read_in_version(&self, caller: &Caller, collection: &Collection, key: Option<&str>, version: &str, q: &Query) -> Result<Bytes, ApiError> {
        let mut tx = self.state.pool.begin().await.map_err(crate::db::map_error)?;
        let data = {
            let mut v = caller.versions(&mut tx, self.state.limits);
            v.read_item(collection, key, version, q).await?
        };
        tx.rollback().await.map_err(crate::db::map_error)?;
        Ok(Bytes::from(data))
    }

    /// Every read but the export (see `items.proto`: Read): one item, an aggregate, a singleton,
    /// a version or a list, as one reply. `/users/me` that the caller may not read answers
    /// `{"id": <the caller>}`, and for a share session `{"share": <its id>}`, as Directus's
    /// users controller does. Errors: FORBIDDEN, INVALID_QUERY, the database's.
    async fn read_reply(&self, caller: &Caller, r: &ReadRequest) -> Result<(ReadResponse, Option<Reuse>), ApiError> {
        let me = r.collection == crate::write::users::USERS && r.key.as_deref() == Some("me");
        if let (true, crate::permissions::Access::Subject(crate::permissions::Subject { share: Some(scope), .. })) = (me, &caller.access) {
            return Ok((ReadResponse { data: Bytes::from(serde_json::json!({ "share": scope.id }).to_string()), meta: Bytes::new() }, None));
        }
        match self.read_any(caller, r).await {
            Err(e) if me && e.code == cdapi_proto::ErrorCode::Forbidden => match &caller.vars.user {
                Some(id) => Ok((ReadResponse { data: Bytes::from(serde_json::json!({ "id": id }).to_string()), meta: Bytes::new() }, None)),
                None => Err(e),
            },
            other => other,
        }
    }

    /// [`Self::read_reply`] but for `/users/me`'s answer when forbidden.
    async fn read_any(&self, caller: &Caller, r: &ReadRequest) -> Result<(ReadResponse, Option<Reuse>), ApiError> {
        // `me` without a signed-in user is INVALID_CREDENTIALS before any permission check.
        let key = r.key.as_deref().map(|k| crate::write::users::resolve_me(&r.collection, k, caller.vars.user.as_deref())).transpose()?;
        let collection = readable_in(caller, &r.collection)?;
        let default = Query::default();
        let q = r.query.as_ref().unwrap_or(&default);
        let shape = ReadShape::of(&collection, key.as_deref(), q);
        let planner = Planner::new(&caller.read, self.state.limits, &caller.vars);
        let (data, meta, reuse) = match shape {
            ReadShape::Version { key, version } => (self.read_in_version(caller, &collection, key, version, q).await?, Bytes::new(), None),
            ReadShape::Singleton => {
                let (data, reuse) = self.singleton(caller, planner.read(&collection, shape, q)?, &collection, q).await?;
                (data, Bytes::new(), reuse)
            }
            ReadShape::One(_) => {
                let (data, _, reuse) = self.run(caller, &collection.name, planner.read(&collection, shape, q)?, true).await?;
                (Bytes::from(data.ok_or_else(ApiError::forbidden)?), Bytes::new(), reuse)
            }
            ReadShape::Many | ReadShape::Aggregate => {
                let (data, meta, reuse) = self.run(caller, &collection.name, planner.read(&collection, shape, q)?, false).await?;
                (Bytes::from(data.unwrap_or_else(|| "[]".into())), meta, reuse)
            }
        };
        Ok((ReadResponse { data, meta }, reuse))
    }

    /// After items of `collection` were deleted: the blobs of deleted files go (see
    /// [`crate::files::Storage::sweep`]).
    async fn deleted(&self, collection: &str) {
        if collection == "directus_files" {
            self.state.files.sweep(&self.state.pool).await;
        }
    }

    /// Runs a planned singleton read; with no row yet, the fields' defaults, as Directus answers.
    async fn singleton(&self, caller: &Caller, st: ReadStatement, collection: &Collection, q: &Query) -> Result<(Bytes, Option<Reuse>), ApiError> {
        let (data, _, reuse) = self.run(caller, &collection.name, st, false).await?;
        match data {
            Some(data) => Ok((Bytes::from(data), reuse)),
            None => {
                let defaults = crate::schema::defaults::singleton_defaults(&self.state.pool, collection, &q.fields).await.map_err(crate::db::map_error)?;
                Ok((Bytes::from(serde_json::Value::Object(defaults).to_string()), reuse))
            }
        }
    }
}

/// The payload JSON: an object, or (with `array`) an array of objects. INVALID_PAYLOAD otherwise.
fn json_object_or_array(bytes: &[u8], array: bool) -> Result<serde_json::Value, ApiError> {
    let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| ApiError::invalid_payload(format!("The payload is not valid JSON: {e}")))?;
    match (&v, array) {
        (serde_json::Value::Object(_), false) | (serde_json::Value::Array(_), true) => Ok(v),
        (_, false) => Err(ApiError::invalid_payload("The payload must be an object")),
        (_, true) => Err(ApiError::invalid_payload("The payload must be an array of objects")),
    }
}

/// The first item of a read-back JSON array (a single write reads back one item); empty when
/// the caller may not read it (see [`crate::write::Writer::read_back`]).
pub(crate) fn first(array_json: &str) -> Result<Bytes, ApiError> {
    if array_json.is_empty() {
        return Ok(Bytes::new());
    }
    let items: Vec<serde_json::Value> = serde_json::from_str(array_json).map_err(ApiError::internal_because)?;
    Ok(items.into_iter().next().map(|item| Bytes::from(item.to_string())).unwrap_or_default())
}

#[tonic::async_trait]
impl ItemsService for Items {
    async fn read(&self, req: Request<ReadRequest>) -> Result<Response<ReadResponse>, Status> {
        let span = request_span("Read", &req);
        let (reply, reuse) = async { self.read_reply(&self.state.caller(req.metadata()).await?, req.get_ref()).await }.instrument(span).await?;
        let mut response = Response::new(reply);
        if let Some(reuse) = reuse {
            reuse.stamp(response.metadata_mut());
        }
        Ok(response)
    }

    type ReadStreamStream = tokio_stream::wrappers::ReceiverStream<Result<ReadChunk, Status>>;

    /// See `items.proto`: a list streamed from the cursor (see [`super::chunks`]), any other read
    /// as one whole chunk. Planning errors are returned before the stream starts.
    async fn read_stream(&self, req: Request<ReadRequest>) -> Result<Response<Self::ReadStreamStream>, Status> {
        let span = request_span("ReadStream", &req);
        let r = req.get_ref();
        // The caller once; a list is planned here, any other read answered by `read_reply`.
        let planned = async {
            let caller = self.state.caller(req.metadata()).await?;
            let q = r.query.clone().unwrap_or_default();
            if r.key.is_none() {
                let collection = readable_in(&caller, &r.collection)?;
                if matches!(ReadShape::of(&collection, None, &q), ReadShape::Many) {
                    let st = Planner::new(&caller.read, self.state.limits, &caller.vars).read_many_rows(&collection, &q)?;
                    let pass = self.state.streams.admit(stream_owner(&caller))?;
                    let route = self.state.replicas.route(&collection.name, caller.consistency).await;
                    return Ok(Streamed::List(st, pass, route.pool));
                }
            }
            Ok::<_, ApiError>(Streamed::Whole(self.read_reply(&caller, r).await?.0))
        }
        .instrument(span.clone())
        .await?;
        let rx = match planned {
            Streamed::List(st, pass, pool) => {
                let rows =
                    ListRows { total_count: st.total_count, filter_count: st.filter_count, meta: None, first: true, bytes: 0, limits: self.state.limits };
                super::chunks::pump(pool, st.sql, rows, pass, self.state.streams.settings.stall, span)
            }
            Streamed::Whole(reply) => {
                let (tx, rx) = tokio::sync::mpsc::channel(1);
                let _ = tx.try_send(Ok(ReadChunk { data: reply.data, meta: reply.meta, whole: true }));
                rx
            }
        };
        Ok(Response::new(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    type SubscribeStream = crate::realtime::stream::Events;

    /// See `items.proto` and [`crate::realtime`].
    async fn subscribe(&self, req: Request<SubscribeRequest>) -> Result<Response<Self::SubscribeStream>, Status> {
        let span = request_span("Subscribe", &req);
        let events = crate::realtime::stream::subscribe(&self.state, req.metadata(), req.get_ref()).instrument(span).await?;
        Ok(Response::new(events))
    }

    type ExportItemsStream = tokio_stream::wrappers::ReceiverStream<Result<ExportChunk, Status>>;

    /// Streams the items of a list query as NDJSON (one JSON object per line) in chunks (see
    /// [`super::chunks`]); the edge renders the requested file format. Planning errors are
    /// returned before the stream starts; a database error ends the stream with that error.
    async fn export_items(&self, req: Request<ExportItemsRequest>) -> Result<Response<Self::ExportItemsStream>, Status> {
        let span = request_span("ExportItems", &req);
        let r = req.get_ref();
        let (caller, collection) = self.readable(req.metadata(), &r.collection).instrument(span.clone()).await?;
        let q = r.query.clone().unwrap_or_default();
        // Exports stream with flat memory: QUERY_LIMIT_MAX and the response budgets do not apply.
        let limits = crate::query::Limits { max: None, max_rows: None, max_bytes: None, ..self.state.limits };
        let sql = Planner::new(&caller.read, limits, &caller.vars).export_rows(&collection, &q)?;
        let pass = self.state.streams.admit(stream_owner(&caller))?;
        let route = self.state.replicas.route(&collection.name, caller.consistency).instrument(span.clone()).await;
        let rx = super::chunks::pump(route.pool, sql, NdjsonRows, pass, self.state.streams.settings.stall, span);
        Ok(Response::new(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    async fn create_item(&self, req: Request<CreateItemRequest>) -> Result<Response<ItemResponse>, Status> {
        let span = request_span("CreateItem", &req);
        let r = req.get_ref();
        let (data, q) = (json_object_or_array(&r.data, false)?, r.query.clone().unwrap_or_default());
        let out = self
            .in_write_tx(req.metadata(), "CreateItem", &r.collection, move |w, c| {
                Box::pin(async move {
                    let keys = crate::write::comments::create(w, c, data).await?;
                    w.read_back(c, &keys, &q).await
                })
            })
            .instrument(span)
            .await?;
        Ok(Response::new(ItemResponse { data: first(&out)? }))
    }

    async fn create_items(&self, req: Request<CreateItemsRequest>) -> Result<Response<ItemsResponse>, Status> {
        let span = request_span("CreateItems", &req);
        let r = req.get_ref();
        let (data, q) = (json_object_or_array(&r.data, true)?, r.query.clone().unwrap_or_default());
        let out = self
            .in_write_tx(req.metadata(), "CreateItems", &r.collection, move |w, c| {
                Box::pin(async move {
                    let keys = crate::write::comments::create(w, c, data).await?;
                    w.read_back(c, &keys, &q).await
                })
            })
            .instrument(span)
            .await?;
        Ok(Response::new(ItemsResponse { data: Bytes::from(out) }))
    }

    async fn update_item(&self, req: Request<UpdateItemRequest>) -> Result<Response<ItemResponse>, Status> {
        let span = request_span("UpdateItem", &req);
        let r = req.get_ref();
        let (data, q, key) = (json_object_or_array(&r.data, false)?, r.query.clone().unwrap_or_default(), r.key.clone());
        let out = self
            .in_write_tx(req.metadata(), "UpdateItem", &r.collection, move |w, c| {
                Box::pin(async move {
                    let key = crate::write::users::resolve_me(&c.name, &key, w.vars.user.as_deref())?;
                    let keys = crate::write::users::update_keys(w, c, std::slice::from_ref(&key), data).await?;
                    w.read_back(c, &keys, &q).await
                })
            })
            .instrument(span)
            .await?;
        Ok(Response::new(ItemResponse { data: first(&out)? }))
    }

    async fn update_items(&self, req: Request<UpdateItemsRequest>) -> Result<Response<ItemsResponse>, Status> {
        let span = request_span("UpdateItems", &req);
        let r = req.get_ref();
        let (data, q, selector) = (json_object_or_array(&r.data, false)?, r.query.clone().unwrap_or_default(), r.selector.clone());
        let out = self
            .in_write_tx(req.metadata(), "UpdateItems", &r.collection, move |w, c| {
                Box::pin(async move {
                    let keys = match &selector {
                        Some(update_items_request::Selector::Keys(k)) => crate::write::users::update_keys(w, c, &k.keys, data).await?,
                        Some(update_items_request::Selector::SelectorQuery(sq)) => crate::write::users::update_query(w, c, sq, data).await?,
                        None => return Err(ApiError::invalid_payload("Updating many items requires exactly one of \"keys\" or \"query\"")),
                    };
                    w.read_back(c, &keys, &q).await
                })
            })
            .instrument(span)
            .await?;
        Ok(Response::new(ItemsResponse { data: Bytes::from(out) }))
    }

    async fn update_batch(&self, req: Request<UpdateBatchRequest>) -> Result<Response<ItemsResponse>, Status> {
        let span = request_span("UpdateBatch", &req);
        let r = req.get_ref();
        let (data, q) = (json_object_or_array(&r.data, true)?, r.query.clone().unwrap_or_default());
        let out = self
            .in_write_tx(req.metadata(), "UpdateBatch", &r.collection, move |w, c| {
                Box::pin(async move {
                    let keys = w.update_batch(c, &data).await?;
                    w.read_back(c, &keys, &q).await
                })
            })
            .instrument(span)
            .await?;
        Ok(Response::new(ItemsResponse { data: Bytes::from(out) }))
    }

    async fn update_singleton(&self, req: Request<UpdateSingletonRequest>) -> Result<Response<ItemResponse>, Status> {
        let span = request_span("UpdateSingleton", &req);
        let r = req.get_ref();
        let (data, q) = (json_object_or_array(&r.data, false)?, r.query.clone().unwrap_or_default());
        let out = self
            .in_write_tx(req.metadata(), "UpdateSingleton", &r.collection, move |w, c| {
                Box::pin(async move {
                    if !c.singleton {
                        return Err(ApiError::invalid_payload(format!(
                            "\"{}\" is not a singleton: updating many items requires \"keys\" or \"query\" with \"data\"",
                            c.name
                        )));
                    }
                    w.update_singleton(c, &data).await?;
                    let read = Query { fields: q.fields, deep: q.deep, alias: q.alias, backlink: q.backlink, ..Default::default() };
                    let Some(view) = w.read.collection(&c.name).cloned() else { return Ok(String::new()) };
                    let st = Planner::new(w.read, w.limits, w.vars).read_singleton(&view, &read)?;
                    let row = st.sql.query().fetch_one(&mut *w.conn).await.map_err(crate::db::map_error)?;
                    let data: Option<String> = row.try_get("data").map_err(crate::db::map_error)?;
                    Ok(data.unwrap_or_else(|| "{}".into()))
                })
            })
            .instrument(span)
            .await?;
        Ok(Response::new(ItemResponse { data: Bytes::from(out) }))
    }

    async fn delete_item(&self, req: Request<DeleteItemRequest>) -> Result<Response<DeleteResponse>, Status> {
        let span = request_span("DeleteItem", &req);
        let r = req.get_ref();
        let key = r.key.clone();
        self.in_write_tx(req.metadata(), "DeleteItem", &r.collection, move |w, c| Box::pin(async move { w.delete_keys(c, std::slice::from_ref(&key)).await }))
            .instrument(span)
            .await?;
        self.deleted(&r.collection).await;
        Ok(Response::new(DeleteResponse {}))
    }

    async fn delete_items(&self, req: Request<DeleteItemsRequest>) -> Result<Response<DeleteResponse>, Status> {
        let span = request_span("DeleteItems", &req);
        let r = req.get_ref();
        let selector = r.selector.clone();
        self.in_write_tx(req.metadata(), "DeleteItems", &r.collection, move |w, c| {
            Box::pin(async move {
                match &selector {
                    Some(delete_items_request::Selector::Keys(k)) => w.delete_keys(c, &k.keys).await,
                    Some(delete_items_request::Selector::SelectorQuery(q)) => w.delete_query(c, q).await,
                    None => Err(ApiError::invalid_payload("Deleting many items requires \"keys\" or \"query\"")),
                }
            })
        })
        .instrument(span)
        .await?;
        self.deleted(&r.collection).await;
        Ok(Response::new(DeleteResponse {}))
    }

    async fn import_items(&self, req: Request<tonic::Streaming<ImportChunk>>) -> Result<Response<ImportResponse>, Status> {
        let span = request_span("ImportItems", &req);
        let md = req.metadata().clone();
        let mut chunks = req.into_inner();
        let first = next_chunk(&mut chunks).await?;
        let collection = first.collection.clone();
        self.in_write_tx(&md, "ImportItems", &collection, move |w, c| {
            Box::pin(async move {
                w.may_import(c)?;
                let mut chunk = first;
                loop {
                    w.import(c, &chunk.items).await?;
                    if chunk.done {
                        return Ok(());
                    }
                    chunk = next_chunk(&mut chunks).await?;
                }
            })
        })
        .instrument(span)
        .await?;
        Ok(Response::new(ImportResponse {}))
    }

    async fn sort_item(&self, req: Request<SortItemRequest>) -> Result<Response<SortItemResponse>, Status> {
        let span = request_span("SortItem", &req);
        let r = req.get_ref();
        let (item, to) = (r.item.clone(), r.to.clone());
        self.in_write_tx(req.metadata(), "SortItem", &r.collection, move |w, c| Box::pin(async move { w.sort(c, &item, &to).await.map(|_| ()) }))
            .instrument(span)
            .await?;
        Ok(Response::new(SortItemResponse {}))
    }
}

/// How long an import waits for its next chunk before giving up (and rolling back).
const IMPORT_CHUNK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The next chunk of an import. Errors: INVALID_PAYLOAD when the stream ends before its last
/// chunk or stalls past [`IMPORT_CHUNK_WAIT`]; the stream's own error.
async fn next_chunk(chunks: &mut tonic::Streaming<ImportChunk>) -> Result<ImportChunk, ApiError> {
    match tokio::time::timeout(IMPORT_CHUNK_WAIT, chunks.message()).await {
        Err(_) => Err(ApiError::invalid_payload("The import stalled; nothing was imported")),
        Ok(Err(status)) => Err(ApiError::from(status)),
        Ok(Ok(None)) => Err(ApiError::invalid_payload("The import ended before its last chunk; nothing was imported")),
        Ok(Ok(Some(chunk))) => Ok(chunk),
    }
}

/// The marks with which an edge may keep `caller`'s answer of `sql` ([`Reuse`]); `None` for a
/// caller whose answers are never kept ([`Caller::edge_reuse`]).
fn reuse_of(caller: &Caller, sql: &crate::sql::Sql) -> Option<Reuse> {
    caller.edge_reuse.then(|| Reuse::new(&sql.reads, caller.vars.user.is_some(), caller.expires_at))
}

/// `name` in what `caller` may read.
fn readable_in(caller: &Caller, name: &str) -> Result<Arc<Collection>, ApiError> {
    collection_in(caller, &caller.read, name)
}

/// `name` in `schema` (the caller's read view, or the whole snapshot for writes, whose grants
/// are checked after). Missing: FORBIDDEN alike whether the collection does not exist or the
/// caller may not reach it (docs/data-model.md "How the database is exposed"; see
/// [`ApiError::forbidden_collection`]).
fn collection_in(caller: &Caller, schema: &crate::schema::Schema, name: &str) -> Result<Arc<Collection>, ApiError> {
    schema.collection(name).cloned().ok_or_else(|| match caller.access {
        crate::permissions::Access::Admin => ApiError::forbidden(),
        crate::permissions::Access::Subject(_) => ApiError::forbidden_collection(name),
    })
}

/// What ReadStream sends: a list's rows from the cursor, or another read's one reply.
enum Streamed {
    /// A list streamed from the cursor, with its place in the stream budget and the pool
    /// (primary or replica) it reads from.
    List(ReadStatement, super::stream_budget::StreamPass, sqlx::PgPool),
    Whole(ReadResponse),
}

/// Whom a stream counts against in [`super::stream_budget`] ([`Caller::budget_key`]).
fn stream_owner(caller: &Caller) -> super::stream_budget::StreamOwner {
    super::stream_budget::StreamOwner { key: caller.budget_key(), public: caller.vars.user.is_none() }
}

/// ExportItems' rows: each row's `item`, one per line.
struct NdjsonRows;

impl super::chunks::Rows for NdjsonRows {
    type Chunk = ExportChunk;
    const ALWAYS_ONE: bool = false;

    fn row(&mut self, row: &sqlx::postgres::PgRow, buf: &mut Vec<u8>) -> Result<(), ApiError> {
        let item: String = row.try_get("item").map_err(crate::db::map_error)?;
        buf.extend_from_slice(item.as_bytes());
        buf.push(b'\n');
        Ok(())
    }

    fn chunk(&mut self, data: Bytes) -> ExportChunk {
        ExportChunk { data }
    }
}

/// ReadStream's rows ([`Planner::read_many_rows`]): items joined by commas; the counts, read
/// from the first row, go with the first chunk; RESPONSE_MAX_BYTES counts every item's bytes
/// (docs/security.md "Budgets": the same cap as a buffered read, checked as the items flow).
struct ListRows {
    total_count: bool,
    filter_count: bool,
    meta: Option<Bytes>,
    first: bool,
    bytes: usize,
    /// RESPONSE_MAX_BYTES ([`crate::query::Limits::check_bytes`]).
    limits: crate::query::Limits,
}

impl super::chunks::Rows for ListRows {
    type Chunk = ReadChunk;
    const ALWAYS_ONE: bool = true;

    fn row(&mut self, row: &sqlx::postgres::PgRow, buf: &mut Vec<u8>) -> Result<(), ApiError> {
        if self.meta.is_none() {
            self.meta = Some(meta_of(row, self.total_count, self.filter_count)?);
        }
        let Some(item) = row.try_get::<Option<String>, _>("item").map_err(crate::db::map_error)? else { return Ok(()) };
        // The array's brackets and commas count too, as in a buffered read.
        self.bytes += item.len() + 1;
        self.limits.check_bytes(self.bytes + 1)?;
        if !buf.is_empty() {
            buf.push(b',');
        }
        buf.extend_from_slice(item.as_bytes());
        Ok(())
    }

    fn chunk(&mut self, data: Bytes) -> ReadChunk {
        let meta = if std::mem::take(&mut self.first) { self.meta.clone().unwrap_or_default() } else { Bytes::new() };
        ReadChunk { data, meta, whole: false }
    }
}

/// `{"total_count":N,"filter_count":M}` as asked, from a read's row; empty when neither was.
fn meta_of(row: &sqlx::postgres::PgRow, total_count: bool, filter_count: bool) -> Result<Bytes, ApiError> {
    let mut meta = Vec::new();
    if total_count {
        let n: Option<i64> = row.try_get("total_count").map_err(crate::db::map_error)?;
        meta.push(format!("\"total_count\":{}", n.unwrap_or(0)));
    }
    if filter_count {
        let n: Option<i64> = row.try_get("filter_count").map_err(crate::db::map_error)?;
        meta.push(format!("\"filter_count\":{}", n.unwrap_or(0)));
    }
    Ok(if meta.is_empty() { Bytes::new() } else { Bytes::from(format!("{{{}}}", meta.join(","))) })
}
