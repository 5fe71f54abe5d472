//! Fields of system collections that only the server writes (docs/security.md "Server-owned
//! fields"): a file's blob (`storage`, `filename_disk`) and what the server learnt storing it
//! (`filesize`, `width`, `height`, `duration`, `charset`), who uploaded it and when, the
//! bookkeeping dates; a user's `last_access` (set at sign-in) and `created_at`. Directus marks
//! them read-only in its app (and sets them itself: `uploaded_by` is `user-created`,
//! `modified_on` `date-updated`...), yet its API lets a client holding the field write them;
//! here no client does, the administrator included: a file row pointing at another row's blob
//! would serve that blob's bytes, and deleting it would remove the blob
//! (docs/directus-compatibility.md).
//!
//! [`refuse`] runs on every payload object a write stores (create, update by key, by keys, by
//! query, batch, singleton, nested relational objects: all pass [`super::Writer`]'s permission
//! check), over REST, GraphQL and gRPC alike. Uploads and imports describe the blob themselves
//! and drop these fields from the client's parts (`crate::files::upload`).

use cdapi_proto::ApiError;
use serde_json::{Map, Value};

/// Per system collection, the fields only the server writes.
pub const SERVER_OWNED: &[(&str, &[&str])] = &[
    (
        "directus_files",
        &[
            "storage",
            "filename_disk",
            "filesize",
            "width",
            "height",
            "duration",
            "charset",
            "uploaded_by",
            "uploaded_on",
            "created_on",
            "modified_by",
            "modified_on",
        ],
    ),
    ("directus_users", &["last_access", "created_at"]),
];

/// Whether `field` of `collection` is one only the server writes ([`SERVER_OWNED`]).
pub fn is_server_owned(collection: &str, field: &str) -> bool {
    SERVER_OWNED.iter().any(|(c, fields)| *c == collection && fields.contains(&field))
}

/// INVALID_PAYLOAD when the payload object `obj` for `collection` names a server-owned field
/// (whatever its value, whoever the caller); the first such field is named.
pub fn refuse(collection: &str, obj: &Map<String, Value>) -> Result<(), ApiError> {
    match obj.keys().find(|k| is_server_owned(collection, k)) {
        Some(field) => Err(ApiError::invalid_payload(format!("Field \"{field}\" of \"{collection}\" is set by the server and cannot be written."))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn only_the_listed_fields_of_the_listed_collections_are_refused() {
        let obj = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        assert!(super::refuse("directus_files", &obj(json!({"title": "a", "filename_disk": "x"}))).is_err());
        assert!(super::refuse("directus_files", &obj(json!({"title": "a", "filename_download": "a.txt", "focal_point_x": 1}))).is_ok());
        assert!(super::refuse("directus_users", &obj(json!({"last_access": null}))).is_err());
        assert!(super::refuse("articles", &obj(json!({"filename_disk": "x", "last_access": 1}))).is_ok());
    }
}
