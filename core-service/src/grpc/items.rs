//! ItemsService: reads (this version), writes and exports answer INVALID_QUERY/not yet.

use super::request_span;
use crate::AppState;
use crate::query::read::ReadStatement;
use crate::query::{Planner, Variables};
use crate::schema::Collection;
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

    /// Authenticates, looks the collection up and checks read access (admin only until
    /// permissions land). Unknown collection and no access are both FORBIDDEN (spec rule 6).
    async fn readable(&self, md: &tonic::metadata::MetadataMap, name: &str) -> Result<(Arc<crate::schema::Schema>, Arc<Collection>, Variables), ApiError> {
        let who = self.state.auth.authenticate(md).await?;
        let schema = self.state.schema.load_full();
        let collection = schema.collection(name).cloned().ok_or_else(ApiError::forbidden)?;
        if !who.admin {
            return Err(ApiError::forbidden());
        }
        Ok((schema, collection, Variables { user: who.user, role: None }))
    }

    /// Runs a planned read; returns (data JSON, meta JSON or empty). With `by_key`, a value that
    /// cannot be of the key's type means no such item: FORBIDDEN (spec rule 6).
    async fn run(&self, st: ReadStatement, by_key: bool) -> Result<(Option<String>, Bytes), ApiError> {
        let row = st.sql.query().fetch_one(&self.state.pool).await.map_err(|e| {
            if by_key && crate::db::is_data_exception(&e) { ApiError::forbidden() } else { crate::db::map_error(e) }
        })?;
        let data: Option<String> = row.try_get("data").map_err(crate::db::map_error)?;
        let mut meta = Vec::new();
        if st.total_count {
            let n: Option<i64> = row.try_get("total_count").map_err(crate::db::map_error)?;
            meta.push(format!("\"total_count\":{}", n.unwrap_or(0)));
        }
        if st.filter_count {
            let n: Option<i64> = row.try_get("filter_count").map_err(crate::db::map_error)?;
            meta.push(format!("\"filter_count\":{}", n.unwrap_or(0)));
        }
        let meta = if meta.is_empty() { Bytes::new() } else { Bytes::from(format!("{{{}}}", meta.join(","))) };
        Ok((data, meta))
    }

    async fn singleton(&self, collection: &Collection, schema: &crate::schema::Schema, vars: &Variables, q: &Query) -> Result<Bytes, ApiError> {
        let st = Planner::new(schema, self.state.limits, vars).read_singleton(collection, q)?;
        let (data, _) = self.run(st, false).await?;
        // No row yet: Directus answers an object of the fields' defaults; ours are null.
        Ok(Bytes::from(data.unwrap_or_else(|| "{}".to_owned())))
    }
}

fn not_yet<T>(what: &str) -> Result<Response<T>, Status> {
    Err(ApiError::new(cdapi_proto::ErrorCode::MethodNotAllowed, format!("{what} is not available yet.")).into())
}

#[tonic::async_trait]
impl ItemsService for Items {
    async fn read_items(&self, req: Request<ReadItemsRequest>) -> Result<Response<ReadItemsResponse>, Status> {
        let span = request_span("ReadItems", &req);
        async move {
            let (schema, collection, vars) = self.readable(req.metadata(), &req.get_ref().collection).await?;
            let q = req.get_ref().query.clone().unwrap_or_default();
            if collection.singleton {
                let data = self.singleton(&collection, &schema, &vars, &q).await?;
                return Ok(Response::new(ReadItemsResponse { data, meta: Bytes::new() }));
            }
            let st = Planner::new(&schema, self.state.limits, &vars).read_many(&collection, &q)?;
            let (data, meta) = self.run(st, false).await?;
            Ok(Response::new(ReadItemsResponse { data: Bytes::from(data.unwrap_or_else(|| "[]".into())), meta }))
        }
        .instrument(span)
        .await
        .map_err(|e: ApiError| e.into())
    }

    async fn read_item(&self, req: Request<ReadItemRequest>) -> Result<Response<ItemResponse>, Status> {
        let span = request_span("ReadItem", &req);
        async move {
            let r = req.get_ref();
            let (schema, collection, vars) = self.readable(req.metadata(), &r.collection).await?;
            let q = r.query.clone().unwrap_or_default();
            let st = Planner::new(&schema, self.state.limits, &vars).read_one(&collection, &r.key, &q)?;
            let (data, _) = self.run(st, true).await?;
            let data = data.ok_or_else(ApiError::forbidden)?;
            Ok(Response::new(ItemResponse { data: Bytes::from(data) }))
        }
        .instrument(span)
        .await
        .map_err(|e: ApiError| e.into())
    }

