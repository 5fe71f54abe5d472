//! Validation rules of permissions (Directus `validation`) checked on a payload. The rules are
//! compiled once, with the permission rows ([`crate::validation_rule`]); a failure is
//! FAILED_VALIDATION with `field` and `type` (the operator without its underscore), as Directus
//! docs "Error Codes" show the error body.
//!
//! Rules are evaluated **by Postgres, on the payload's values cast to their fields' types**
//! (docs/permissions.md): each condition is compiled by the read filter compiler against a one-row
//! `(SELECT CAST($1 AS <type>) AS "field", …) t0`, so `" 900"` is the integer 900, an upper-case
//! UUID equals its lower-case form, `2024-1-5` is the date 2024-01-05, and every operator means
//! exactly what it means in a read filter (`$NOW`, `$CURRENT_USER` included), and the
//! validation-only operators of the catalog (`_regex`: Postgres's `~` on the value's text) are
//! allowed. `_and`/`_or` combine the results in Rust, so the first failing condition names the
//! error.
//!
//! On an update (`partial`), conditions on fields absent from the payload are not checked
//! (Directus); on a create an absent field is NULL. Relational conditions (`{"author":
//! {"name": …}}`) cannot be evaluated on a payload: INVALID_PAYLOAD.

use crate::query::Planner;
use crate::schema::Collection;
use crate::schema::bind::bind_text;
use crate::validation_rule::{Rule, ValidationRule, rule_error};
use cdapi_proto::ApiError;
use serde_json::{Map, Value};
use sqlx::{PgConnection, Row};

/// Checks `payload` (an item of `collection`, whole snapshot) against each rule of `rules`, in
/// one statement on `conn`. Returns each rule's outcome (Ok, or its FAILED_VALIDATION).
/// Errors: INVALID_PAYLOAD for a rule that cannot be evaluated; the payload's own type errors
/// (FAILED_VALIDATION) as the write would give them.
pub async fn check(
    conn: &mut PgConnection,
    mut planner: Planner<'_>,
    collection: &Collection,
    rules: &[&ValidationRule],
    payload: &Map<String, Value>,
    partial: bool,
) -> Result<Vec<Result<(), ApiError>>, ApiError> {
    let parsed = rules.iter().map(|r| r.rule()).collect::<Result<Vec<_>, _>>()?;
    planner.validation = true;
    // Each rule's conditions: SQL over t0, or None when not checked (absent on an update).
    let mut exprs: Vec<String> = Vec::new();
    let mut slots: Vec<Vec<Option<usize>>> = Vec::with_capacity(parsed.len());
    let mut used: Vec<&str> = Vec::new();
    for rule in &parsed {
        let mut conds = Vec::new();
        rule.conditions(&mut conds);
        let mut rule_slots = vec![None; conds.len()];
        for c in conds {
            let Rule::Condition { field, index, filter, negated, .. } = c else { continue };
            let f = collection.field(field).filter(|f| !f.is_alias()).ok_or_else(|| rule_error(field))?;
            if partial && !payload.contains_key(field) {
                continue;
            }
            // A rule that does not compile (a project's misconfiguration, e.g. a variable path
            // through a field since removed) refuses the payload as the rule's failure; why is
            // for the operator's log, not the client.
            let sql = planner.row_condition(collection, "t0", filter).map_err(|e| {
                tracing::warn!(collection = %collection.name, field, error = %e, "a validation rule could not be compiled; the payload is refused");
                rule_error(field)
            })?;
            if !used.contains(&f.name.as_str()) {
                used.push(&f.name);
            }
            rule_slots[*index] = Some(exprs.len());
            // A negating operator (the catalog's `negates`) holds for a NULL (absent) value, as
            // in Directus: "not equal to x" is true of nothing; the others need a value that
            // satisfies them.
            exprs.push(format!("({sql}) {}", if *negated { "IS NOT FALSE" } else { "IS TRUE" }));
        }
        slots.push(rule_slots);
    }
    let results: Vec<bool> = if exprs.is_empty() {
        Vec::new()
    } else {
        let mut cols = Vec::with_capacity(used.len());
        for name in &used {
            let f = collection
                .field(name)
                .ok_or_else(|| ApiError::internal_because(format!("a validation rule names \"{name}\", not a field of \"{}\"", collection.name)))?;
            let value = match payload.get(*name) {
                Some(v) => bind_text(f, v)?,
                None => None,
            };
            let cell = match value {
                Some(v) => planner.sql.cast_param(v, &f.db_type),
                None => format!("CAST(NULL AS {})", f.db_type),
            };
            cols.push(format!("{cell} AS {}", crate::sql::ident(name)));
        }
        let mut sql = planner.sql;
        sql.text = format!("SELECT ARRAY[{}]::bool[] FROM (SELECT {}) t0", exprs.join(", "), cols.join(", "));
        let row = sql.query().fetch_one(&mut *conn).await.map_err(crate::db::map_write_error)?;
        row.try_get::<Vec<bool>, _>(0).map_err(crate::db::map_error)?
    };
    Ok(parsed
        .iter()
        .zip(&slots)
        .map(|(rule, rule_slots)| {
            let per_condition: Vec<Option<bool>> = rule_slots.iter().map(|s| s.and_then(|i| results.get(i).copied())).collect();
            rule.outcome(&per_condition)
        })
        .collect())
}

/// `$CURRENT_USER` / `$CURRENT_ROLE` (also inside arrays) → the caller's ids (for presets).
pub fn resolve(v: &Value, vars: &crate::query::Variables) -> Value {
    match v {
        Value::String(s) if s == "$CURRENT_USER" => vars.user.clone().map_or(Value::Null, Value::String),
        Value::String(s) if s == "$CURRENT_ROLE" => vars.role.clone().map_or(Value::Null, Value::String),
        Value::Array(items) => Value::Array(items.iter().map(|i| resolve(i, vars)).collect()),
        other => other.clone(),
    }
}
