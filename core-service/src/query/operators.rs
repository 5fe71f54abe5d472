//! The filter operators planned: an operator with its operand on a [`Target`] (a column, a
//! function of one, or an aggregate) becomes a [`Predicate`]. What an operator is (name,
//! family, negation, the types it is refused on, its scope) comes from the operator catalog
//! ([`query_language::operators`]); this file has one test per family
//! ([`super::predicate::Test`], whose SQL is [`super::predicate`]'s). Filters
//! ([`super::filter`]), permission and validation rules, and `having` ([`super::aggregate`])
//! all compare through [`Planner::compare`].
//!
//! Values are bound as text and cast to the target's Postgres type, so enums, domains, dates and
//! numerics compare as their own type; integer values are checked here first so that a bad value
//! names its field. Dynamic variables (`$NOW`, `$CURRENT_USER.<path>`...) are resolved by
//! [`super::variables`].

use super::Planner;
use super::predicate::{Comparison, Expr, Operand, Pattern, Predicate, Test};
use super::variables::Resolved;
use crate::schema::{Field, FieldType};
use crate::sql::escape_like;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{Operator, Value, value};
use query_language::operators::{self, Anchor, Family, Scope};
use query_language::query_json::operator_name;

/// What a condition compares: a column or a function of one.
pub(super) struct Target {
    /// The expression compared.
    pub(super) expr: Expr,
    /// Type for value checks and casts.
    pub(super) field_type: FieldType,
    /// Postgres type name for casts.
    pub(super) db_type: String,
    /// Enum column (compared as text in LIKE forms).
    pub(super) is_enum: bool,
    /// Name for messages.
    pub(super) name: String,
}

impl Target {
    /// The column of `field` on rows aliased `alias`.
    pub(super) fn column(alias: &str, field: &Field) -> Self {
        Self {
            expr: Expr::column(alias, &field.name),
            field_type: field.field_type,
            db_type: field.db_type.clone(),
            is_enum: !field.enum_values.is_empty(),
            name: field.name.clone(),
        }
    }

    /// `test` applied to this target.
    pub(super) fn test(&self, test: Test) -> Predicate {
        let text_cast = !self.field_type.is_textual() || self.is_enum;
        Predicate::Compare(Comparison { target: self.expr.clone(), db_type: self.db_type.clone(), text_cast, test })
    }
}

