//! The one operator table (spec: Filter rules; directus-facts.md "Filters"): an operator with
//! its operand on a [`Target`] (a column, a function of one, or an aggregate) as SQL. Filters
//! ([`super::filter`]), permission and validation rules, and `having` ([`super::aggregate`]) all
//! compare through [`Planner::compare`]; adding an operator means its enum value in
//! `query.proto`, its arm here, and its GraphQL input.
//!
//! Values are bound as text and cast to the target's Postgres type, so enums, domains, dates and
//! numerics compare as their own type; integer values are checked here first so that a bad value
//! names its field. Dynamic variables (`$NOW`, `$CURRENT_USER.<path>`...) are resolved by
//! [`super::variables`].

use super::Planner;
use super::sql::{Param, escape_like};
use super::variables::Operand;
use crate::schema::FieldType;
use cdapi_proto::ApiError;
use cdapi_proto::query_json::operator_name;
use cdapi_proto::v1::{Operator, Value, value};

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
            Operand::Now(None) => format!("CAST(now() AS {})", t.db_type),
            Operand::Now(Some(interval)) => {
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

    /// The operand as a list (array, or comma-separated string; directus-facts.md `_in`).
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

    /// The one operator table (spec: Filter rules): `op` with operand `v` on the expression of
    /// `t`, as SQL. Used by filters, validation rules and `having`. Errors: INVALID_QUERY for an
    /// operator the type does not take, a missing or malformed operand.
    pub(super) fn compare(&mut self, t: &Target, op: Operator, v: Option<&Value>) -> Result<String, ApiError> {
        let ordering = matches!(op, Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte | Operator::Between | Operator::Nbetween);
        let refused = match t.field_type {
            // json has no equality or order in Postgres.
            FieldType::Json => ordering || matches!(op, Operator::Eq | Operator::Neq | Operator::In | Operator::Nin),
            // arrays compare as whole arrays; a list of candidates makes no sense.
            FieldType::Csv => matches!(op, Operator::In | Operator::Nin),
            _ => false,
        };
        if refused {
            return Err(ApiError::invalid_query(format!("\"{}\" cannot be used on field \"{}\" of type {}", operator_name(op), t.name, t.field_type.as_str())));
        }
        let col = t.expr.clone();
        let as_text = if t.field_type.is_textual() && !t.is_enum { col.clone() } else { format!("{col}::text") };
        let need = |o: Option<Operand>| o.ok_or_else(|| ApiError::invalid_query(format!("\"{}\" needs a value", operator_name(op))));
        Ok(match op {
            Operator::Eq => match self.scalar(t, op, v)? {
                None => format!("{col} IS NULL"),
                Some(o) => format!("{col} = {}", self.operand_sql(t, o)?),
            },
            Operator::Neq => match self.scalar(t, op, v)? {
                None => format!("{col} IS NOT NULL"),
                Some(o) => format!("{col} <> {}", self.operand_sql(t, o)?),
            },
            Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte => {
                let sym = match op {
                    Operator::Lt => "<",
                    Operator::Lte => "<=",
                    Operator::Gt => ">",
                    _ => ">=",
                };
                let o = need(self.scalar(t, op, v)?)?;
                format!("{col} {sym} {}", self.operand_sql(t, o)?)
            }
            Operator::In | Operator::Nin => {
                let items = self.list(t, op, v)?;
                if items.is_empty() {
                    return Ok(if op == Operator::In { "FALSE" } else { "TRUE" }.into());
                }
                let any = if items.iter().all(|o| matches!(o, Operand::Text(_))) {
                    // Literals: one array parameter, whatever their number.
                    let texts = items.into_iter().filter_map(|o| if let Operand::Text(s) = o { Some(s) } else { None }).collect();
                    let p = self.sql.param(Param::TextArray(texts));
                    format!("{col} = ANY(CAST({p} AS {}[]))", t.db_type)
                } else {
                    let exprs = items.into_iter().map(|o| self.operand_sql(t, o)).collect::<Result<Vec<_>, _>>()?;
                    format!("{col} IN ({})", exprs.join(", "))
                };
                if op == Operator::In { any } else { format!("NOT ({any})") }
            }
            Operator::Null | Operator::Nnull => {
                let is_null = boolean_operand(op, v)? == (op == Operator::Null);
                format!("{col} IS {}NULL", if is_null { "" } else { "NOT " })
            }
            Operator::Contains
            | Operator::Ncontains
            | Operator::Icontains
            | Operator::Nicontains
            | Operator::StartsWith
            | Operator::NstartsWith
            | Operator::IstartsWith
            | Operator::NistartsWith
            | Operator::EndsWith
            | Operator::NendsWith
            | Operator::IendsWith
            | Operator::NiendsWith => {
                let text = match v.and_then(|v| v.kind.as_ref()) {
                    Some(value::Kind::String(s)) => s.clone(),
                    Some(value::Kind::Integer(i)) => i.to_string(),
                    Some(value::Kind::Float(f)) => f.to_string(),
                    Some(value::Kind::Boolean(b)) => b.to_string(),
                    _ => return Err(ApiError::invalid_query(format!("\"{}\" needs a text value", operator_name(op)))),
                };
                let name = operator_name(op);
                let (prefix, suffix) = if name.contains("starts_with") {
                    ("", "%")
                } else if name.contains("ends_with") {
                    ("%", "")
                } else {
                    ("%", "%")
                };
                let negate = name.starts_with("_n");
                let insensitive = name.starts_with("_i") || name.starts_with("_ni");
                let p = match text.strip_prefix('$').filter(|v| super::variables::is_variable(v)).map(|var| self.variable(var)).transpose()? {
                    None => self.sql.param(Param::Text(format!("{prefix}{}{suffix}", escape_like(&text)))),
                    Some(Operand::Text(value)) => self.sql.param(Param::Text(format!("{prefix}{}{suffix}", escape_like(&value)))),
                    // A field of the caller's record: its text, escaped the same way, in SQL.
                    Some(Operand::Expr(e)) => {
                        format!(r"('{prefix}' || replace(replace(replace(CAST({e} AS text), '', '\'), '%', '\%'), '_', '\_') || '{suffix}')")
                    }
                    Some(Operand::Now(_) | Operand::Many(_)) => {
                        return Err(ApiError::invalid_query(format!("\"{name}\" needs a text value")));
                    }
                };
                let kw = if insensitive { "ILIKE" } else { "LIKE" };
                if negate { format!("NOT ({as_text} {kw} {p})") } else { format!("{as_text} {kw} {p}") }
            }
            Operator::Between | Operator::Nbetween => {
                let items = self.list(t, op, v)?;
                let [lo, hi] =
                    <[Operand; 2]>::try_from(items).map_err(|_| ApiError::invalid_query(format!("\"{}\" takes exactly two values", operator_name(op))))?;
                let (lo, hi) = (self.operand_sql(t, lo)?, self.operand_sql(t, hi)?);
                let between = format!("{col} BETWEEN {lo} AND {hi}");
                if op == Operator::Between { between } else { format!("NOT ({between})") }
            }
            Operator::Empty | Operator::Nempty => {
                let empty = boolean_operand(op, v).unwrap_or(true) == (op == Operator::Empty);
                let is_empty = if t.field_type.is_textual() { format!("({col} IS NULL OR {as_text} = '')") } else { format!("{col} IS NULL") };
                if empty { is_empty } else { format!("NOT {is_empty}") }
            }
            Operator::Intersects | Operator::Nintersects | Operator::IntersectsBbox | Operator::NintersectsBbox => {
                return Err(ApiError::invalid_query(format!("\"{}\" applies to geometry fields only; \"{}\" is not one", operator_name(op), t.name)));
            }
            Operator::Unspecified => return Err(ApiError::invalid_query("A filter condition has no operator")),
        })
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
