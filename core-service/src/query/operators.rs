//! The SQL of the filter operators: an operator with its operand on a [`Target`] (a column, a
//! function of one, or an aggregate). What an operator is (name, family, negation, the types it
//! is refused on, its scope) comes from the operator catalog ([`query_language::operators`]); this
//! file has one SQL form per family. Filters ([`super::filter`]), permission and validation
//! rules, and `having` ([`super::aggregate`]) all compare through [`Planner::compare`].
//!
//! Values are bound as text and cast to the target's Postgres type, so enums, domains, dates and
//! numerics compare as their own type; integer values are checked here first so that a bad value
//! names its field. Dynamic variables (`$NOW`, `$CURRENT_USER.<path>`...) are resolved by
//! [`super::variables`].

use super::Planner;
use super::variables::Operand;
use crate::schema::FieldType;
use crate::sql::{Param, escape_like};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{Operator, Value, value};
use query_language::operators::{self, Anchor, Family, Order, Scope};
use query_language::query_json::operator_name;

/// What a condition compares: a column or a function of one.
pub(super) struct Target {
    /// SQL expression.
    pub(super) expr: String,
    /// Type for value checks and casts.
    pub(super) field_type: FieldType,
    /// Postgres type name for casts.
    pub(super) db_type: String,
    /// Enum column (compared as text in LIKE forms).
    pub(super) is_enum: bool,
    /// Name for messages.
    pub(super) name: String,
}

