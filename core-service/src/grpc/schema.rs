//! SchemaService: the snapshot as protobuf, reload on demand (admin only), and a stream of
//! snapshots for the edges that generate their API from it.

use super::request_span;
use super::schema_admin::{self as admin_rpc, Kind};
use crate::AppState;
use crate::schema::{FieldRelation, Schema};
use cdapi_proto::ApiError;
use cdapi_proto::v1::schema_service_server::SchemaService;
use cdapi_proto::v1::{
    self as pb, CallerAccessRequest, GetSchemaRequest, ItemAccessRequest, ReloadSchemaRequest, SchemaChange, SchemaDeleted, SchemaReply, SchemaSnapshot,
    SchemaTarget, WatchSchemaRequest,
};
use std::sync::Arc;
use tonic::{Request, Response, Status};
use tracing::Instrument;

/// The SchemaService implementation.
pub struct SchemaApi {
    state: Arc<AppState>,
}

impl SchemaApi {
    /// Wraps the state.
    pub fn new(state: Arc<AppState>) -> Self {
        Self { state }
    }

    async fn read(&self, rpc: &'static str, kind: Kind, req: Request<SchemaTarget>) -> Result<Response<SchemaReply>, Status> {
        let span = request_span(rpc, &req);
        admin_rpc::read(&self.state, req.metadata(), kind, req.get_ref()).instrument(span).await.map(Response::new).map_err(|e| e.into())
    }

    async fn create(&self, rpc: &'static str, kind: Kind, req: Request<SchemaChange>) -> Result<Response<SchemaReply>, Status> {
        let span = request_span(rpc, &req);
        admin_rpc::create(&self.state, req.metadata(), kind, req.get_ref()).instrument(span).await.map(Response::new).map_err(|e| e.into())
    }

    async fn update(&self, rpc: &'static str, kind: Kind, req: Request<SchemaChange>) -> Result<Response<SchemaReply>, Status> {
        let span = request_span(rpc, &req);
        admin_rpc::update(&self.state, req.metadata(), kind, req.get_ref()).instrument(span).await.map(Response::new).map_err(|e| e.into())
    }

    async fn delete(&self, rpc: &'static str, kind: Kind, req: Request<SchemaTarget>) -> Result<Response<SchemaDeleted>, Status> {
        let span = request_span(rpc, &req);
        admin_rpc::delete(&self.state, req.metadata(), kind, req.get_ref())
            .instrument(span)
            .await
            .map(|()| Response::new(SchemaDeleted {}))
            .map_err(|e| e.into())
    }
}

/// A field's relation as the contract's `oneof` (`schema.proto` `Field.relation`).
fn field_relation(r: &FieldRelation) -> pb::field::Relation {
    match r {
        FieldRelation::M2O { related, related_field, junction_field } => pb::field::Relation::M2o(pb::ManyToOne {
            related_collection: related.clone(),
            related_field: related_field.clone(),
            junction_field: junction_field.clone().unwrap_or_default(),
        }),
        FieldRelation::O2M { related, related_field, junction_field, .. } => pb::field::Relation::O2m(pb::OneToMany {
            related_collection: related.clone(),
            related_field: related_field.clone(),
            junction_field: junction_field.clone().unwrap_or_default(),
        }),
        FieldRelation::M2A { collection_field, allowed } => {
            pb::field::Relation::M2a(pb::ManyToAny { collection_field: collection_field.clone(), allowed_collections: allowed.clone() })
        }
    }
}

