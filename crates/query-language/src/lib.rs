//! The query language every edge and the core read the same way (docs/query-language.md):
//! Directus's query object and filter documents, field paths and the operator catalog, parsed
//! into the typed [`cdapi_proto::v1::Query`] and [`cdapi_proto::v1::Filter`] the services
//! exchange. Apart from the generated protobuf code ([`cdapi_proto`]) so that the language can
//! change without touching the wire contract's crate.
//!
//! Layout:
//! - [`operators`]: the operator catalog every filter compiler, rule and schema derives from.
//! - [`filters`]: filter documents (JSON or GraphQL values, REST or GraphQL key spelling) → [`cdapi_proto::v1::Filter`].
//! - [`paths`]: field paths and the result key of a path (`year(published_at)` → `published_at_year`).
//! - [`query_json`]: the Directus query object (JSON, as REST and GraphQL receive it) → [`cdapi_proto::v1::Query`].

pub mod filters;
pub mod operators;
pub mod paths;
pub mod query_json;
