//! The permission data model (Directus 11's policies): per policy, collection and action, rows
//! of an item filter, a validation filter, presets and a field list ([`Permission`]); a
//! caller's [`Subject`] (their policies) and [`Access`]; the snapshot's [`Rules`], loaded with
//! the schema; a collection's [`RowAccess`] in a read view. How they are enforced lives in
//! [`crate::permissions`] (docs/permissions.md); this module names no schema type, so the
//! schema snapshot can carry the rules.

use crate::validation_rule::ValidationRule;
use cdapi_proto::v1::{Filter, FilterGroup, filter};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use system_tables::permissions::PermissionRow;

/// What a permission is for (Directus's `action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Creating items.
    Create,
    /// Reading items (and counting, filtering, sorting on them).
    Read,
    /// Updating items.
    Update,
    /// Deleting items.
    Delete,
    /// Sharing items (creating a share of one: docs/shares.md).
    Share,
}

impl Action {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "create" => Self::Create,
            "read" => Self::Read,
            "update" => Self::Update,
            "delete" => Self::Delete,
            "share" => Self::Share,
            _ => return None,
        })
    }

    /// The action's name as permission rows spell it (`read`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Read => "read",
            Self::Update => "update",
            Self::Delete => "delete",
            Self::Share => "share",
        }
    }
}

/// The fields a permission row allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fields {
    /// `*`: every field (but the [`SENSITIVE`] ones, for writes).
    All,
    /// These fields only.
    Only(HashSet<String>),
    /// `*` but these: the built-in own-user row, which leaves out the custom fields a project
    /// added to `directus_users` (docs/data-model.md "Custom fields on system collections").
    AllBut(HashSet<String>),
}

impl Fields {
    /// Whether `field` is allowed (for reads; writes use [`Permission::writes`]).
    pub fn allows(&self, field: &str) -> bool {
        match self {
            Self::All => true,
            Self::Only(set) => set.contains(field),
            Self::AllBut(set) => !set.contains(field),
        }
    }

    /// Whether `field` is named explicitly (not only through `*`).
    pub fn names(&self, field: &str) -> bool {
        matches!(self, Self::Only(set) if set.contains(field))
    }

    /// The fields both allow.
    pub fn intersect(&self, other: &Self) -> Self {
        match (self, other) {
            (Self::All, x) | (x, Self::All) => x.clone(),
            (Self::Only(a), Self::Only(b)) => Self::Only(a.intersection(b).cloned().collect()),
            (Self::Only(a), Self::AllBut(b)) | (Self::AllBut(b), Self::Only(a)) => Self::Only(a.difference(b).cloned().collect()),
            (Self::AllBut(a), Self::AllBut(b)) => Self::AllBut(a.union(b).cloned().collect()),
        }
    }
}

/// Fields of system collections that only a permission row naming them may write (docs/security.md "Permissions"):
/// `*` never covers them, so a grant to edit one's name cannot become a takeover.
pub const SENSITIVE: &[(&str, &[&str])] = &[
    ("directus_users", &["password", "token", "role", "status", "email", "ip_access", "tfa_secret", "provider", "external_identifier", "policies"]),
    // What decides whose policies are whose: a role, a parent role, an access row.
    ("directus_roles", &["parent", "policies"]),
    ("directus_access", &["role", "user", "policy"]),
    ("directus_policies", &["admin_access", "app_access", "ip_access", "enforce_tfa"]),
];

/// Whether `field` of `collection` is in [`SENSITIVE`].
pub fn is_sensitive(collection: &str, field: &str) -> bool {
    SENSITIVE.iter().any(|(c, fields)| *c == collection && fields.contains(&field))
}

/// One permission row: an item filter, the fields, a validation rule and presets, which hold
/// together (see the module docs).
#[derive(Debug, Clone)]
pub struct Permission {
    /// Items the row applies to; `None` = every item.
    pub filter: Option<Arc<Filter>>,
    /// Fields the row lets its action read or write.
    pub fields: Fields,
    /// Validation rule (a Directus filter object, compiled once) a payload written through this
    /// row must pass; `None` = no rule.
    pub validation: Option<Arc<ValidationRule>>,
    /// Default values, applied under the payload on create.
    pub presets: Map<String, Value>,
}

