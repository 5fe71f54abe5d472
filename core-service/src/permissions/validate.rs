//! Validation rules of permissions (Directus `validation`, and the create presets' targets):
//! a Directus filter object checked against a payload in memory, before anything is written.
//! A failure is FAILED_VALIDATION with `field` and `type` (the operator without its
//! underscore), directus-facts.md "Error body".
//!
//! Supported: `_and`, `_or`; `_eq _neq _lt _lte _gt _gte _in _nin _null _nnull _empty _nempty
//! _contains _ncontains _icontains _starts_with _nstarts_with _istarts_with _ends_with
//! _nends_with _iends_with _between _nbetween _regex`. Values `$CURRENT_USER` and `$CURRENT_ROLE`
//! are the caller's ids. Numbers compare as numbers, everything else as text (ISO dates order
//! correctly as text). On an update only the fields present in the payload are checked.

use crate::query::Variables;
use crate::write::payload::failed;
use cdapi_proto::ApiError;
use serde_json::{Map, Value};
use std::cmp::Ordering;

/// Checks `payload` against one rule. `partial`: fields absent from the payload pass (update).
/// Errors: FAILED_VALIDATION for the first condition that fails; INVALID_PAYLOAD for a rule
/// this version cannot evaluate (an unknown operator, a relational rule).
pub fn check(rule: &Value, payload: &Map<String, Value>, partial: bool, vars: &Variables) -> Result<(), ApiError> {
    let Value::Object(rule) = rule else { return Ok(()) };
    for (key, cond) in rule {
        match key.as_str() {
            "_and" => {
                for r in cond.as_array().into_iter().flatten() {
                    check(r, payload, partial, vars)?;
                }
            }
            "_or" => {
                let rules = cond.as_array().cloned().unwrap_or_default();
                let mut first_error = None;
                let passed = rules.iter().any(|r| match check(r, payload, partial, vars) {
                    Ok(()) => true,
                    Err(e) => {
                        first_error.get_or_insert(e);
                        false
                    }
                });
                if !passed && let Some(e) = first_error {
                    return Err(e);
                }
            }
            field => {
                if partial && !payload.contains_key(field) {
                    continue;
                }
                let value = payload.get(field).unwrap_or(&Value::Null);
                let Value::Object(ops) = cond else {
                    return Err(rule_error(field));
                };
                for (op, operand) in ops {
                    if !holds(op, value, &resolve(operand, vars)).ok_or_else(|| rule_error(field))? {
                        return Err(failure(field, op, operand));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Checks `payload` against a grant's rules: it must satisfy one of them (none = no rule).
pub fn check_any(rules: &[Value], payload: &Map<String, Value>, partial: bool, vars: &Variables) -> Result<(), ApiError> {
    let mut first_error = None;
    for r in rules {
        match check(r, payload, partial, vars) {
            Ok(()) => return Ok(()),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// `$CURRENT_USER` / `$CURRENT_ROLE` (also inside arrays) → the caller's ids.
pub fn resolve(v: &Value, vars: &Variables) -> Value {
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

fn failure(field: &str, op: &str, operand: &Value) -> ApiError {
    let kind = op.trim_start_matches('_');
    let mut e = failed(field, kind, &format!("Value does not satisfy \"{op}\"."));
    match op {
        "_in" => {
            e.extensions.insert("valid".into(), operand.clone());
        }
        "_nin" => {
            e.extensions.insert("invalid".into(), operand.clone());
        }
        _ => {}
    }
    e
}

/// Text of a scalar for comparisons; `None` for null, arrays and objects.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    let num = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse::<f64>().ok(),
        _ => None,
    };
    if let (Some(x), Some(y)) = (num(a), num(b))
        && (a.is_number() || b.is_number())
    {
        return x.partial_cmp(&y);
    }
    Some(text(a)?.cmp(&text(b)?))
}

fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Null, _) | (_, Value::Null) => false,
        _ => compare(a, b) == Some(Ordering::Equal),
    }
}

fn list(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items.clone(),
        Value::String(s) => s.split(',').map(|p| Value::String(p.trim().to_owned())).collect(),
        Value::Null => Vec::new(),
        other => vec![other.clone()],
    }
}

fn truthy(v: &Value) -> bool {
    !matches!(v, Value::Bool(false) | Value::Null) && v.as_str() != Some("false")
}

/// Whether `value op operand` holds; `None` for an operator this module does not know.
fn holds(op: &str, value: &Value, operand: &Value) -> Option<bool> {
    let is_empty = matches!(value, Value::Null) || value.as_str() == Some("") || value.as_array().is_some_and(Vec::is_empty);
    let contains = |needle: &Value, fold: bool| -> bool {
        let (Some(hay), Some(needle)) = (text(value), text(needle)) else { return false };
        if fold { hay.to_lowercase().contains(&needle.to_lowercase()) } else { hay.contains(&needle) }
    };
    let starts = |fold: bool| -> bool {
        let (Some(hay), Some(p)) = (text(value), text(operand)) else { return false };
        if fold { hay.to_lowercase().starts_with(&p.to_lowercase()) } else { hay.starts_with(&p) }
    };
    let ends = |fold: bool| -> bool {
        let (Some(hay), Some(p)) = (text(value), text(operand)) else { return false };
        if fold { hay.to_lowercase().ends_with(&p.to_lowercase()) } else { hay.ends_with(&p) }
    };
    let between = || -> bool {
        let bounds = list(operand);
        let [lo, hi] = bounds.as_slice() else { return false };
        !value.is_null()
            && matches!(compare(value, lo), Some(Ordering::Greater | Ordering::Equal))
            && matches!(compare(value, hi), Some(Ordering::Less | Ordering::Equal))
    };
    let ordered = |accept: &[Ordering]| !value.is_null() && compare(value, operand).is_some_and(|o| accept.contains(&o));
    Some(match op {
        "_eq" => equal(value, operand),
        "_neq" => !equal(value, operand),
        "_lt" => ordered(&[Ordering::Less]),
        "_lte" => ordered(&[Ordering::Less, Ordering::Equal]),
        "_gt" => ordered(&[Ordering::Greater]),
        "_gte" => ordered(&[Ordering::Greater, Ordering::Equal]),
        "_in" => !value.is_null() && list(operand).iter().any(|o| equal(value, o)),
        "_nin" => !list(operand).iter().any(|o| equal(value, o)),
        "_null" => value.is_null() == truthy(operand),
        "_nnull" => value.is_null() != truthy(operand),
        "_empty" => is_empty == truthy(operand),
        "_nempty" => is_empty != truthy(operand),
        "_contains" => contains(operand, false),
        "_ncontains" => !contains(operand, false),
        "_icontains" => contains(operand, true),
        "_nicontains" => !contains(operand, true),
        "_starts_with" => starts(false),
        "_nstarts_with" => !starts(false),
        "_istarts_with" => starts(true),
        "_nistarts_with" => !starts(true),
        "_ends_with" => ends(false),
        "_nends_with" => !ends(false),
        "_iends_with" => ends(true),
        "_niends_with" => !ends(true),
        "_between" => between(),
        "_nbetween" => !value.is_null() && !between(),
        "_regex" => {
            let pattern = text(operand)?;
            // Directus accepts JavaScript's `/pattern/flags` form too.
            let pattern = pattern.strip_prefix('/').and_then(|p| p.rsplit_once('/')).map(|(p, _)| p.to_owned()).unwrap_or(pattern);
            let re = regex::Regex::new(&pattern).ok()?;
            text(value).is_some_and(|v| re.is_match(&v))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(rule: Value, payload: Value, partial: bool) -> Result<(), ApiError> {
        let vars = Variables { user: Some("u1".into()), role: None };
        check(&rule, payload.as_object().ok_or_else(ApiError::internal)?, partial, &vars)
    }

    #[test]
    fn operators_and_failure_shape() {
        assert!(run(json!({"rating": {"_gte": 3}}), json!({"rating": 4}), false).is_ok());
        let e = run(json!({"rating": {"_gte": 3}}), json!({"rating": 2}), false).expect_err("below");
        assert_eq!(e.code, cdapi_proto::ErrorCode::FailedValidation);
        assert_eq!(e.extensions.get("field"), Some(&json!("rating")));
        assert_eq!(e.extensions.get("type"), Some(&json!("gte")));
        let e = run(json!({"status": {"_in": ["draft", "review"]}}), json!({"status": "published"}), false).expect_err("in");
        assert_eq!(e.extensions.get("valid"), Some(&json!(["draft", "review"])));
        assert!(run(json!({"title": {"_regex": "^[A-Z]"}}), json!({"title": "Hello"}), false).is_ok());
        assert!(run(json!({"title": {"_regex": "^[A-Z]"}}), json!({"title": "hello"}), false).is_err());
        assert!(run(json!({"title": {"_nnull": true}}), json!({}), false).is_err());
    }

    #[test]
    fn partial_checks_only_present_fields_and_variables_resolve() {
        assert!(run(json!({"title": {"_nnull": true}}), json!({"body": "x"}), true).is_ok());
        assert!(run(json!({"owner": {"_eq": "$CURRENT_USER"}}), json!({"owner": "u1"}), false).is_ok());
        assert!(run(json!({"owner": {"_eq": "$CURRENT_USER"}}), json!({"owner": "u2"}), false).is_err());
        assert!(run(json!({"_or": [{"a": {"_eq": 1}}, {"b": {"_eq": 2}}]}), json!({"a": 0, "b": 2}), false).is_ok());
        assert!(run(json!({"_or": [{"a": {"_eq": 1}}, {"b": {"_eq": 2}}]}), json!({"a": 0, "b": 0}), false).is_err());
    }

    #[test]
    fn unknown_operators_are_refused_not_ignored() {
        let e = run(json!({"a": {"_bogus": 1}}), json!({"a": 1}), false).expect_err("unknown");
        assert_eq!(e.code, cdapi_proto::ErrorCode::InvalidPayload);
    }
}