    async fn read_singleton(&self, req: Request<ReadSingletonRequest>) -> Result<Response<ItemResponse>, Status> {
        let span = request_span("ReadSingleton", &req);
        async move {
            let r = req.get_ref();
            let (schema, collection, vars) = self.readable(req.metadata(), &r.collection).await?;
            if !collection.singleton {
                return Err(ApiError::invalid_query(format!("Collection \"{}\" is not a singleton", collection.name)));
            }
            let data = self.singleton(&collection, &schema, &vars, &r.query.clone().unwrap_or_default()).await?;
            Ok(Response::new(ItemResponse { data }))
        }
        .instrument(span)
        .await
        .map_err(|e: ApiError| e.into())
    }

    async fn aggregate(&self, req: Request<ReadItemsRequest>) -> Result<Response<ReadItemsResponse>, Status> {
        let span = request_span("Aggregate", &req);
        async move {
            let (schema, collection, vars) = self.readable(req.metadata(), &req.get_ref().collection).await?;
            let q = req.get_ref().query.clone().unwrap_or_default();
            let st = Planner::new(&schema, self.state.limits, &vars).aggregate(&collection, &q)?;
            let (data, meta) = self.run(st, false).await?;
            Ok(Response::new(ReadItemsResponse { data: Bytes::from(data.unwrap_or_else(|| "[]".into())), meta }))
        }
        .instrument(span)
        .await
        .map_err(|e: ApiError| e.into())
    }

    type ExportItemsStream = tokio_stream::wrappers::ReceiverStream<Result<ExportChunk, Status>>;

    /// Streams the items of a list query as NDJSON (one JSON object per line) in chunks of about
    /// 64 KiB; the edge renders the requested file format. Rows flow from the database cursor
    /// through a small channel, so memory stays flat whatever the size. Planning errors are
    /// returned before the stream starts; a database error ends the stream with that error.
    async fn export_items(&self, req: Request<ExportItemsRequest>) -> Result<Response<Self::ExportItemsStream>, Status> {
        let span = request_span("ExportItems", &req);
        let r = req.get_ref();
        let (schema, collection, vars) = self.readable(req.metadata(), &r.collection).instrument(span.clone()).await?;
        let q = r.query.clone().unwrap_or_default();
        let sql = Planner::new(&schema, self.state.limits, &vars).export_rows(&collection, &q)?;
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let pool = self.state.pool.clone();
        tokio::spawn(
            async move {
                use futures_util::StreamExt;
                const CHUNK: usize = 64 * 1024;
                let mut rows = sql.query().fetch(&pool);
                let mut buf = Vec::with_capacity(CHUNK + 4096);
                while let Some(row) = rows.next().await {
                    let item = row.and_then(|row| row.try_get::<String, _>("item"));
                    match item {
                        Ok(item) => {
                            buf.extend_from_slice(item.as_bytes());
                            buf.push(b'\n');
                        }
                        Err(e) => {
                            let _ = tx.send(Err(crate::db::map_error(e).into())).await;
                            return;
                        }
                    }
                    if buf.len() >= CHUNK {
                        let chunk = ExportChunk { data: Bytes::from(std::mem::take(&mut buf)) };
                        if tx.send(Ok(chunk)).await.is_err() {
                            return; // the client went away
                        }
                        buf.reserve(CHUNK + 4096);
                    }
                }
                if !buf.is_empty() {
                    let _ = tx.send(Ok(ExportChunk { data: Bytes::from(buf) })).await;
                }
            }
            .instrument(span),
        );
        Ok(Response::new(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    async fn create_item(&self, _: Request<CreateItemRequest>) -> Result<Response<ItemResponse>, Status> {
        not_yet("Creating items")
    }
    async fn create_items(&self, _: Request<CreateItemsRequest>) -> Result<Response<ItemsResponse>, Status> {
        not_yet("Creating items")
    }
    async fn update_item(&self, _: Request<UpdateItemRequest>) -> Result<Response<ItemResponse>, Status> {
        not_yet("Updating items")
    }
    async fn update_items(&self, _: Request<UpdateItemsRequest>) -> Result<Response<ItemsResponse>, Status> {
        not_yet("Updating items")
    }
    async fn update_singleton(&self, _: Request<UpdateSingletonRequest>) -> Result<Response<ItemResponse>, Status> {
        not_yet("Updating items")
    }
    async fn delete_item(&self, _: Request<DeleteItemRequest>) -> Result<Response<DeleteResponse>, Status> {
        not_yet("Deleting items")
    }
    async fn delete_items(&self, _: Request<DeleteItemsRequest>) -> Result<Response<DeleteResponse>, Status> {
        not_yet("Deleting items")
    }
}