impl Permission {
    /// Whether this row lets a write (create/update) set `field` of `collection`: listed, or
    /// covered by `*` unless [`is_sensitive`].
    pub fn writes(&self, collection: &str, field: &str) -> bool {
        if is_sensitive(collection, field) { self.fields.names(field) } else { self.fields.allows(field) }
    }
}

/// What one subject may do with one collection for one action: its permission rows (at least
/// one), kept apart.
#[derive(Debug, Clone)]
pub struct Grant {
    /// The rows, in `cdapi.permissions` order, then the built-in [`minimal`] ones.
    pub rows: Vec<Permission>,
}

impl Grant {
    /// Everything (admin access).
    pub fn everything() -> Self {
        Self { rows: vec![Permission { filter: None, fields: Fields::All, validation: None, presets: Map::new() }] }
    }

    /// The items some row applies to: the OR of the rows' filters; `None` = every item.
    pub fn row_filter(&self) -> Option<Arc<Filter>> {
        any_of(self.rows.iter().map(|r| r.filter.clone()))
    }

    /// Whether some row lets the action read `field`.
    pub fn reads(&self, field: &str) -> bool {
        self.rows.iter().any(|r| r.fields.allows(field))
    }

    /// The presets of every row, merged in row order (a later row's value wins).
    pub fn presets(&self) -> Map<String, Value> {
        let mut out = Map::new();
        for r in &self.rows {
            out.extend(r.presets.clone());
        }
        out
    }
}

/// The OR of item filters, `None` (every item) as soon as one is `None`; a single filter stays
/// itself. An empty list matches nothing.
pub fn any_of(filters: impl IntoIterator<Item = Option<Arc<Filter>>>) -> Option<Arc<Filter>> {
    let mut out = Vec::new();
    for f in filters {
        out.push(f?);
    }
    if out.len() == 1 {
        return out.pop();
    }
    Some(Arc::new(Filter { node: Some(filter::Node::Or(FilterGroup { filters: out.iter().map(|f| (**f).clone()).collect() })) }))
}

/// The AND of item filters, skipping `None` (every item); `None` when all are.
pub fn all_of(filters: impl IntoIterator<Item = Option<Arc<Filter>>>) -> Option<Arc<Filter>> {
    let mut out: Vec<Arc<Filter>> = filters.into_iter().flatten().collect();
    match out.len() {
        0 => None,
        1 => out.pop(),
        _ => Some(Arc::new(Filter { node: Some(filter::Node::And(FilterGroup { filters: out.iter().map(|f| (**f).clone()).collect() })) })),
    }
}

/// Whether `f` compares with a dynamic variable of the caller (`$CURRENT_USER`, `$CURRENT_ROLE`,
/// `$CURRENT_ROLES`, `$CURRENT_POLICIES`, with or without a path).
fn names_the_caller(f: &Filter) -> bool {
    fn caller_value(v: &cdapi_proto::v1::Value) -> bool {
        use cdapi_proto::v1::value::Kind;
        match &v.kind {
            // Also inside a list operator's comma-separated text, which the filter compiler
            // splits before reading variables (`"x,$CURRENT_USER"`).
            Some(Kind::String(s)) => s.split(',').any(|part| part.trim_start().starts_with("$CURRENT_")),
            Some(Kind::List(l)) => l.values.iter().any(caller_value),
            _ => false,
        }
    }
    match &f.node {
        Some(filter::Node::And(g) | filter::Node::Or(g)) => g.filters.iter().any(names_the_caller),
        Some(filter::Node::Condition(c)) => c.value.as_ref().is_some_and(caller_value),
        Some(filter::Node::Relation(r)) => r.filter.as_ref().is_some_and(|f| names_the_caller(f)),
        None => false,
    }
}

/// A filter matching nothing (`_or` of no filters): what a permission row whose filter cannot
/// be understood grants, so a broken rule never opens anything.
fn nothing() -> Filter {
    Filter { node: Some(filter::Node::Or(FilterGroup { filters: Vec::new() })) }
}

