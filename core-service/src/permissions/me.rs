//! What a caller may do, summed up per collection and action (Directus 11's
//! `GET /permissions/me`; Directus docs "Permissions"): for the Directus app and SDK to
//! decide what to show, never used to decide a request.

use super::{Access, Action, Fields, Rules};
use crate::schema::Schema;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// The actions Directus reports.
const ACTIONS: [&str; 5] = ["create", "read", "update", "delete", "share"];

/// `{<collection>: {<action>: {access, fields?, presets?}}}`. `access` is `full` when one row
/// applies to every item, `partial` when every row has an item filter, `none` without a row
/// (Directus marks an action `partial` as soon as one row has a filter, even when another row
/// has none; a row without a filter reaches every item, so it is `full` here). `fields` is the
/// union of the rows' lists (`["*"]` when one has `*`; a row of every field but some lists the
/// others by name); `presets` merges them in row order.
/// Admin access: every collection of the snapshot, every action `full` with `["*"]`.
pub fn collection_access(schema: &Schema, access: &Access) -> Value {
    let subject = match access {
        Access::Admin => {
            let all: Map<String, Value> = ACTIONS.iter().map(|a| ((*a).to_owned(), json!({"access": "full", "fields": ["*"]}))).collect();
            return Value::Object(schema.base().collections.keys().map(|c| (c.clone(), Value::Object(all.clone()))).collect());
        }
        Access::Subject(subject) => subject,
    };
    let rules: &Rules = &schema.base().permissions;
    let mut out: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for collection in rules.collections(subject) {
        let actions = out.entry(collection.clone()).or_insert_with(|| ACTIONS.iter().map(|a| ((*a).to_owned(), json!({"access": "none"}))).collect());
        for action in [Action::Create, Action::Read, Action::Update, Action::Delete, Action::Share] {
            let Some(grant) = rules.grant(subject, &collection, action) else { continue };
            let full = grant.rows.iter().any(|r| r.filter.is_none());
            let mut info = json!({"access": if full { "full" } else { "partial" }});
            let mut names: Vec<String> = Vec::new();
            let mut star = false;
            for r in &grant.rows {
                match &r.fields {
                    Fields::All => star = true,
                    // Every field but some (the built-in own-user row leaves out a project's
                    // custom fields): listed by name, as Directus lists its app minimum.
                    Fields::AllBut(left_out) => {
                        let defined = schema.base().collection(&collection).map(|c| c.fields.as_slice()).unwrap_or_default();
                        names.extend(defined.iter().map(|f| f.name.clone()).filter(|n| !left_out.contains(n)));
                    }
                    Fields::Only(set) => names.extend(set.iter().cloned()),
                }
            }
            names.sort();
            names.dedup();
            if star {
                info["fields"] = json!(["*"]);
            } else if !names.is_empty() {
                info["fields"] = json!(names);
            }
            let presets = grant.presets();
            if !presets.is_empty() {
                info["presets"] = Value::Object(presets);
            }
            actions.insert(action.as_str().to_owned(), info);
        }
    }
    Value::Object(out.into_iter().map(|(c, a)| (c, Value::Object(a))).collect())
}
