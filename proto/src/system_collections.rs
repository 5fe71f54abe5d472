//! The system collections: the tables of the system schema served as `directus_<table>`
//! (Directus 11's system collections, docs/compatibility.md). This list is the one declaration
//! of which system tables are served and which answer at Directus's REST path `/<table>`; a new
//! system collection is its migration (the table, its field metadata and relation rows), a line
//! here and, when every signed-in user gets some of it, its minimal permission rows.

/// One served system table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemCollection {
    /// The table in the system schema; the collection is `directus_<table>`.
    pub table: &'static str,
    /// Served as items at `/<table>` and `/<table>/:key` (false: it has routes of its own, as
    /// `/versions`, or none).
    pub rest_items: bool,
}

const fn items(table: &'static str) -> SystemCollection {
    SystemCollection { table, rest_items: true }
}

/// Every served system table, in Directus's collection order.
pub const SYSTEM_COLLECTIONS: &[SystemCollection] = &[
    items("access"),
    items("activity"),
    items("comments"),
    items("dashboards"),
    items("files"),
    items("folders"),
    items("notifications"),
    items("panels"),
    items("permissions"),
    items("policies"),
    items("presets"),
    items("revisions"),
    items("roles"),
    items("settings"),
    items("shares"),
    items("translations"),
    items("users"),
    SystemCollection { table: "versions", rest_items: false },
];

/// The served system tables' names (bound as the introspection's `text[]`).
pub fn served_tables() -> Vec<&'static str> {
    SYSTEM_COLLECTIONS.iter().map(|c| c.table).collect()
}

/// The collection `/<segment>` serves as items (`"users"` → `directus_users`), if any.
pub fn rest_items_collection(segment: &str) -> Option<String> {
    SYSTEM_COLLECTIONS.iter().find(|c| c.rest_items && c.table == segment).map(|c| format!("directus_{}", c.table))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rest_paths_name_item_collections_only() {
        assert_eq!(rest_items_collection("settings").as_deref(), Some("directus_settings"));
        assert_eq!(rest_items_collection("versions"), None);
        assert_eq!(rest_items_collection("notification_mail"), None);
        assert!(served_tables().contains(&"versions"));
    }
}