impl Planner<'_> {
    /// Binds an operand and returns its SQL (cast to the target's type).
    fn operand_sql(&mut self, t: &Target, operand: Operand) -> Result<String, ApiError> {
        Ok(match operand {
            Operand::Text(text) => self.sql.cast_param(text, &t.db_type),
            Operand::Now(None) => {
                self.sql.volatile = true;
                format!("CAST(now() AS {})", t.db_type)
            }
            Operand::Now(Some(interval)) => {
                self.sql.volatile = true;
                let p = self.sql.param(Param::Text(interval));
                format!("CAST(now() + CAST({p} AS interval) AS {})", t.db_type)
            }
            Operand::Expr(expr) => format!("CAST({expr} AS {})", t.db_type),
            Operand::Many(_) => {
                return Err(ApiError::invalid_query(format!("A list variable needs a list operator (_in, _nin) on field \"{}\"", t.name)));
            }
        })
    }

    /// The operand of a single-value operator; `None` for null. Lists are refused here.
    fn scalar(&mut self, t: &Target, op: Operator, v: Option<&Value>) -> Result<Option<Operand>, ApiError> {
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
        Ok(Some(Operand::Text(text)))
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
            match self.scalar(t, op, Some(item))? {
                Some(Operand::Many(values)) => out.extend(values.into_iter().map(Operand::Text)),
                Some(o) => out.push(o),
                None => return Err(ApiError::invalid_query(format!("\"{}\" does not accept null inside its list", operator_name(op)))),
            }
        }
        Ok(out)
    }

    /// The SQL of `op` with operand `v` on the expression of `t`: the form of the operator's
    /// family in the catalog ([`query_language::operators`]), negated for a negating operator.
    /// Used by filters, permission and validation rules and `having`. Errors: INVALID_QUERY for
    /// an operator the field's type does not take, one outside its scope (`_regex` outside a
    /// validation rule), a missing or malformed operand.
    pub(super) fn compare(&mut self, t: &Target, op: Operator, v: Option<&Value>) -> Result<String, ApiError> {
        let info = operators::info(op).ok_or_else(|| ApiError::invalid_query("A filter condition has no operator"))?;
        let name = info.name;
        if info.scope == Scope::Validation && !self.validation {
            return Err(ApiError::invalid_query(format!("\"{name}\" can only be used in validation rules")));
        }
        if info.refused_on.contains(&t.field_type) {
            return Err(ApiError::invalid_query(format!("\"{name}\" cannot be used on field \"{}\" of type {}", t.name, t.field_type.as_str())));
        }
        let col = t.expr.clone();
        let as_text = if t.field_type.is_textual() && !t.is_enum { col.clone() } else { format!("{col}::text") };
        let need = |o: Option<Operand>| o.ok_or_else(|| ApiError::invalid_query(format!("\"{name}\" needs a value")));
        let positive = match info.family {
            Family::Equality => match self.scalar(t, op, v)? {
                None => format!("{col} IS NULL"),
                Some(o) => format!("{col} = {}", self.operand_sql(t, o)?),
            },
            Family::Ordering(order) => {
                let sym = match order {
                    Order::Less => "<",
                    Order::LessOrEqual => "<=",
                    Order::Greater => ">",
                    Order::GreaterOrEqual => ">=",
                };
                let o = need(self.scalar(t, op, v)?)?;
                format!("{col} {sym} {}", self.operand_sql(t, o)?)
            }
            Family::Membership => {
                let items = self.list(t, op, v)?;
                if items.is_empty() {
                    "FALSE".to_owned()
                } else if items.iter().all(|o| matches!(o, Operand::Text(_))) {
                    // Literals: one array parameter, whatever their number.
                    let texts = items.into_iter().filter_map(|o| if let Operand::Text(s) = o { Some(s) } else { None }).collect();
                    let p = self.sql.param(Param::TextArray(texts));
                    format!("{col} = ANY(CAST({p} AS {}[]))", t.db_type)
                } else {
                    let exprs = items.into_iter().map(|o| self.operand_sql(t, o)).collect::<Result<Vec<_>, _>>()?;
                    format!("{col} IN ({})", exprs.join(", "))
                }
            }
            Family::Null => {
                let flag = boolean_operand(op, v)?;
                format!("{col} IS {}NULL", if flag { "" } else { "NOT " })
            }
            Family::Text { anchor, case_insensitive } => {
                let (prefix, suffix) = match anchor {
                    Anchor::Start => ("", "%"),
                    Anchor::End => ("%", ""),
                    Anchor::Anywhere => ("%", "%"),
                };
                let p = match self.text_operand(name, v)? {
                    Operand::Text(value) => self.sql.param(Param::Text(format!("{prefix}{}{suffix}", escape_like(&value)))),
                    // A field of the caller's record: its text, escaped the same way, in SQL.
                    Operand::Expr(e) => {
                        format!(r"('{prefix}' || replace(replace(replace(CAST({e} AS text), '\', '\\'), '%', '\%'), '_', '\_') || '{suffix}')")
                    }
                    Operand::Now(_) | Operand::Many(_) => return Err(ApiError::invalid_query(format!("\"{name}\" needs a text value"))),
                };
                format!("{as_text} {} {p}", if case_insensitive { "ILIKE" } else { "LIKE" })
            }
            Family::Range => {
                let items = self.list(t, op, v)?;
                let [lo, hi] = <[Operand; 2]>::try_from(items).map_err(|_| ApiError::invalid_query(format!("\"{name}\" takes exactly two values")))?;
                let (lo, hi) = (self.operand_sql(t, lo)?, self.operand_sql(t, hi)?);
                format!("{col} BETWEEN {lo} AND {hi}")
            }
            Family::Empty => {
                let flag = boolean_operand(op, v).unwrap_or(true);
                let is_empty = if t.field_type.is_textual() { format!("({col} IS NULL OR {as_text} = '')") } else { format!("{col} IS NULL") };
                if flag { is_empty } else { format!("NOT {is_empty}") }
            }
            Family::Geometry => {
                return Err(ApiError::invalid_query(format!("\"{name}\" applies to geometry fields only; \"{}\" is not one", t.name)));
            }
            Family::Pattern => {
                let Some(value::Kind::String(pattern)) = v.and_then(|v| v.kind.as_ref()) else {
                    return Err(ApiError::invalid_query(format!("\"{name}\" needs a regular expression")));
                };
                // JavaScript's `/pattern/flags` form too (`i` = case-insensitive), as Directus reads it.
                let (pattern, fold) = match pattern.strip_prefix('/').and_then(|p| p.rsplit_once('/')) {
                    Some((p, flags)) => (p.to_owned(), flags.contains('i')),
                    None => (pattern.clone(), false),
                };
                let p = self.sql.param(Param::Text(pattern));
                format!("{as_text} {} {p}", if fold { "~*" } else { "~" })
            }
        };
        Ok(if info.negates.is_some() { format!("NOT ({positive})") } else { positive })
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
            Some(var) => self.variable(var),
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
    use query_language::operators::CATALOG;

    fn target(field_type: FieldType, db_type: &str) -> Target {
        Target { expr: "t0.\"f\"".into(), field_type, db_type: db_type.into(), is_enum: false, name: "f".into() }
    }

    fn text(s: &str) -> Value {
        Value { kind: Some(value::Kind::String(s.into())) }
    }

    /// An operand of the shape each family takes.
    fn operand(family: Family) -> Value {
        match family {
            Family::Equality | Family::Ordering(_) | Family::Text { .. } | Family::Pattern | Family::Geometry => text("ab"),
            Family::Membership | Family::Range => Value { kind: Some(value::Kind::List(ValueList { values: vec![text("a"), text("b")] })) },
            Family::Null | Family::Empty => Value { kind: Some(value::Kind::Boolean(true)) },
        }
    }

    fn sql(validation: bool, t: &Target, op: Operator, v: &Value) -> Result<String, ApiError> {
        let (schema, vars) = (Schema::default(), Variables::default());
        let mut planner = Planner::new(&schema, Limits::default(), &vars);
        planner.validation = validation;
        planner.compare(t, op, Some(v))
    }

    /// Every row of the catalog has a SQL form; a negating operator is its positive form under
    /// NOT; the scope and the refused types are honoured.
    #[test]
    fn every_catalog_row_renders_by_its_family() -> Result<(), ApiError> {
        let t = target(FieldType::Text, "text");
        for row in CATALOG {
            let v = operand(row.family);
            let rendered = sql(true, &t, row.operator, &v);
            if row.family == Family::Geometry {
                assert!(rendered.is_err(), "{}: no geometry field type is served", row.name);
                continue;
            }
            let rendered = rendered?;
            match row.negates {
                Some(positive) => assert_eq!(rendered, format!("NOT ({})", sql(true, &t, positive, &v)?), "{}", row.name),
                None => assert!(!rendered.starts_with("NOT ("), "{}: {rendered}", row.name),
            }
            if row.scope == Scope::Validation {
                let refused = sql(false, &t, row.operator, &v).err().map(|e| e.message);
                assert!(refused.is_some_and(|m| m.contains("validation rules")), "{} outside a validation rule", row.name);
            }
            for refused_type in row.refused_on {
                assert!(sql(true, &target(*refused_type, "jsonb"), row.operator, &v).is_err(), "{} on {refused_type:?}", row.name);
            }
        }
        Ok(())
    }

    #[test]
    fn families_render_their_sql() -> Result<(), ApiError> {
        let t = target(FieldType::Text, "text");
        assert_eq!(sql(false, &t, Operator::Eq, &Value { kind: Some(value::Kind::Null(0)) })?, "t0.\"f\" IS NULL");
        assert_eq!(sql(false, &t, Operator::Lte, &text("b"))?, "t0.\"f\" <= CAST($1 AS text)");
        assert_eq!(sql(false, &t, Operator::NistartsWith, &text("a_b"))?, "NOT (t0.\"f\" ILIKE $1)");
        assert_eq!(sql(false, &t, Operator::In, &operand(Family::Membership))?, "t0.\"f\" = ANY(CAST($1 AS text[]))");
        let empty = Value { kind: Some(value::Kind::List(ValueList { values: vec![] })) };
        assert_eq!(sql(false, &t, Operator::Nin, &empty)?, "NOT (FALSE)");
        assert_eq!(sql(false, &t, Operator::Between, &operand(Family::Range))?, "t0.\"f\" BETWEEN CAST($1 AS text) AND CAST($2 AS text)");
        assert_eq!(sql(false, &t, Operator::Nnull, &Value { kind: Some(value::Kind::Boolean(true)) })?, "NOT (t0.\"f\" IS NULL)");
        assert_eq!(sql(false, &t, Operator::Empty, &Value { kind: Some(value::Kind::Boolean(true)) })?, "(t0.\"f\" IS NULL OR t0.\"f\" = '')");
        assert_eq!(sql(true, &t, Operator::Regex, &text("/^a/i"))?, "t0.\"f\" ~* $1");
        let number = target(FieldType::Integer, "integer");
        assert!(sql(false, &number, Operator::Gt, &text("x")).is_err(), "a value that cannot be of the field's type");
        assert_eq!(sql(false, &number, Operator::Contains, &text("4"))?, "t0.\"f\"::text LIKE $1");
        Ok(())
    }
}
