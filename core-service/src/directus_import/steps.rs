//! What the import carries over: one [`Step`] per Directus system table, in dependency order
//! (a row is copied after the rows it points at), and what it cannot carry over.

/// One Directus table copied into one of ours.
pub struct Step {
    /// The Directus table (in the served schema).
    pub source: &'static str,
    /// Our table (in `cdapi`).
    pub target: &'static str,
    /// Our columns whose value is not the same-named Directus column cast to our type: (column,
    /// SQL expression over the Directus row `s`).
    pub computed: &'static [(&'static str, &'static str)],
    /// Rows of the Directus table left out (SQL condition over `s`), e.g. actions we do not
    /// serve; they are counted and reported.
    pub skip: Option<(&'static str, &'static str)>,
    /// Our rows kept when the table is replaced (SQL condition over our table, `{src}` naming
    /// the Directus schema), e.g. the metadata of our own system collections.
    pub keep: Option<&'static str>,
    /// Statements run after every step has copied its rows (references within the table, or to
    /// a later table), over the Directus schema `{src}`.
    pub after: &'static [&'static str],
}

/// A static token as we keep it: its SHA-256 (hex), never the token (Directus keeps it in clear).
const TOKEN_HASH: &str = "CASE WHEN s.token IS NULL OR s.token = '' THEN NULL ELSE encode(sha256(convert_to(s.token, 'UTF8')), 'hex') END";

/// Directus's metadata rows of system collections not carried: all but those of the custom
/// fields [`super::custom_fields`] noted.
const CUSTOM_FIELD_SKIPPED: &str = "s.collection LIKE 'directus\\_%' AND NOT EXISTS \
    (SELECT 1 FROM cdapi.custom_system_fields c WHERE c.collection = s.collection AND c.field = s.field)";
/// As [`CUSTOM_FIELD_SKIPPED`], for relation rows (their many side).
const CUSTOM_RELATION_SKIPPED: &str = "s.many_collection LIKE 'directus\\_%' AND NOT EXISTS \
    (SELECT 1 FROM cdapi.custom_system_fields c WHERE c.collection = s.many_collection AND c.field = s.many_field)";
/// Our metadata rows of system collections kept when the table is replaced: all but those of
/// custom fields that Directus has too (carried again from Directus's rows). Our own rows stay
/// even where Directus has a custom field of that name (it is left out).
const SYSTEM_FIELD_KEPT: &str = "collection LIKE 'directus\\_%' AND NOT (\
    EXISTS (SELECT 1 FROM cdapi.custom_system_fields c WHERE c.collection = fields.collection AND c.field = fields.field) \
    AND EXISTS (SELECT 1 FROM {src}.directus_fields s WHERE s.collection = fields.collection AND s.field = fields.field))";
/// As [`SYSTEM_FIELD_KEPT`], for relation rows (their many side).
const SYSTEM_RELATION_KEPT: &str = "many_collection LIKE 'directus\\_%' AND NOT (\
    EXISTS (SELECT 1 FROM cdapi.custom_system_fields c WHERE c.collection = relations.many_collection AND c.field = relations.many_field) \
    AND EXISTS (SELECT 1 FROM {src}.directus_relations s WHERE s.many_collection = relations.many_collection AND s.many_field = relations.many_field))";

