//! Validation rules of permissions (Directus `validation`): a Directus filter object a payload
//! must satisfy. A failure is FAILED_VALIDATION with `field` and `type` (the operator without
//! its underscore), as Directus docs "Error Codes" show the error body.
//!
//! Rules are evaluated **by Postgres, on the payload's values cast to their fields' types**
//! (docs/permissions.md): each condition is compiled by the read filter compiler against a one-row
//! `(SELECT CAST($1 AS <type>) AS "field", …) t0`, so `" 900"` is the integer 900, an upper-case
//! UUID equals its lower-case form, `2024-1-5` is the date 2024-01-05, and every operator means
//! exactly what it means in a read filter (`$NOW`, `$CURRENT_USER` included), and the
//! validation-only operators of the catalog (`_regex`: Postgres's `~` on the value's text) are
//! allowed. `_and`/`_or` combine the
//! results in Rust, so the first failing condition names the error.
//!
//! On an update (`partial`), conditions on fields absent from the payload are not checked
//! (Directus); on a create an absent field is NULL. Relational conditions (`{"author":
//! {"name": …}}`) cannot be evaluated on a payload: INVALID_PAYLOAD.

use crate::query::Planner;
use crate::schema::Collection;
use crate::schema::bind::bind_text;
use cdapi_proto::ApiError;
use cdapi_proto::v1::filter;
use serde_json::{Map, Value, json};
use sqlx::{PgConnection, Row};

/// A parsed rule: `_and`/`_or` of single conditions.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// Every part holds.
    And(Vec<Rule>),
    /// Some part holds.
    Or(Vec<Rule>),
    /// `{field: {op: operand}}`.
    Condition {
        /// The field's name.
        field: String,
        /// The operator (`_eq`, `_regex`...).
        op: String,
        /// The value compared with.
        operand: Value,
        /// Its number among the rule's conditions (the slot of its result).
        index: usize,
    },
}

/// Parses a rule object. Errors: INVALID_PAYLOAD for a shape that is not a filter.
pub fn parse(rule: &Value) -> Result<Rule, ApiError> {
    let mut n = 0;
    parse_into(rule, &mut n)
}

fn parse_into(rule: &Value, n: &mut usize) -> Result<Rule, ApiError> {
    let Value::Object(obj) = rule else { return Err(rule_error("(rule)")) };
    let mut parts = Vec::new();
    for (key, cond) in obj {
        match key.as_str() {
            "_and" | "_or" => {
                let list = cond.as_array().ok_or_else(|| rule_error(key))?;
                let inner = list.iter().map(|r| parse_into(r, n)).collect::<Result<Vec<_>, _>>()?;
                parts.push(if key == "_and" { Rule::And(inner) } else { Rule::Or(inner) });
            }
            field => {
                let Value::Object(ops) = cond else { return Err(rule_error(field)) };
                for (op, operand) in ops {
                    if !op.starts_with('_') {
                        // `{"author": {"name": …}}`: a relational condition.
                        return Err(rule_error(field));
                    }
                    parts.push(Rule::Condition { field: field.to_owned(), op: op.clone(), operand: operand.clone(), index: *n });
                    *n += 1;
                }
            }
        }
    }
    Ok(Rule::And(parts))
}

impl Rule {
    fn conditions<'r>(&'r self, out: &mut Vec<&'r Rule>) {
        match self {
            Self::And(parts) | Self::Or(parts) => parts.iter().for_each(|p| p.conditions(out)),
            c @ Self::Condition { .. } => out.push(c),
        }
    }

    /// Whether the rule holds given each condition's result (`None` = not checked: passes);
    /// else the error of the first failing condition.
    pub fn outcome(&self, results: &[Option<bool>]) -> Result<(), ApiError> {
        match self {
            Self::And(parts) => parts.iter().try_for_each(|p| p.outcome(results)),
            Self::Or(parts) if parts.is_empty() => Ok(()),
            Self::Or(parts) => {
                let mut first = None;
                for p in parts {
                    match p.outcome(results) {
                        Ok(()) => return Ok(()),
                        Err(e) => {
                            first.get_or_insert(e);
                        }
                    }
                }
                first.map_or(Ok(()), Err)
            }
            Self::Condition { field, op, operand, index } => match results.get(*index).copied().flatten() {
                Some(false) => Err(failure(field, op, operand)),
                _ => Ok(()),
            },
        }
    }
}