/// The snapshot as its protobuf message: each field with its relation, and the relations listed
/// once more in Directus's shape (from their many side).
pub fn to_proto(schema: &Schema) -> SchemaSnapshot {
    let mut relations = Vec::new();
    let collections = schema
        .collections
        .values()
        .map(|c| {
            for f in &c.fields {
                if let Some(FieldRelation::M2A { collection_field, allowed }) = &f.relation {
                    relations.push(pb::Relation {
                        kind: pb::RelationKind::M2a as i32,
                        many_collection: c.name.clone(),
                        many_field: f.name.clone(),
                        one_collection_field: collection_field.clone(),
                        one_allowed_collections: allowed.clone(),
                        ..Default::default()
                    });
                }
                if let Some(FieldRelation::M2O { related, junction_field, .. }) = &f.relation {
                    let one_field = schema
                        .collection(related)
                        .and_then(|r| {
                            r.fields.iter().find(|a| {
                                matches!(&a.relation, Some(FieldRelation::O2M { related, related_field, .. })
                                    if *related == c.name && *related_field == f.name)
                            })
                        })
                        .map(|a| a.name.clone())
                        .unwrap_or_default();
                    relations.push(pb::Relation {
                        kind: if junction_field.is_some() { pb::RelationKind::M2m } else { pb::RelationKind::M2o } as i32,
                        many_collection: c.name.clone(),
                        many_field: f.name.clone(),
                        one_collection: related.clone(),
                        one_field,
                        junction_field: junction_field.clone().unwrap_or_default(),
                        ..Default::default()
                    });
                }
            }
            pb::Collection {
                name: c.name.clone(),
                primary_key: c.primary_key.clone(),
                singleton: c.singleton,
                read_only: c.read_only,
                fields: c
                    .fields
                    .iter()
                    .map(|f| pb::Field {
                        name: f.name.clone(),
                        r#type: f.field_type as i32,
                        db_type: f.db_type.clone(),
                        nullable: f.nullable,
                        has_default: f.has_default,
                        primary_key: f.primary_key,
                        enum_values: f.enum_values.clone(),
                        max_length: f.max_length,
                        item_type: f.item_type as i32,
                        relation: f.relation.as_ref().map(field_relation),
                    })
                    .collect(),
            }
        })
        .collect();
    SchemaSnapshot { version: schema.version, collections, relations }
}

/// The stream of [`SchemaService::watch_schema`]: snapshots, each sent once.
pub type SnapshotStream = std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<SchemaSnapshot, Status>> + Send>>;

/// The current snapshot, then one per new version, until the server stops. Versions that come
/// faster than the client reads are folded into the newest.
fn snapshots(state: Arc<AppState>) -> SnapshotStream {
    let changed = state.schema_changed.subscribe();
    let stopping = state.stopping.subscribe();
    let stream = futures_util::stream::unfold((state, changed, stopping, true), |(state, mut changed, mut stopping, first)| async move {
        if !first {
            tokio::select! {
                r = changed.changed() => r.ok()?,
                _ = stopping.wait_for(|s| *s) => return None,
            }
        }
        if *stopping.borrow() {
            return None;
        }
        changed.borrow_and_update();
        let snapshot = to_proto(&state.schema.load());
        Some((Ok(snapshot), (state, changed, stopping, false)))
    });
    Box::pin(stream)
}

#[tonic::async_trait]
impl SchemaService for SchemaApi {
    type WatchSchemaStream = SnapshotStream;

