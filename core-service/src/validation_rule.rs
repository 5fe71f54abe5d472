//! A permission's validation rule (Directus `validation`: a filter object a payload must
//! satisfy, Directus docs "Access Control"), compiled once, when the permission rows are read
//! with the schema snapshot: `_and`/`_or` of single conditions, each the query language's
//! typed condition with its number. Evaluating a rule on a payload is
//! `crate::permissions::validate::check`. A rule that cannot be evaluated (a relational
//! condition, a shape that is not a filter) keeps its error, which every write through it
//! answers (INVALID_PAYLOAD), as before it was compiled at load.
//!
//! A failure is FAILED_VALIDATION with `field` and `type` (the operator without its
//! underscore), as Directus's error has it.

use cdapi_proto::ApiError;
use cdapi_proto::v1::{Filter, filter};
use serde_json::{Value, json};
use std::any::Any;
use std::sync::OnceLock;

/// A compiled rule, or why it cannot be evaluated.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidationRule(Result<Rule, ApiError>);

impl ValidationRule {
    /// Compiles `rule` (see the module docs).
    pub fn compile(rule: &Value) -> Self {
        Self(parse(rule))
    }

    /// The rule. Errors: its INVALID_PAYLOAD when it cannot be evaluated.
    pub fn rule(&self) -> Result<&Rule, ApiError> {
        self.0.as_ref().map_err(Clone::clone)
    }
}

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
        /// The condition as the query language's typed filter (compiled once).
        filter: Filter,
        /// Whether its operator negates another (holds for a missing value, as in Directus).
        negated: bool,
        /// What the rule's evaluator plans from the condition once, kept with the snapshot the
        /// rule was read with (`crate::permissions::validate` keeps the condition's typed
        /// predicate here).
        planned: Planned,
    },
}

/// Parses and compiles a rule object. Errors: INVALID_PAYLOAD for a shape that is not a
/// filter, a relational condition, an operator or operand the query language refuses.
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
                    let filter = query_language::query_json::filter_from_json(&json!({ field: { op: operand } }), 0)
                        .map_err(|_| rule_error(field))?
                        .ok_or_else(|| rule_error(field))?;
                    let Some(filter::Node::Condition(c)) = &filter.node else { return Err(rule_error(field)) };
                    let negated = query_language::operators::info(c.operator()).is_some_and(|i| i.negates.is_some());
                    parts.push(Rule::Condition {
                        field: field.to_owned(),
                        op: op.clone(),
                        operand: operand.clone(),
                        index: *n,
                        filter,
                        negated,
                        planned: Planned::default(),
                    });
                    *n += 1;
                }
            }
        }
    }
    Ok(Rule::And(parts))
}

impl Rule {
    /// The rule's conditions in the order of their numbers.
    pub fn conditions<'r>(&'r self, out: &mut Vec<&'r Rule>) {
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
            Self::Condition { field, op, operand, index, .. } => match results.get(*index).copied().flatten() {
                Some(false) => Err(failure(field, op, operand)),
                _ => Ok(()),
            },
        }
    }
}

/// A value planned from a condition on its first use and kept for the later ones (none when
/// planning gives nothing). Its type is the planner's (this module is read with the permission
/// rows, below the query engine, so it does not name it). A cache: it is not part of what the
/// rule means (every two are equal) and a copy starts empty.
#[derive(Default)]
pub struct Planned(OnceLock<Option<Box<dyn Any + Send + Sync>>>);

impl Planned {
    /// The value planned by `plan` on the first call; later calls give it again (`None` when
    /// `plan` gave none, or when the value kept is not a `T`).
    pub fn get_or_plan<T: Any + Send + Sync>(&self, plan: impl FnOnce() -> Option<T>) -> Option<&T> {
        let kept = self.0.get_or_init(|| plan().map(|v| Box::new(v) as Box<dyn Any + Send + Sync>));
        kept.as_ref().and_then(|v| v.downcast_ref::<T>())
    }
}

impl Clone for Planned {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for Planned {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Planned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0.get() {
            None => "Planned(not yet)",
            Some(None) => "Planned(nothing)",
            Some(Some(_)) => "Planned(kept)",
        })
    }
}

/// INVALID_PAYLOAD: the rule's condition on `field` cannot be evaluated.
pub fn rule_error(field: &str) -> ApiError {
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

    #[test]
    fn a_planned_value_is_made_once_and_kept() {
        let planned = Planned::default();
        let mut calls = 0;
        assert_eq!(
            planned.get_or_plan(|| {
                calls += 1;
                Some(7_u32)
            }),
            Some(&7)
        );
        assert_eq!(
            planned.get_or_plan(|| {
                calls += 1;
                Some(8_u32)
            }),
            Some(&7),
            "kept"
        );
        assert_eq!(calls, 1);
        assert_eq!(planned.get_or_plan::<String>(|| None), None, "another type is not what was kept");
        assert_eq!(planned.clone().get_or_plan(|| Some(9_u32)), Some(&9), "a copy starts empty");
        let nothing = Planned::default();
        assert_eq!(nothing.get_or_plan::<u32>(|| None), None);
        assert_eq!(nothing.get_or_plan(|| Some(1_u32)), None, "nothing planned is kept too");
    }

    #[test]
    fn conditions_compile_once_into_typed_filters() -> Result<(), ApiError> {
        let r = parse(&json!({"a": {"_nbetween": [1, 2]}, "b": {"_regex": "/^x/i"}}))?;
        let mut conds = Vec::new();
        r.conditions(&mut conds);
        let compiled: Vec<(bool, bool)> = conds
            .iter()
            .map(|c| match c {
                Rule::Condition { filter, negated, .. } => (matches!(filter.node, Some(filter::Node::Condition(_))), *negated),
                _ => (false, false),
            })
            .collect();
        assert_eq!(compiled, vec![(true, true), (true, false)]);
        // A rule that cannot be compiled keeps its error for the writes through it.
        let bad = ValidationRule::compile(&json!({"a": {"_nope": 1}}));
        assert_eq!(bad.rule().err().map(|e| e.code), Some(cdapi_proto::ErrorCode::InvalidPayload));
        assert!(ValidationRule::compile(&json!({"a": {"_eq": 1}})).rule().is_ok());
        Ok(())
    }
}