/// A permission row as a [`Permission`]. A filter that does not parse matches nothing (logged).
fn permission(row: PermissionRow) -> Permission {
    let filter = match row.permissions.as_ref().filter(|v| !v.is_null()) {
        None => None,
        Some(v) => match query_language::query_json::filter_from_json(v, 0) {
            Ok(f) => f.map(Arc::new),
            Err(e) => {
                tracing::warn!(id = row.id, error = %e.message, "permission filter cannot be used; it matches no item");
                Some(Arc::new(nothing()))
            }
        },
    };
    let fields = match row.fields {
        Some(list) if !list.iter().any(|f| f == "*") => Fields::Only(list.into_iter().collect()),
        Some(_) => Fields::All,
        // No list: Directus reads that as no fields; only the key can be named then.
        None => Fields::Only(HashSet::new()),
    };
    let validation = row.validation.filter(|v| v.as_object().is_some_and(|o| !o.is_empty())).map(|v| Arc::new(ValidationRule::compile(&v)));
    let presets = match row.presets {
        Some(Value::Object(o)) => o,
        _ => Map::new(),
    };
    Permission { filter, fields, validation, presets }
}

/// Every policy's grants and flags and who holds which policy, read with the schema snapshot
/// (and rebuilt with it when `cdapi.permissions`, `cdapi.policies`, `cdapi.access` or
/// `cdapi.roles` change: migrations 0006 and 0008 notify), so a policy granted or taken away
/// applies on every replica at the next rebuild.
#[derive(Debug, Default)]
pub struct Rules {
    /// Policy → (collection, action) → its permission rows.
    by_policy: HashMap<String, HashMap<(String, Action), Vec<Permission>>>,
    /// Policy → its admin access and IP allow-list.
    policies: HashMap<String, system_tables::permissions::PolicyRow>,
    /// Role → its policies (access rows with the role).
    by_role: HashMap<String, Vec<String>>,
    /// User → the policies attached to them alone.
    by_user: HashMap<String, Vec<String>>,
    /// Role → its parent role.
    parents: HashMap<String, String>,
    /// The public's policies (access rows without a role and a user).
    public: Vec<String>,
    /// The [`minimal`] rows of signed-in users, built once per snapshot.
    minimal: Vec<Minimal>,
}

/// What a caller's policies give besides permissions (Directus's `/policies/me/globals`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Globals {
    /// One policy has app access (or admin access).
    pub app_access: bool,
    /// One policy has admin access.
    pub admin_access: bool,
    /// One policy requires two-factor authentication.
    pub enforce_tfa: bool,
}

/// Whose grants (Directus 11): the rows of these policies, plus the [`minimal`] rows of a
/// signed-in user (those of [`Reach::AppAccess`] when one of the policies has app access). Two
/// callers with the same policies share their read view.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Subject {
    /// Policy ids, sorted: those of the caller that admit the client's address (for a share
    /// session: the public's, which give everything but its reads).
    pub policies: Vec<String>,
    /// A signed-in user (false: the public, and share sessions).
    pub user: bool,
    /// A signed-in user one of whose `policies` has app access.
    pub app: bool,
    /// A share session: its reads are [`ShareScope`]'s, not the policies'.
    pub share: Option<Arc<ShareScope>>,
}

/// What a share session reads (Directus 11's `getPermissionsForShare`; docs/shares.md): the
/// items reached from the shared item through relations ([`Self::reach`]), and of those only
/// what both the share's role and its creator may read: every pair of a read row of one and a
/// read row of the other gives a row with both filters and the fields both grant. Built per
/// request by `crate::permissions::share`; equal (for read views) when the share, its item and
/// both sides' policies are.
#[derive(Debug)]
pub struct ShareScope {
    /// The share's id.
    pub id: String,
    /// The shared item's collection.
    pub collection: String,
    /// The shared item's primary key.
    pub item: String,
    /// The admitted policies of the share's role (the public's when it has none); `None` when
    /// they have admin access (no bound from this side).
    pub role: Option<Vec<String>>,
    /// The admitted policies of the share's creator; `None` for admin access.
    pub creator: Option<Vec<String>>,
    /// Collection → which of its items the shared item reaches (a filter on that collection).
    /// A collection not here is not read at all.
    pub reach: Arc<ShareReach>,
}

/// What a shared item reaches: collection → the filter of its items reached.
pub type ShareReach = BTreeMap<String, Arc<Filter>>;

impl ShareScope {
    /// What makes two scopes the same (the reach follows from the item and the snapshot).
    fn identity(&self) -> ([&str; 3], [&Option<Vec<String>>; 2]) {
        ([&self.id, &self.collection, &self.item], [&self.role, &self.creator])
    }
}