impl Planner<'_> {
    /// The operand (or the several values of a list variable); `None` for null. Lists are
    /// refused here.
    fn value(&mut self, t: &Target, op: Operator, v: Option<&Value>) -> Result<Option<Resolved>, ApiError> {
        let text = match v.and_then(|v| v.kind.as_ref()) {
            None | Some(value::Kind::Null(_)) => return Ok(None),
            Some(value::Kind::Boolean(b)) => b.to_string(),
            Some(value::Kind::String(s)) => s.clone(),
            Some(value::Kind::Integer(i)) => i.to_string(),
            Some(value::Kind::Float(f)) => f.to_string(),
            Some(value::Kind::List(_)) => {
                return Err(ApiError::invalid_query(format!("\"{}\" on field \"{}\" takes a single value, not a list", operator_name(op), t.name)));
            }
        };
        if let Some(var) = text.strip_prefix('$').filter(|v| super::variables::is_variable(v)) {
            return self.variable(var).map(Some);
        }
        check_value(t, &text)?;
        Ok(Some(Resolved::One(Operand::Text(text))))
    }

    /// The operand of a single-value operator; `None` for null. Errors: INVALID_QUERY for a
    /// list, or a variable holding several values.
    fn scalar(&mut self, t: &Target, op: Operator, v: Option<&Value>) -> Result<Option<Operand>, ApiError> {
        match self.value(t, op, v)? {
            None => Ok(None),
            Some(Resolved::One(o)) => Ok(Some(o)),
            Some(Resolved::Many(_)) => Err(ApiError::invalid_query(format!("A list variable needs a list operator (_in, _nin) on field \"{}\"", t.name))),
        }
    }

    /// The operand as a list (array, or comma-separated string; `_in` in Directus docs "Filter Rules").
    fn list(&mut self, t: &Target, op: Operator, v: Option<&Value>) -> Result<Vec<Operand>, ApiError> {
        let items: Vec<Value> = match v.and_then(|v| v.kind.as_ref()) {
            Some(value::Kind::List(l)) => l.values.clone(),
            Some(value::Kind::String(s)) => s.split(',').map(|p| Value { kind: Some(value::Kind::String(p.trim().to_owned())) }).collect(),
            None | Some(value::Kind::Null(_)) => Vec::new(),
            Some(_) => vec![v.cloned().unwrap_or_default()],
        };
        let mut out = Vec::with_capacity(items.len());
        for item in &items {
            match self.value(t, op, Some(item))? {
                Some(Resolved::Many(values)) => out.extend(values.into_iter().map(Operand::Text)),
                Some(Resolved::One(o)) => out.push(o),
                None => return Err(ApiError::invalid_query(format!("\"{}\" does not accept null inside its list", operator_name(op)))),
            }
        }
        Ok(out)
    }

    /// `op` with operand `v` on `t`, planned: the test of the operator's family in the catalog
    /// ([`query_language::operators`]), under [`Predicate::Not`] for a negating operator.
    /// Used by filters, permission and validation rules and `having`. Errors: INVALID_QUERY for
    /// an operator the field's type does not take, one outside its scope (`_regex` outside a
    /// validation rule), a missing or malformed operand.
    pub(super) fn compare(&mut self, t: &Target, op: Operator, v: Option<&Value>) -> Result<Predicate, ApiError> {
        let info = operators::info(op).ok_or_else(|| ApiError::invalid_query("A filter condition has no operator"))?;
        let name = info.name;
        if info.scope == Scope::Validation && !self.validation {
            return Err(ApiError::invalid_query(format!("\"{name}\" can only be used in validation rules")));
        }
        if info.refused_on.contains(&t.field_type) {
            return Err(ApiError::invalid_query(format!("\"{name}\" cannot be used on field \"{}\" of type {}", t.name, t.field_type.as_str())));
        }
        let need = |o: Option<Operand>| o.ok_or_else(|| ApiError::invalid_query(format!("\"{name}\" needs a value")));
        let positive = match info.family {
            Family::Equality => match self.scalar(t, op, v)? {
                None => t.test(Test::IsNull),
                Some(o) => t.test(Test::Equals(o)),
            },
            Family::Ordering(order) => t.test(Test::Ordering(order, need(self.scalar(t, op, v)?)?)),
            Family::Membership => {
                let items = self.list(t, op, v)?;
                if items.is_empty() {
                    Predicate::Const(false)
                } else if items.iter().all(|o| matches!(o, Operand::Text(_))) {
                    // Literals: one array parameter, whatever their number.
                    t.test(Test::AnyOf(items.into_iter().filter_map(|o| if let Operand::Text(s) = o { Some(s) } else { None }).collect()))
                } else {
                    t.test(Test::In(items))
                }
            }
            Family::Null => {
                let is_null = t.test(Test::IsNull);
                if boolean_operand(op, v)? { is_null } else { is_null.negate() }
            }
            Family::Text { anchor, case_insensitive } => {
                let (prefix, suffix) = match anchor {
                    Anchor::Start => ("", "%"),
                    Anchor::End => ("%", ""),
                    Anchor::Anywhere => ("%", "%"),
                };
                let pattern = match self.text_operand(name, v)? {
                    Operand::Text(value) => Pattern::Literal(format!("{prefix}{}{suffix}", escape_like(&value))),
                    // A field of the caller's record: its text, escaped the same way, in SQL.
                    value @ (Operand::Record(_) | Operand::Null) => Pattern::Value { prefix, value, suffix },
                    Operand::Now(_) | Operand::Integer(_) => return Err(ApiError::invalid_query(format!("\"{name}\" needs a text value"))),
                };
                t.test(Test::Like { pattern, case_insensitive })
            }
            Family::Range => {
                let items = self.list(t, op, v)?;
                let [low, high] = <[Operand; 2]>::try_from(items).map_err(|_| ApiError::invalid_query(format!("\"{name}\" takes exactly two values")))?;
                t.test(Test::Between(low, high))
            }
            Family::Empty => {
                let is_empty = t.test(Test::Empty { textual: t.field_type.is_textual() });
                if boolean_operand(op, v).unwrap_or(true) { is_empty } else { is_empty.negate() }
            }
            Family::Geometry => {
                return Err(ApiError::invalid_query(format!("\"{name}\" applies to geometry fields only; \"{}\" is not one", t.name)));
            }
            Family::Pattern => {
                let Some(value::Kind::String(pattern)) = v.and_then(|v| v.kind.as_ref()) else {
                    return Err(ApiError::invalid_query(format!("\"{name}\" needs a regular expression")));
                };
                // JavaScript's `/pattern/flags` form too (`i` = case-insensitive), as Directus reads it.
                let (pattern, case_insensitive) = match pattern.strip_prefix('/').and_then(|p| p.rsplit_once('/')) {
                    Some((p, flags)) => (p.to_owned(), flags.contains('i')),
                    None => (pattern.clone(), false),
                };
                t.test(Test::Matches { pattern, case_insensitive })
            }
        };
        Ok(if info.negates.is_some() { positive.negate() } else { positive })
    }

    /// The operand of a text operator: a text (numbers and booleans as their text) or a dynamic
    /// variable. Errors: INVALID_QUERY for anything else.
    fn text_operand(&mut self, name: &str, v: Option<&Value>) -> Result<Operand, ApiError> {
        let text = match v.and_then(|v| v.kind.as_ref()) {
            Some(value::Kind::String(s)) => s.clone(),
            Some(value::Kind::Integer(i)) => i.to_string(),
            Some(value::Kind::Float(f)) => f.to_string(),
            Some(value::Kind::Boolean(b)) => b.to_string(),
            _ => return Err(ApiError::invalid_query(format!("\"{name}\" needs a text value"))),
        };
        match text.strip_prefix('$').filter(|v| super::variables::is_variable(v)) {
            Some(var) => match self.variable(var)? {
                Resolved::One(o) => Ok(o),
                Resolved::Many(_) => Err(ApiError::invalid_query(format!("\"{name}\" needs a text value"))),
            },
            None => Ok(Operand::Text(text)),
        }
    }
}

