//! The schema-management calls both edges make (Directus's `/collections`, `/fields`,
//! `/relations` in REST; `collections`, `create_fields_item`... in GraphQL): which
//! SchemaService RPC serves which resource and change, in one place.

use crate::balance::Balanced as Channel;
use cdapi_proto::ApiError;
use cdapi_proto::v1::schema_service_client::SchemaServiceClient;
use cdapi_proto::v1::{SchemaChange, SchemaTarget};

/// The resource a call is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// Collections (`/collections`).
    Collections,
    /// Fields (`/fields`).
    Fields,
    /// Relations (`/relations`).
    Relations,
}

/// A change: create or update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// `POST` / `create_<resource>_item`.
    Create,
    /// `PATCH` / `update_<resource>_item`.
    Update,
}

/// Reads `target` of `resource` (all, a collection's, or one): Directus's JSON bytes. Errors:
/// the core's.
pub async fn read(client: &mut SchemaServiceClient<Channel>, resource: Resource, target: tonic::Request<SchemaTarget>) -> Result<bytes::Bytes, ApiError> {
    let reply = match resource {
        Resource::Collections => client.read_collections(target).await?,
        Resource::Fields => client.read_fields(target).await?,
        Resource::Relations => client.read_relations(target).await?,
    };
    Ok(reply.into_inner().data)
}

/// Makes `change` to `resource`: the changed object's JSON bytes. Errors: the core's.
pub async fn change(
    client: &mut SchemaServiceClient<Channel>,
    resource: Resource,
    kind: Change,
    data: tonic::Request<SchemaChange>,
) -> Result<bytes::Bytes, ApiError> {
    let reply = match (kind, resource) {
        (Change::Create, Resource::Collections) => client.create_collection(data).await?,
        (Change::Create, Resource::Fields) => client.create_field(data).await?,
        (Change::Create, Resource::Relations) => client.create_relation(data).await?,
        (Change::Update, Resource::Collections) => client.update_collection(data).await?,
        (Change::Update, Resource::Fields) => client.update_field(data).await?,
        (Change::Update, Resource::Relations) => client.update_relation(data).await?,
    };
    Ok(reply.into_inner().data)
}

/// Deletes `target` of `resource`. Errors: the core's.
pub async fn delete(client: &mut SchemaServiceClient<Channel>, resource: Resource, target: tonic::Request<SchemaTarget>) -> Result<(), ApiError> {
    match resource {
        Resource::Collections => client.delete_collection(target).await?,
        Resource::Fields => client.delete_field(target).await?,
        Resource::Relations => client.delete_relation(target).await?,
    };
    Ok(())
}