impl PartialEq for ShareScope {
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl Eq for ShareScope {}

impl std::hash::Hash for ShareScope {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.identity().hash(state);
    }
}

/// Which signed-in users a built-in [`minimal`] row is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Every signed-in user: their own user, roles, policies and activity (a deliberate
    /// difference from Directus, docs/directus-compatibility.md `own-user`).
    EveryUser,
    /// Users with app access, as Directus's `appAccessMinimalPermissions`: the settings, the
    /// translations, presets, comments and notifications.
    AppAccess,
}

/// One built-in row: its collection, action, reach and permission.
type Minimal = (&'static str, Action, Reach, Permission);

impl Subject {
    /// Whether a built-in row of `reach` applies to this subject.
    fn reaches(&self, reach: Reach) -> bool {
        self.user && (reach == Reach::EveryUser || self.app)
    }
}

/// What signed-in users may do whatever their policies (Directus's app access minimum,
/// `appAccessMinimalPermissions` of its system data). Every signed-in user
/// ([`Reach::EveryUser`]): read their own user (every field but `custom_user_fields`, the custom
/// fields of `directus_users`), roles, policies and activity, and update their
/// own name, password and Studio preferences (language, appearance, themes). Users with app
/// access ([`Reach::AppAccess`], as Directus): read the settings and the translations; read the
/// presets meant for them (their own, their role's, everyone's) and keep their own; comment (on
/// items they can read, checked by `crate::write::comments`), and read, edit (the text) and delete
/// their own comments; read their notifications, set their `status` (archive) and notify
/// themselves (sender and recipient both the caller); read their own shares. Each is a row of its own, so it widens
/// nothing of the policies' rows: it reaches the caller's own rows only.
fn minimal(custom_user_fields: HashSet<String>) -> Vec<Minimal> {
    let rule = |v: Value| query_language::query_json::filter_from_json(&v, 0).ok().flatten().map(Arc::new);
    let own = |field: &str, var: &str| rule(serde_json::json!({ field: { "_eq": var } }));
    let only = |names: &[&str]| Fields::Only(names.iter().map(|n| (*n).to_owned()).collect());
    // A rule that does not compile would grant every row: fall back to none at all.
    let row = |filter: Option<Arc<Filter>>, fields| Permission {
        filter: Some(filter.unwrap_or_else(|| Arc::new(nothing()))),
        fields,
        validation: None,
        presets: Map::new(),
    };
    // A preset a user creates or keeps is their own.
    let own_preset = Arc::new(ValidationRule::compile(&serde_json::json!({"user": {"_eq": "$CURRENT_USER"}})));
    vec![
        // Not the custom fields a project added there, which only a policy grants (Directus's
        // app minimum lists its own fields likewise).
        ("directus_users", Action::Read, Reach::EveryUser, row(own("id", "$CURRENT_USER"), Fields::AllBut(custom_user_fields))),
        (
            "directus_users",
            Action::Update,
            Reach::EveryUser,
            row(
                own("id", "$CURRENT_USER"),
                only(&[
                    "first_name",
                    "last_name",
                    "password",
                    "language",
                    "appearance",
                    "theme_light",
                    "theme_dark",
                    "theme_light_overrides",
                    "theme_dark_overrides",
                ]),
            ),
        ),
        ("directus_roles", Action::Read, Reach::EveryUser, row(rule(serde_json::json!({"id": {"_in": "$CURRENT_ROLES"}})), Fields::All)),
        ("directus_activity", Action::Read, Reach::EveryUser, row(own("user", "$CURRENT_USER"), Fields::All)),
        ("directus_settings", Action::Read, Reach::AppAccess, Permission { filter: None, fields: Fields::All, validation: None, presets: Map::new() }),
        ("directus_translations", Action::Read, Reach::AppAccess, Permission { filter: None, fields: Fields::All, validation: None, presets: Map::new() }),
        ("directus_presets", Action::Read, Reach::AppAccess, row(rule(own_role_or_global_presets()), Fields::All)),
        (
            "directus_presets",
            Action::Create,
            Reach::AppAccess,
            Permission { filter: None, fields: Fields::All, validation: Some(own_preset.clone()), presets: Map::new() },
        ),
        (
            "directus_presets",
            Action::Update,
            Reach::AppAccess,
            Permission { validation: Some(own_preset.clone()), ..row(own("user", "$CURRENT_USER"), Fields::All) },
        ),
        ("directus_presets", Action::Delete, Reach::AppAccess, row(own("user", "$CURRENT_USER"), Fields::All)),
        ("directus_policies", Action::Read, Reach::EveryUser, row(rule(serde_json::json!({"id": {"_in": "$CURRENT_POLICIES"}})), Fields::All)),
        ("directus_comments", Action::Read, Reach::AppAccess, row(own("user_created", "$CURRENT_USER"), Fields::All)),
        (
            "directus_comments",
            Action::Create,
            Reach::AppAccess,
            Permission { filter: None, fields: only(&["collection", "item", "comment"]), validation: None, presets: Map::new() },
        ),
        ("directus_comments", Action::Update, Reach::AppAccess, row(own("user_created", "$CURRENT_USER"), only(&["comment"]))),
        ("directus_comments", Action::Delete, Reach::AppAccess, row(own("user_created", "$CURRENT_USER"), Fields::All)),
        ("directus_notifications", Action::Read, Reach::AppAccess, row(own("recipient", "$CURRENT_USER"), Fields::All)),
        // Notes to oneself (an export's "ready" notice is one).
        (
            "directus_notifications",
            Action::Create,
            Reach::AppAccess,
            row(
                rule(serde_json::json!({"_and": [{"recipient": {"_eq": "$CURRENT_USER"}}, {"sender": {"_eq": "$CURRENT_USER"}}]})),
                only(&["recipient", "sender", "subject", "message", "collection", "item"]),
            ),
        ),
        ("directus_notifications", Action::Update, Reach::AppAccess, row(own("recipient", "$CURRENT_USER"), only(&["status"]))),
        ("directus_shares", Action::Read, Reach::AppAccess, row(own("user_created", "$CURRENT_USER"), Fields::All)),
    ]
}

/// The presets a user reads: their own, their role's (no user) and everyone's (neither).
fn own_role_or_global_presets() -> Value {
    serde_json::json!({"_or": [
        {"user": {"_eq": "$CURRENT_USER"}},
        {"_and": [{"user": {"_null": true}}, {"role": {"_eq": "$CURRENT_ROLE"}}]},
        {"_and": [{"user": {"_null": true}}, {"role": {"_null": true}}]},
    ]})
}

impl Rules {
    /// Reads `cdapi.permissions`, `cdapi.policies`, `cdapi.access`, the roles' parents and the
    /// custom fields of `directus_users` (left out of the own-user row). Rows
    /// with an unknown action are skipped. Errors: database.
    pub async fn load(conn: &mut sqlx::PgConnection) -> Result<Self, sqlx::Error> {
        let rows = system_tables::permissions::all(&mut *conn).await?;
        let policies = system_tables::permissions::policies(&mut *conn).await?;
        let access = system_tables::permissions::access(&mut *conn).await?;
        let parents = system_tables::permissions::role_parents(&mut *conn).await?;
        let custom = system_tables::metadata::custom_system_fields(&mut *conn).await?;
        let custom_user_fields = custom.into_iter().filter(|(c, _)| c == "directus_users").map(|(_, f)| f).collect();
        let mut by_policy: HashMap<String, HashMap<(String, Action), Vec<Permission>>> = HashMap::new();
        for row in rows {
            let Some(action) = Action::parse(&row.action) else { continue };
            let key = (row.collection.clone(), action);
            by_policy.entry(row.policy.clone()).or_default().entry(key).or_default().push(permission(row));
        }
        let mut rules = Self {
            by_policy,
            policies: policies.into_iter().map(|p| (p.id.clone(), p)).collect(),
            parents: parents.into_iter().filter_map(|(id, parent)| Some((id, parent?))).collect(),
            minimal: minimal(custom_user_fields),
            ..Self::default()
        };
        for a in access {
            match (a.role, a.user) {
                (Some(role), _) => rules.by_role.entry(role).or_default().push(a.policy),
                (None, Some(user)) => rules.by_user.entry(user).or_default().push(a.policy),
                (None, None) => rules.public.push(a.policy),
            }
        }
        Ok(rules)
    }

    /// `role` and the roles above it, nearest first (`$CURRENT_ROLES`); empty without a role.
    /// A chain is cut where it would repeat (the migration refuses cycles; this never loops).
    pub fn role_chain(&self, role: Option<&str>) -> Vec<String> {
        let mut chain: Vec<String> = Vec::new();
        let mut next = role;
        while let Some(r) = next {
            if chain.iter().any(|c| c == r) {
                break;
            }
            chain.push(r.to_owned());
            next = self.parents.get(r).map(String::as_str);
        }
        chain
    }

    /// The grant of `subject` on `collection` for `action`: the rows of its policies in policy
    /// order (each in `cdapi.permissions` order), then the [`minimal`] rows of a signed-in user;
    /// `None` when there is none.
    pub fn grant(&self, subject: &Subject, collection: &str, action: Action) -> Option<Grant> {
        if let (Some(share), Action::Read) = (&subject.share, action) {
            return self.share_grant(share, collection);
        }
        let key = (collection.to_owned(), action);
        let mut rows: Vec<Permission> = subject.policies.iter().filter_map(|p| self.by_policy.get(p)?.get(&key)).flatten().cloned().collect();
        rows.extend(self.minimal.iter().filter(|(c, a, reach, _)| *c == collection && *a == action && subject.reaches(*reach)).map(|(_, _, _, r)| r.clone()));
        (!rows.is_empty()).then_some(Grant { rows })
    }

    /// A share session's read grant of `collection` ([`ShareScope`]); `None` when the shared
    /// item does not reach it or one side may not read it.
    fn share_grant(&self, share: &ShareScope, collection: &str) -> Option<Grant> {
        let reach = share.reach.get(collection)?;
        let side = |policies: &Option<Vec<String>>| -> Option<Vec<Permission>> {
            let Some(ids) = policies else { return Some(Grant::everything().rows) };
            let key = (collection.to_owned(), Action::Read);
            // A share session has no user: a rule naming the caller grants it nothing (it would
            // name nobody, which `_neq` would turn into everybody).
            let rows: Vec<Permission> = ids
                .iter()
                .filter_map(|p| self.by_policy.get(p)?.get(&key))
                .flatten()
                .filter(|r| !r.filter.as_deref().is_some_and(names_the_caller))
                .cloned()
                .collect();
            (!rows.is_empty()).then_some(rows)
        };
        let (role, creator) = (side(&share.role)?, side(&share.creator)?);
        let rows = role
            .iter()
            .flat_map(|r| {
                creator.iter().map(|c| Permission {
                    filter: all_of([r.filter.clone(), c.filter.clone(), Some(reach.clone())]),
                    fields: r.fields.intersect(&c.fields),
                    validation: None,
                    presets: Map::new(),
                })
            })
            .collect();
        Some(Grant { rows })
    }

    /// The collections `subject` has a permission row on (its policies' and the [`minimal`]
    /// ones; for a share session, also those it reads), sorted.
    pub fn collections(&self, subject: &Subject) -> Vec<String> {
        let shared = subject.share.iter().flat_map(|s| s.reach.keys().filter(|c| self.share_grant(s, c).is_some()).cloned());
        let mut out: Vec<String> = subject
            .policies
            .iter()
            .filter_map(|p| self.by_policy.get(p))
            .flat_map(|m| m.keys().map(|(c, _)| c.clone()))
            .chain(self.minimal.iter().filter(|(_, _, reach, _)| subject.reaches(*reach)).map(|(c, _, _, _)| (*c).to_owned()))
            .chain(shared)
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The policies that apply to a caller (Directus 11 `fetchPolicies`): a signed-in user's
    /// (`user`: their id, and `roles`: their [`Self::role_chain`]) attached to them or to one
    /// of those roles, or the public's (`user` `None`); keeping those whose IP allow-list admits
    /// `ip` (an IP-limited policy never applies when the address is unknown). Sorted, without
    /// duplicates.
    pub fn admitted(&self, user: Option<&str>, roles: &[String], ip: Option<std::net::IpAddr>) -> Vec<String> {
        let admits = |p: &system_tables::permissions::PolicyRow| match ip {
            Some(ip) => access_token::ip::allows(&p.ip_access, ip),
            None => p.ip_access.is_empty(),
        };
        let held: Vec<&String> = match user {
            None => self.public.iter().collect(),
            Some(user) => self.by_user.get(user).into_iter().flatten().chain(roles.iter().filter_map(|r| self.by_role.get(r)).flatten()).collect(),
        };
        let mut ids: Vec<String> = held.into_iter().filter(|id| self.policies.get(*id).is_some_and(admits)).cloned().collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// The policies of `roles` alone (a share's role and the roles above it; docs/shares.md), or
    /// the public's without roles, admitted for `ip` as [`Self::admitted`] admits them.
    pub fn role_policies(&self, roles: &[String], ip: Option<std::net::IpAddr>) -> Vec<String> {
        // The empty user id has no policies of its own: only the roles' are held.
        if roles.is_empty() { self.admitted(None, &[], ip) } else { self.admitted(Some(""), roles, ip) }
    }

    /// Who a caller with these admitted `policies` acts as: admin access when one of them has
    /// it (Directus 11 `fetchGlobalAccess`), else their grants.
    pub fn access(&self, policies: &[String], user: bool) -> Access {
        let globals = self.globals(policies);
        if globals.admin_access {
            return Access::Admin;
        }
        Access::Subject(Subject { policies: policies.to_vec(), user, app: user && globals.app_access, share: None })
    }

    /// What these admitted `policies` give besides permissions (Directus's
    /// `/policies/me/globals`).
    pub fn globals(&self, policies: &[String]) -> Globals {
        let mut g = Globals::default();
        for p in policies.iter().filter_map(|id| self.policies.get(id)) {
            g.admin_access |= p.admin_access;
            g.app_access |= p.app_access || p.admin_access;
            g.enforce_tfa |= p.enforce_tfa;
        }
        g
    }
}

/// Who a request acts as, for permissions: admin access, or a subject's grants.
#[derive(Debug, Clone)]
pub enum Access {
    /// Admin access: permissions do not apply.
    Admin,
    /// The grants of this subject (its policies) in the snapshot's rules.
    Subject(Subject),
}

/// Which items of a collection, and which of their fields, a caller may read: the item filters
/// of their permission rows (an item is visible when one matches) and, for fields only some rows
/// grant, which rows those are (the value reads as NULL on an item none of them matches).
#[derive(Debug, Clone, Default)]
pub struct RowAccess {
    /// Each read permission row's item filter; `None` = every item.
    pub filters: Vec<Option<Arc<Filter>>>,
    /// Field → indexes into `filters` of the rows granting it, for columns that not every row
    /// grants and that no unfiltered granting row makes readable everywhere.
    pub masks: BTreeMap<String, Vec<usize>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_but_leaves_out_its_fields_in_every_combination() {
        let set = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<HashSet<String>>();
        let but = Fields::AllBut(set(&["secret_note"]));
        assert!(but.allows("email") && !but.allows("secret_note") && !but.names("email"));
        assert_eq!(but.intersect(&Fields::All), but);
        assert_eq!(Fields::All.intersect(&but), but);
        assert_eq!(but.intersect(&Fields::Only(set(&["email", "secret_note"]))), Fields::Only(set(&["email"])));
        assert_eq!(Fields::Only(set(&["secret_note"])).intersect(&but), Fields::Only(set(&[])));
        assert_eq!(Fields::AllBut(set(&["a"])).intersect(&Fields::AllBut(set(&["b"]))), Fields::AllBut(set(&["a", "b"])));
    }

    fn filter(v: Value) -> Filter {
        query_language::query_json::filter_from_json(&v, 0).ok().flatten().unwrap_or_default()
    }

    #[test]
    fn rules_naming_the_caller_are_told_at_any_depth() {
        let named = [
            serde_json::json!({"owner": {"_neq": "$CURRENT_USER"}}),
            serde_json::json!({"_and": [{"status": {"_eq": "x"}}, {"author": {"role": {"_in": ["$CURRENT_ROLES"]}}}]}),
            serde_json::json!({"owner": {"_eq": "$CURRENT_USER.email"}}),
            // A list operator's comma-separated text is split before its variables are read.
            serde_json::json!({"owner": {"_nin": "x, $CURRENT_USER"}}),
            serde_json::json!({"role": {"_in": "a,$CURRENT_ROLES"}}),
        ];
        for v in named {
            assert!(names_the_caller(&filter(v.clone())), "{v}");
        }
        assert!(!names_the_caller(&filter(serde_json::json!({"status": {"_eq": "$NOW"}}))));
        assert!(!names_the_caller(&filter(serde_json::json!({"title": {"_eq": "CURRENT_USER"}}))));
    }
}
