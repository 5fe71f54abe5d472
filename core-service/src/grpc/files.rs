//! FilesService (`files.proto`): uploads, imports and assets, over [`crate::files`]. Deleting file items
//! is ItemsService's; it sweeps the blobs of deleted rows after each delete.

use super::request_span;
use crate::AppState;
use cdapi_proto::ApiError;
use cdapi_proto::v1::files_service_server::FilesService;
use cdapi_proto::v1::{AssetChunk, AssetRequest, ImportFileRequest, ItemResponse, UploadChunk, asset_chunk};
use std::sync::Arc;
use tonic::{Request, Response, Status, Streaming};
use tracing::Instrument;

/// The FilesService implementation.
pub struct FilesApi {
    state: Arc<AppState>,
}

impl FilesApi {
    /// Wraps the state.
    pub fn new(state: Arc<AppState>) -> Self {
        Self { state }
    }
}

#[tonic::async_trait]
impl FilesService for FilesApi {
    async fn upload_file(&self, req: Request<Streaming<UploadChunk>>) -> Result<Response<ItemResponse>, Status> {
        let span = request_span("UploadFile", &req);
        async move {
            let caller = self.state.caller(req.metadata()).await?;
            let data = crate::files::upload::upload(&self.state, &caller, req.into_inner()).await?;
            Ok(Response::new(ItemResponse { data }))
        }
        .instrument(span)
        .await
        .map_err(|e: ApiError| e.into())
    }

    async fn import_file(&self, req: Request<ImportFileRequest>) -> Result<Response<ItemResponse>, Status> {
        let span = request_span("ImportFile", &req);
        async move {
            let caller = self.state.caller(req.metadata()).await?;
            let data = crate::files::import::import(&self.state, &caller, req.get_ref()).await?;
            Ok(Response::new(ItemResponse { data }))
        }
        .instrument(span)
        .await
        .map_err(|e: ApiError| e.into())
    }

    type ReadAssetStream = tokio_stream::wrappers::ReceiverStream<Result<AssetChunk, Status>>;

    async fn read_asset(&self, req: Request<AssetRequest>) -> Result<Response<Self::ReadAssetStream>, Status> {
        let span = request_span("ReadAsset", &req);
        let (head, body) = async {
            let caller = self.state.caller(req.metadata()).await?;
            crate::files::assets::asset(&self.state, &caller, req.get_ref()).await
        }
        .instrument(span.clone())
        .await
        .map_err(|e: ApiError| Status::from(e))?;
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tokio::spawn(
            async move {
                use futures_util::StreamExt;
                if tx.send(Ok(AssetChunk { part: Some(asset_chunk::Part::Head(head)) })).await.is_err() {
                    return;
                }
                let Some(mut body) = body else { return };
                while let Some(chunk) = body.next().await {
                    let msg = chunk.map(|data| AssetChunk { part: Some(asset_chunk::Part::Data(data)) }).map_err(Status::from);
                    let failed = msg.is_err();
                    if tx.send(msg).await.is_err() || failed {
                        return;
                    }
                }
            }
            .instrument(span),
        );
        Ok(Response::new(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }
}