/// Rejects values that cannot be of the target's type, naming the field (before Postgres would).
fn check_value(t: &Target, text: &str) -> Result<(), ApiError> {
    let ok = match t.field_type {
        FieldType::Integer | FieldType::BigInteger => text.trim().parse::<i64>().is_ok(),
        FieldType::Float | FieldType::Decimal => text.trim().parse::<f64>().is_ok(),
        FieldType::Boolean => matches!(text, "true" | "false" | "1" | "0" | "t" | "f"),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_query(format!("\"{text}\" is not a valid value for field \"{}\" of type {}", t.name, t.field_type.as_str())))
    }
}

fn boolean_operand(op: Operator, v: Option<&Value>) -> Result<bool, ApiError> {
    match v.and_then(|v| v.kind.as_ref()) {
        Some(value::Kind::Boolean(b)) => Ok(*b),
        Some(value::Kind::String(s)) if s == "true" || s == "1" => Ok(true),
        Some(value::Kind::String(s)) if s == "false" || s == "0" => Ok(false),
        Some(value::Kind::Integer(1)) => Ok(true),
        Some(value::Kind::Integer(0)) => Ok(false),
        _ => Err(ApiError::invalid_query(format!("\"{}\" takes true or false", operator_name(op)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::{Limits, Variables};
    use crate::schema::Schema;
    use cdapi_proto::v1::ValueList;
    use query_language::operators::{CATALOG, Order};

    fn target(field_type: FieldType, db_type: &str) -> Target {
        Target { expr: Expr::column("t0", "f"), field_type, db_type: db_type.into(), is_enum: false, name: "f".into() }
    }

    fn text(s: &str) -> Value {
        Value { kind: Some(value::Kind::String(s.into())) }
    }

    fn flag(b: bool) -> Value {
        Value { kind: Some(value::Kind::Boolean(b)) }
    }

    fn list(items: &[&str]) -> Value {
        Value { kind: Some(value::Kind::List(ValueList { values: items.iter().map(|i| text(i)).collect() })) }
    }

    /// An operand of the shape each family takes.
    fn operand(family: Family) -> Value {
        match family {
            Family::Equality | Family::Ordering(_) | Family::Text { .. } | Family::Pattern | Family::Geometry => text("ab"),
            Family::Membership | Family::Range => list(&["a", "b"]),
            Family::Null | Family::Empty => flag(true),
        }
    }

    /// The plan of `op` with `v` on `t`, as a signed-in caller with two roles.
    fn plan(validation: bool, t: &Target, op: Operator, v: &Value) -> Result<Predicate, ApiError> {
        let schema = Schema::default();
        let vars = Variables { user: Some("u1".into()), roles: vec!["r1".into(), "r2".into()], ..Variables::default() };
        let mut planner = Planner::new(&schema, Limits::default(), &vars);
        planner.validation = validation;
        planner.compare(t, op, Some(v))
    }

    /// `test` on the text target `t0."f"`.
    fn on_text(test: Test) -> Predicate {
        target(FieldType::Text, "text").test(test)
    }

    /// Every row of the catalog has a plan; a negating operator is its positive form under
    /// NOT; the scope and the refused types are honoured.
    #[test]
    fn every_catalog_row_plans_by_its_family() -> Result<(), ApiError> {
        let t = target(FieldType::Text, "text");
        for row in CATALOG {
            let v = operand(row.family);
            let planned = plan(true, &t, row.operator, &v);
            if row.family == Family::Geometry {
                assert!(planned.is_err(), "{}: no geometry field type is served", row.name);
                continue;
            }
            let planned = planned?;
            match row.negates {
                Some(positive) => assert_eq!(planned, plan(true, &t, positive, &v)?.negate(), "{}", row.name),
                None => assert!(!matches!(planned, Predicate::Not(_)), "{}: {planned:?}", row.name),
            }
            if row.scope == Scope::Validation {
                let refused = plan(false, &t, row.operator, &v).err().map(|e| e.message);
                assert!(refused.is_some_and(|m| m.contains("validation rules")), "{} outside a validation rule", row.name);
            }
            for refused_type in row.refused_on {
                assert!(plan(true, &target(*refused_type, "jsonb"), row.operator, &v).is_err(), "{} on {refused_type:?}", row.name);
            }
        }
        Ok(())
    }

    #[test]
    fn families_plan_their_tests() -> Result<(), ApiError> {
        let t = target(FieldType::Text, "text");
        let null = Value { kind: Some(value::Kind::Null(0)) };
        assert_eq!(plan(false, &t, Operator::Eq, &null)?, on_text(Test::IsNull));
        assert_eq!(plan(false, &t, Operator::Lte, &text("b"))?, on_text(Test::Ordering(Order::LessOrEqual, Operand::Text("b".into()))));
        let starts = Test::Like { pattern: Pattern::Literal("a\\_b%".into()), case_insensitive: true };
        assert_eq!(plan(false, &t, Operator::NistartsWith, &text("a_b"))?, on_text(starts).negate());
        assert_eq!(plan(false, &t, Operator::In, &list(&["a", "b"]))?, on_text(Test::AnyOf(vec!["a".into(), "b".into()])));
        assert_eq!(plan(false, &t, Operator::In, &text("a, b"))?, on_text(Test::AnyOf(vec!["a".into(), "b".into()])), "a comma-separated list");
        assert_eq!(plan(false, &t, Operator::Nin, &list(&[]))?, Predicate::Const(false).negate());
        assert_eq!(plan(false, &t, Operator::Between, &list(&["a", "b"]))?, on_text(Test::Between(Operand::Text("a".into()), Operand::Text("b".into()))));
        assert_eq!(plan(false, &t, Operator::Null, &flag(false))?, on_text(Test::IsNull).negate());
        assert_eq!(plan(false, &t, Operator::Empty, &flag(true))?, on_text(Test::Empty { textual: true }));
        assert_eq!(plan(true, &t, Operator::Regex, &text("/^a/i"))?, on_text(Test::Matches { pattern: "^a".into(), case_insensitive: true }));
        let number = target(FieldType::Integer, "integer");
        let contains = plan(false, &number, Operator::Contains, &text("4"))?;
        assert_eq!(contains, number.test(Test::Like { pattern: Pattern::Literal("%4%".into()), case_insensitive: false }));
        assert!(matches!(contains, Predicate::Compare(Comparison { text_cast: true, .. })), "a number is searched through its text");
        Ok(())
    }

    #[test]
    fn variables_become_operands() -> Result<(), ApiError> {
        let t = target(FieldType::Uuid, "uuid");
        assert_eq!(plan(false, &t, Operator::Eq, &text("$CURRENT_USER"))?, t.test(Test::Equals(Operand::Text("u1".into()))));
        // A list variable spreads inside a list; it is refused where one value is expected.
        let roles = t.test(Test::AnyOf(vec!["r0".into(), "r1".into(), "r2".into()]));
        assert_eq!(plan(false, &t, Operator::In, &list(&["r0", "$CURRENT_ROLES"]))?, roles);
        assert!(plan(false, &t, Operator::Eq, &text("$CURRENT_ROLES")).is_err());
        let date = target(FieldType::Timestamp, "timestamp with time zone");
        let recent = date.test(Test::Ordering(Order::Greater, Operand::Now(Some("-1 years".into()))));
        assert_eq!(plan(false, &date, Operator::Gt, &text("$NOW(-1 year)"))?, recent);
        // The clock among literals: each is its own operand.
        let window = plan(false, &date, Operator::In, &list(&["2024-01-01", "$NOW"]))?;
        assert_eq!(window, date.test(Test::In(vec![Operand::Text("2024-01-01".into()), Operand::Now(None)])));
        Ok(())
    }

    #[test]
    fn malformed_operands_are_refused() {
        let number = target(FieldType::Integer, "integer");
        let message = |r: Result<Predicate, ApiError>| r.err().map(|e| e.message).unwrap_or_default();
        assert!(message(plan(false, &number, Operator::Gt, &text("x"))).contains("\"f\""), "a value that cannot be of the field's type names it");
        assert!(message(plan(false, &number, Operator::Eq, &list(&["1"]))).contains("single value"));
        assert!(message(plan(false, &number, Operator::Between, &list(&["1"]))).contains("two values"));
        assert!(message(plan(false, &number, Operator::Null, &text("maybe"))).contains("true or false"));
        let in_null = Value { kind: Some(value::Kind::List(ValueList { values: vec![Value { kind: Some(value::Kind::Null(0)) }] })) };
        assert!(message(plan(false, &number, Operator::In, &in_null)).contains("null"));
        let t = target(FieldType::Text, "text");
        assert!(message(plan(false, &t, Operator::StartsWith, &text("$NOW"))).contains("text value"));
        assert!(message(plan(true, &t, Operator::Regex, &flag(true))).contains("regular expression"));
    }
}