/// Every table the import carries over, parents first.
pub const STEPS: &[Step] = &[
    Step {
        source: "directus_roles",
        target: "roles",
        // Role names are unique here, not in Directus: a repeated name gets the role id's start.
        computed: &[
            ("parent", "NULL"),
            ("name", "CASE WHEN row_number() OVER (PARTITION BY s.name ORDER BY s.id) > 1 THEN s.name || ' (' || left(s.id::text, 8) || ')' ELSE s.name END"),
        ],
        skip: None,
        keep: None,
        after: &["UPDATE cdapi.roles r SET parent = s.parent FROM {src}.directus_roles s WHERE r.id = s.id AND s.parent IS NOT NULL"],
    },
    Step { source: "directus_policies", target: "policies", computed: &[], skip: None, keep: None, after: &[] },
    Step {
        source: "directus_folders",
        target: "folders",
        computed: &[("parent", "NULL")],
        skip: None,
        keep: None,
        after: &["UPDATE cdapi.folders f SET parent = s.parent FROM {src}.directus_folders s WHERE f.id = s.id AND s.parent IS NOT NULL"],
    },
    Step {
        source: "directus_users",
        target: "users",
        computed: &[("password_hash", "s.password"), ("token_hash", TOKEN_HASH), ("avatar", "NULL")],
        skip: None,
        keep: None,
        after: &[],
    },
    Step {
        source: "directus_files",
        target: "files",
        // Directus keeps tags as a JSON array in text.
        computed: &[(
            "tags",
            "CASE WHEN s.tags IS NULL OR s.tags = '' THEN NULL WHEN left(ltrim(s.tags), 1) = '[' \
             THEN ARRAY(SELECT json_array_elements_text(s.tags::json)) ELSE string_to_array(s.tags, ',') END",
        )],
        skip: None,
        keep: None,
        after: &["UPDATE cdapi.users u SET avatar = s.avatar FROM {src}.directus_users s WHERE u.id = s.id AND s.avatar IS NOT NULL"],
    },
    Step { source: "directus_access", target: "access", computed: &[], skip: None, keep: None, after: &[] },
    Step {
        source: "directus_permissions",
        target: "permissions",
        computed: &[],
        skip: Some(("s.action NOT IN ('create', 'read', 'update', 'delete', 'share')", "permissions with an action Directus 11 does not have")),
        keep: None,
        after: &[],
    },
    Step {
        source: "directus_collections",
        target: "collections",
        computed: &[("meta", "to_jsonb(s) - 'collection'")],
        skip: None,
        keep: Some("collection LIKE 'directus\\_%'"),
        after: &[],
    },
    Step {
        source: "directus_fields",
        target: "fields",
        // `special` is a comma-separated list in Directus's table, a list in its API.
        // Our metadata of our system collections keeps its rows (and ids): new ids here.
        computed: &[
            ("id", "nextval(pg_get_serial_sequence('cdapi.fields', 'id'))"),
            (
                "meta",
                "(to_jsonb(s) - 'id' - 'collection' - 'field') || jsonb_build_object('special', \
                 CASE WHEN s.special IS NULL OR s.special = '' THEN NULL ELSE to_jsonb(string_to_array(s.special, ',')) END)",
            ),
        ],
        skip: Some((CUSTOM_FIELD_SKIPPED, "fields added to Directus's system collections that take none here")),
        keep: Some(SYSTEM_FIELD_KEPT),
        after: &[],
    },
    Step {
        source: "directus_relations",
        target: "relations",
        computed: &[("id", "nextval(pg_get_serial_sequence('cdapi.relations', 'id'))")],
        skip: Some((CUSTOM_RELATION_SKIPPED, "relations of fields added to Directus's system collections that take none here")),
        keep: Some(SYSTEM_RELATION_KEPT),
        after: &[],
    },
    Step { source: "directus_presets", target: "presets", computed: &[], skip: None, keep: None, after: &[] },
    Step { source: "directus_translations", target: "translations", computed: &[], skip: None, keep: None, after: &[] },
    Step { source: "directus_dashboards", target: "dashboards", computed: &[], skip: None, keep: None, after: &[] },
    Step { source: "directus_panels", target: "panels", computed: &[], skip: None, keep: None, after: &[] },
    Step { source: "directus_versions", target: "versions", computed: &[("hash", "coalesce(s.hash, '')")], skip: None, keep: None, after: &[] },
    // A deleted user's id stays on their activity, as in Directus (no foreign key: migration 0021).
    Step { source: "directus_activity", target: "activity", computed: &[], skip: None, keep: None, after: &[] },
    Step { source: "directus_revisions", target: "revisions", computed: &[], skip: None, keep: None, after: &[] },
    Step { source: "directus_comments", target: "comments", computed: &[], skip: None, keep: None, after: &[] },
    Step { source: "directus_notifications", target: "notifications", computed: &[], skip: None, keep: None, after: &[] },
    Step { source: "directus_shares", target: "shares", computed: &[], skip: None, keep: None, after: &[] },
];

/// Directus tables the import does not carry over, with why (the dry run lists their rows).
pub const NOT_CARRIED: &[(&str, &str)] = &[
    ("directus_flows", "flows do not run here"),
    ("directus_operations", "flow operations do not run here"),
    ("directus_webhooks", "webhooks do not run here"),
    ("directus_extensions", "extensions do not run here"),
    ("directus_sessions", "sign-in sessions end: users sign in again"),
];
