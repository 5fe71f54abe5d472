//! VersionsService: thin calls into [`crate::versions`], each in one transaction.

use super::request_span;
use crate::AppState;
use crate::permissions::Action;
use crate::versions::Versions;
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::versions_service_server::VersionsService;
use cdapi_proto::v1::*;
use std::sync::Arc;
use tonic::{Request, Response, Status};
use tracing::Instrument;

/// The VersionsService implementation.
pub struct VersionsApi {
    state: Arc<AppState>,
}

impl VersionsApi {
    /// Wraps the state.
    pub fn new(state: Arc<AppState>) -> Self {
        Self { state }
    }

    /// Runs `op` in a transaction (committed on success). The caller needs admin access or a
    /// grant for `action` on `directus_versions` (FORBIDDEN otherwise); items are read with
    /// the caller's permissions and promoted under their update grant.
    async fn run<T, F>(&self, md: &tonic::metadata::MetadataMap, action: Action, op: F) -> Result<T, ApiError>
    where
        F: for<'c> FnOnce(&'c mut Versions<'c>) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, ApiError>> + Send + 'c>>,
    {
        let caller = self.state.caller(md).await?;
        caller.access.grant(&caller.schema, "directus_versions", action)?;
        let mut tx = self.state.pool.begin().await.map_err(crate::db::map_error)?;
        let out = {
            let mut v = caller.versions(&mut tx, self.state.limits);
            op(&mut v).await?
        };
        tx.commit().await.map_err(crate::db::map_error)?;
        Ok(out)
    }
}

fn item(json: String) -> Response<ItemResponse> {
    Response::new(ItemResponse { data: Bytes::from(json) })
}

#[tonic::async_trait]
impl VersionsService for VersionsApi {
    async fn create_version(&self, req: Request<CreateVersionRequest>) -> Result<Response<ItemResponse>, Status> {
        let span = request_span("CreateVersion", &req);
        let r = req.get_ref().clone();
        self.run(req.metadata(), Action::Create, move |v| Box::pin(async move { v.create(&r.key, &r.name, &r.collection, &r.item).await }))
            .instrument(span)
            .await
            .map(item)
            .map_err(Into::into)
    }

    async fn list_versions(&self, req: Request<ListVersionsRequest>) -> Result<Response<ItemsResponse>, Status> {
        let span = request_span("ListVersions", &req);
        let r = req.get_ref().clone();
        let query = match serde_json::from_slice::<serde_json::Value>(&r.query) {
            _ if r.query.is_empty() => Ok(serde_json::Map::new()),
            Ok(serde_json::Value::Object(q)) => Ok(q),
            _ => Err(ApiError::invalid_query("The versions query must be a JSON object")),
        };
        let run = async move {
            let query = query?;
            self.run(req.metadata(), Action::Read, move |v| Box::pin(async move { v.list(&r.collection, &r.item, query).await })).await
        };
        run.instrument(span).await.map(|j| Response::new(ItemsResponse { data: Bytes::from(j) })).map_err(Into::into)
    }

    async fn read_version(&self, req: Request<VersionRef>) -> Result<Response<ItemResponse>, Status> {
        let span = request_span("ReadVersion", &req);
        let id = req.get_ref().id.clone();
        self.run(req.metadata(), Action::Read, move |v| Box::pin(async move { v.read(&id).await })).instrument(span).await.map(item).map_err(Into::into)
    }

    async fn update_version(&self, req: Request<UpdateVersionRequest>) -> Result<Response<ItemResponse>, Status> {
        let span = request_span("UpdateVersion", &req);
        let r = req.get_ref().clone();
        self.run(req.metadata(), Action::Update, move |v| Box::pin(async move { v.update(&r.id, r.key.as_deref(), r.name.as_deref()).await }))
            .instrument(span)
            .await
            .map(item)
            .map_err(Into::into)
    }

    async fn delete_version(&self, req: Request<VersionRef>) -> Result<Response<DeleteResponse>, Status> {
        let span = request_span("DeleteVersion", &req);
        let id = req.get_ref().id.clone();
        self.run(req.metadata(), Action::Delete, move |v| Box::pin(async move { v.delete(&id).await }))
            .instrument(span)
            .await
            .map(|_| Response::new(DeleteResponse {}))
            .map_err(Into::into)
    }

    async fn save_to_version(&self, req: Request<SaveToVersionRequest>) -> Result<Response<ItemResponse>, Status> {
        let span = request_span("SaveToVersion", &req);
        let r = req.get_ref().clone();
        let data: serde_json::Value = serde_json::from_slice(&r.data).map_err(|e| ApiError::invalid_payload(format!("The payload is not valid JSON: {e}")))?;
        let data = data.as_object().cloned().ok_or_else(|| ApiError::invalid_payload("The payload must be an object"))?;
        self.run(req.metadata(), Action::Update, move |v| Box::pin(async move { v.save(&r.id, &data).await }))
            .instrument(span)
            .await
            .map(item)
            .map_err(Into::into)
    }

    async fn compare_version(&self, req: Request<VersionRef>) -> Result<Response<ItemResponse>, Status> {
        let span = request_span("CompareVersion", &req);
        let id = req.get_ref().id.clone();
        self.run(req.metadata(), Action::Read, move |v| Box::pin(async move { v.compare(&id).await })).instrument(span).await.map(item).map_err(Into::into)
    }

    async fn promote_version(&self, req: Request<PromoteVersionRequest>) -> Result<Response<ItemResponse>, Status> {
        let span = request_span("PromoteVersion", &req);
        let r = req.get_ref().clone();
        self.run(req.metadata(), Action::Update, move |v| Box::pin(async move { v.promote(&r.id, r.main_hash.as_deref(), r.force).await }))
            .instrument(span)
            .await
            .map(item)
            .map_err(Into::into)
    }
}
