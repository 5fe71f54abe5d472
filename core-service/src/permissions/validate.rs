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
use crate::query::predicate::Predicate;
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
            let Rule::Condition { field, index, filter, negated, planned, .. } = c else { continue };
            let f = collection.field(field).filter(|f| !f.is_alias()).ok_or_else(|| rule_error(field))?;
            if partial && !payload.contains_key(field) {
                continue;
            }
            let sql = match planned.get_or_plan(|| plan_once(&planner, collection, filter)) {
                Some(predicate) => predicate.render(&mut planner.sql),
                // A rule that does not compile (a project's misconfiguration, e.g. a variable
                // path through a field since removed) refuses the payload as the rule's failure;
                // why is for the operator's log, not the client.
                None => planner.row_condition(collection, "t0", filter).map_err(|e| {
                    tracing::warn!(collection = %collection.name, field, error = %e, "a validation rule could not be compiled; the payload is refused");
                    rule_error(field)
                })?,
            };
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

/// A rule's condition `filter` planned as a predicate on the row `t0` of `collection` that any
/// write through the rule can render: `None` when planning it resolved a dynamic variable of
/// the caller (however the operand spells it: [`Planner::names_caller`]), it does not compile,
/// or it writes, binds, reads or aliases anything in its statement while planned (its aliases
/// would then be that statement's; see [`crate::query::predicate`]). Planned against
/// `planner`'s schema and limits, for no caller.
fn plan_once(planner: &Planner<'_>, collection: &Collection, filter: &cdapi_proto::v1::Filter) -> Option<Predicate> {
    let nobody = crate::query::Variables::default();
    let mut fresh = Planner::new(planner.schema, planner.limits, &nobody);
    fresh.validation = true;
    let predicate = fresh.row_predicate(collection, "t0", filter).ok()?;
    (!fresh.names_caller && fresh.sql.is_empty()).then_some(predicate)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::test_schema::blog;
    use crate::query::{Limits, Variables};
    use crate::sql::{Param, Sql};
    use crate::validation_rule::parse;
    use serde_json::json;

    /// A predicate rendered into a fresh statement: its SQL and parameters.
    type Rendered = (String, Vec<Param>);

    /// Each condition of `rule` on `articles` as [`plan_once`] plans it, rendered into a fresh
    /// statement: (SQL, parameters), or `None` when planned per write.
    fn planned(rule: Value) -> Result<Vec<Option<Rendered>>, ApiError> {
        let schema = blog();
        let articles = schema.collection("articles").cloned().ok_or_else(ApiError::internal)?;
        let vars = Variables { user: Some("u1".into()), ..Variables::default() };
        let planner = Planner::new(&schema, Limits::default(), &vars);
        let rule = parse(&rule)?;
        let mut conds = Vec::new();
        rule.conditions(&mut conds);
        Ok(conds
            .iter()
            .map(|c| match c {
                Rule::Condition { filter, .. } => plan_once(&planner, &articles, filter).map(|p| {
                    let mut sql = Sql::default();
                    (p.render(&mut sql), sql.params)
                }),
                _ => None,
            })
            .collect())
    }

    #[test]
    fn conditions_not_naming_the_caller_are_planned_once_for_every_write() -> Result<(), ApiError> {
        let once = planned(json!({"title": {"_eq": "x"}}))?;
        let [Some((sql, params))] = once.as_slice() else { return Err(ApiError::internal_because(format!("planned once: {once:?}"))) };
        assert_eq!(sql, "t0.\"title\" = CAST($1 AS text)");
        assert_eq!(params, &vec![Param::Text("x".into())], "the literal is bound when rendered, into each write's statement");
        assert!(planned(json!({"title": {"_regex": "^a"}}))?[0].is_some(), "validation-only operators");
        assert!(planned(json!({"title": {"_eq": "$NOW"}}))?[0].is_some(), "the clock is no caller");
        Ok(())
    }

    #[test]
    fn conditions_naming_the_caller_or_not_compiling_are_planned_per_write() -> Result<(), ApiError> {
        assert_eq!(planned(json!({"title": {"_eq": "$CURRENT_USER"}}))?, vec![None]);
        assert_eq!(planned(json!({"title": {"_in": ["a", "$CURRENT_ROLE"]}}))?, vec![None]);
        // However the operand spells the variable: a list operator's comma-separated text, a
        // path of the caller's record (NULL for nobody, which binds nothing), several values.
        for operand in [
            json!({"_nin": "x, $CURRENT_USER"}),
            json!({"_eq": "$CURRENT_USER.email"}),
            json!({"_in": "a,$CURRENT_ROLES"}),
            json!({"_in": ["$CURRENT_POLICIES"]}),
        ] {
            assert_eq!(planned(json!({ "title": operand.clone() }))?, vec![None], "{operand}");
        }
        assert_eq!(planned(json!({"nope": {"_eq": 1}}))?, vec![None], "an unknown field keeps its error for each write");
        Ok(())
    }
}