/// Checks `payload` (an item of `collection`, whole snapshot) against each rule of `rules`, in
/// one statement on `conn`. Returns each rule's outcome (Ok, or its FAILED_VALIDATION).
/// Errors: INVALID_PAYLOAD for a rule that cannot be evaluated; the payload's own type errors
/// (FAILED_VALIDATION) as the write would give them.
pub async fn check(
    conn: &mut PgConnection,
    mut planner: Planner<'_>,
    collection: &Collection,
    rules: &[&Value],
    payload: &Map<String, Value>,
    partial: bool,
) -> Result<Vec<Result<(), ApiError>>, ApiError> {
    let parsed = rules.iter().map(|r| parse(r)).collect::<Result<Vec<_>, _>>()?;
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
            let Rule::Condition { field, op, operand, index } = c else { continue };
            let f = collection.field(field).filter(|f| !f.is_alias()).ok_or_else(|| rule_error(field))?;
            if partial && !payload.contains_key(field) {
                continue;
            }
            let condition = query_language::query_json::filter_from_json(&json!({ field: { op: operand } }), 0)
                .map_err(|_| rule_error(field))?
                .ok_or_else(|| rule_error(field))?;
            let Some(filter::Node::Condition(c)) = &condition.node else { return Err(rule_error(field)) };
            let negated = query_language::operators::info(c.operator()).is_some_and(|i| i.negates.is_some());
            let sql = planner.row_condition(collection, "t0", &condition).map_err(|_| rule_error(field))?;
            if !used.contains(&f.name.as_str()) {
                used.push(&f.name);
            }
            rule_slots[*index] = Some(exprs.len());
            // A negating operator (the catalog's `negates`) holds for a NULL (absent) value, as
            // in Directus: "not equal to x" is true of nothing; the others need a value that
            // satisfies them.
            exprs.push(format!("({sql}) {}", if negated { "IS NOT FALSE" } else { "IS TRUE" }));
        }
        slots.push(rule_slots);
    }
    let results: Vec<bool> = if exprs.is_empty() {
        Vec::new()
    } else {
        let mut cols = Vec::with_capacity(used.len());
        for name in &used {
            let f = collection.field(name).ok_or_else(ApiError::internal)?;
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

fn rule_error(field: &str) -> ApiError {
    ApiError::invalid_payload(format!("The validation rule on \"{field}\" cannot be evaluated"))
}

/// FAILED_VALIDATION for a condition that failed; a membership operator names the values
/// (`valid` for `_in`, `invalid` for `_nin`), as Directus's error does.
fn failure(field: &str, op: &str, operand: &Value) -> ApiError {
    let kind = op.trim_start_matches('_');
    let mut e = ApiError::failed_validation(field, kind, &format!("Value does not satisfy \"{op}\"."));
    let info = query_language::operators::from_name(op).and_then(query_language::operators::info);
    if let Some(info) = info.filter(|i| i.family == query_language::operators::Family::Membership) {
        let key = if info.negates.is_some() { "invalid" } else { "valid" };
        e.extensions.insert(key.into(), operand.clone());
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_into_numbered_conditions() -> Result<(), ApiError> {
        let r = parse(&json!({"_or": [{"a": {"_eq": 1}}, {"b": {"_gt": 2, "_lt": 5}}], "c": {"_nnull": true}}))?;
        let mut conds = Vec::new();
        r.conditions(&mut conds);
        assert_eq!(conds.len(), 4);
        assert!(matches!(conds[3], Rule::Condition { field, index: 3, .. } if field == "c"));
        assert_eq!(parse(&json!({"author": {"name": {"_eq": "x"}}})).map_err(|e| e.code).err(), Some(cdapi_proto::ErrorCode::InvalidPayload));
        assert!(parse(&json!({"a": 1})).is_err());
        Ok(())
    }

    #[test]
    fn outcome_combines_and_or_and_names_the_first_failure() -> Result<(), ApiError> {
        let r = parse(&json!({"_or": [{"a": {"_eq": 1}}, {"b": {"_in": [1, 2]}}], "c": {"_gte": 3}}))?;
        assert!(r.outcome(&[Some(false), Some(true), Some(true)]).is_ok());
        let e = r.outcome(&[Some(false), Some(false), Some(true)]).err().ok_or_else(ApiError::internal)?;
        assert_eq!(e.extensions.get("field"), Some(&json!("a")));
        assert_eq!(e.extensions.get("type"), Some(&json!("eq")));
        let e = r.outcome(&[Some(true), None, Some(false)]).err().ok_or_else(ApiError::internal)?;
        assert_eq!(e.extensions.get("type"), Some(&json!("gte")));
        // Not checked (absent on an update) passes.
        assert!(r.outcome(&[None, None, None]).is_ok());
        let in_rule = parse(&json!({"s": {"_in": ["x"]}}))?;
        let e = in_rule.outcome(&[Some(false)]).err().ok_or_else(ApiError::internal)?;
        assert_eq!(e.extensions.get("valid"), Some(&json!(["x"])));
        Ok(())
    }
}