    async fn read_collections(&self, req: Request<SchemaTarget>) -> Result<Response<SchemaReply>, Status> {
        self.read("ReadCollections", Kind::Collections, req).await
    }
    async fn create_collection(&self, req: Request<SchemaChange>) -> Result<Response<SchemaReply>, Status> {
        self.create("CreateCollection", Kind::Collections, req).await
    }
    async fn update_collection(&self, req: Request<SchemaChange>) -> Result<Response<SchemaReply>, Status> {
        self.update("UpdateCollection", Kind::Collections, req).await
    }
    async fn delete_collection(&self, req: Request<SchemaTarget>) -> Result<Response<SchemaDeleted>, Status> {
        self.delete("DeleteCollection", Kind::Collections, req).await
    }
    async fn read_fields(&self, req: Request<SchemaTarget>) -> Result<Response<SchemaReply>, Status> {
        self.read("ReadFields", Kind::Fields, req).await
    }
    async fn create_field(&self, req: Request<SchemaChange>) -> Result<Response<SchemaReply>, Status> {
        self.create("CreateField", Kind::Fields, req).await
    }
    async fn update_field(&self, req: Request<SchemaChange>) -> Result<Response<SchemaReply>, Status> {
        self.update("UpdateField", Kind::Fields, req).await
    }
    async fn delete_field(&self, req: Request<SchemaTarget>) -> Result<Response<SchemaDeleted>, Status> {
        self.delete("DeleteField", Kind::Fields, req).await
    }
    async fn read_relations(&self, req: Request<SchemaTarget>) -> Result<Response<SchemaReply>, Status> {
        self.read("ReadRelations", Kind::Relations, req).await
    }
    async fn create_relation(&self, req: Request<SchemaChange>) -> Result<Response<SchemaReply>, Status> {
        self.create("CreateRelation", Kind::Relations, req).await
    }
    async fn update_relation(&self, req: Request<SchemaChange>) -> Result<Response<SchemaReply>, Status> {
        self.update("UpdateRelation", Kind::Relations, req).await
    }
    async fn delete_relation(&self, req: Request<SchemaTarget>) -> Result<Response<SchemaDeleted>, Status> {
        self.delete("DeleteRelation", Kind::Relations, req).await
    }
    async fn read_snapshot(&self, req: Request<CallerAccessRequest>) -> Result<Response<SchemaReply>, Status> {
        let span = request_span("ReadSnapshot", &req);
        admin_rpc::read_snapshot(&self.state, req.metadata()).instrument(span).await.map(Response::new).map_err(|e| e.into())
    }
    async fn diff_snapshot(&self, req: Request<pb::SnapshotDiffRequest>) -> Result<Response<SchemaReply>, Status> {
        let span = request_span("DiffSnapshot", &req);
        admin_rpc::diff_snapshot(&self.state, req.metadata(), req.get_ref()).instrument(span).await.map(Response::new).map_err(|e| e.into())
    }
    async fn apply_diff(&self, req: Request<SchemaChange>) -> Result<Response<pb::SchemaApplied>, Status> {
        let span = request_span("ApplyDiff", &req);
        admin_rpc::apply_diff(&self.state, req.metadata(), req.get_ref())
            .instrument(span)
            .await
            .map(|()| Response::new(pb::SchemaApplied {}))
            .map_err(|e| e.into())
    }
    async fn read_caller_permissions(&self, req: Request<CallerAccessRequest>) -> Result<Response<SchemaReply>, Status> {
        let span = request_span("ReadCallerPermissions", &req);
        admin_rpc::caller_permissions(&self.state, req.metadata()).instrument(span).await.map(Response::new).map_err(|e| e.into())
    }
    async fn read_caller_globals(&self, req: Request<CallerAccessRequest>) -> Result<Response<SchemaReply>, Status> {
        let span = request_span("ReadCallerGlobals", &req);
        admin_rpc::caller_globals(&self.state, req.metadata()).instrument(span).await.map(Response::new).map_err(|e| e.into())
    }

    async fn read_project_info(&self, req: Request<CallerAccessRequest>) -> Result<Response<SchemaReply>, Status> {
        let span = request_span("ReadProjectInfo", &req);
        admin_rpc::project_info(&self.state).instrument(span).await.map(Response::new).map_err(|e| e.into())
    }

    async fn read_item_access(&self, req: Request<ItemAccessRequest>) -> Result<Response<SchemaReply>, Status> {
        let span = request_span("ReadItemAccess", &req);
        admin_rpc::item_access(&self.state, req.metadata(), req.get_ref()).instrument(span).await.map(Response::new).map_err(|e| e.into())
    }

    async fn watch_schema(&self, req: Request<WatchSchemaRequest>) -> Result<Response<Self::WatchSchemaStream>, Status> {
        let _span = request_span("WatchSchema", &req).entered();
        tracing::info!("schema watcher connected");
        Ok(Response::new(snapshots(self.state.clone())))
    }

    async fn get_schema(&self, req: Request<GetSchemaRequest>) -> Result<Response<SchemaSnapshot>, Status> {
        let span = request_span("GetSchema", &req);
        async move {
            // The caller's read view: what their role may read (the whole snapshot for admins).
            let caller = self.state.caller(req.metadata()).await?;
            Ok(Response::new(to_proto(&caller.read)))
        }
        .instrument(span)
        .await
        .map_err(|e: ApiError| e.into())
    }

    async fn reload_schema(&self, req: Request<ReloadSchemaRequest>) -> Result<Response<SchemaSnapshot>, Status> {
        let span = request_span("ReloadSchema", &req);
        async move {
            admin_rpc::admin(&self.state, req.metadata()).await?;
            let schema = self.state.reload_schema().await?;
            Ok(Response::new(to_proto(&schema)))
        }
        .instrument(span)
        .await
        .map_err(|e: ApiError| e.into())
    }
}
