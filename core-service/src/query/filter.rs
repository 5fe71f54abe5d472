//! `filter` and `search` → SQL conditions (spec: Global query parameters; operators and their
//! semantics as directus-facts.md "Filters").
//!
//! Values are bound as text and cast to the field's Postgres type, so enums, domains, dates and
//! numerics compare as their own type; integer values are checked here first so that a bad value
//! names its field. Relational filters are `EXISTS` subqueries: through an M2O the related item
//! must match; through an O2M (and so an M2M junction) some related item must (`_some`, the
//! default) or none may (`_none`).

use super::sql::{Param, Sql, column, escape_like, table};
use super::{MAX_RELATIONAL_DEPTH, forbidden_field, not_supported};
use crate::schema::{Collection, Field, FieldRelation, FieldType, Schema};
use cdapi_proto::ApiError;
use cdapi_proto::query_json::operator_name;
use cdapi_proto::v1::{FieldCondition, Filter, Operator, Quantifier, RelationFilter, Value, filter, value};

/// Compiles a filter tree on `collection` (rows aliased `alias`) into a boolean SQL expression.
/// Errors: FORBIDDEN for unknown fields; INVALID_QUERY for operators or values that do not fit.
pub fn compile(sql: &mut Sql, schema: &Schema, collection: &Collection, alias: &str, f: &Filter, depth: usize) -> Result<String, ApiError> {
    if depth > MAX_RELATIONAL_DEPTH {
        return Err(ApiError::invalid_query("Max relational depth exceeded"));
    }
    match &f.node {
        None => Ok("TRUE".into()),
        Some(filter::Node::And(g)) | Some(filter::Node::Or(g)) => {
            let is_and = matches!(f.node, Some(filter::Node::And(_)));
            if g.filters.is_empty() {
                return Ok(if is_and { "TRUE" } else { "FALSE" }.into());
            }
            let parts = g
                .filters
                .iter()
                .map(|c| compile(sql, schema, collection, alias, c, depth + 1))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(format!("({})", parts.join(if is_and { " AND " } else { " OR " })))
        }
        Some(filter::Node::Condition(c)) => condition(sql, collection, alias, c),
        Some(filter::Node::Relation(r)) => relation(sql, schema, collection, alias, r, depth),
    }
}

fn lookup<'a>(collection: &'a Collection, name: &str) -> Result<&'a Field, ApiError> {
    if name.contains('(') {
        return Err(not_supported(&format!("The function call \"{name}\" in filter")));
    }
    collection.field(name).ok_or_else(|| forbidden_field(&collection.name, name))
}

fn relation(sql: &mut Sql, schema: &Schema, collection: &Collection, alias: &str, r: &RelationFilter, depth: usize) -> Result<String, ApiError> {
    let field = lookup(collection, &r.field)?;
    let quantifier = Quantifier::try_from(r.quantifier).unwrap_or(Quantifier::Unspecified);
    let inner_alias = sql.next_alias('t');
    let (related, join) = match &field.relation {
        Some(FieldRelation::M2O { related, related_field, .. }) => {
            if quantifier != Quantifier::Unspecified {
                return Err(ApiError::invalid_query(format!(
                    "\"_some\"/\"_none\" only apply to to-many relations; \"{}\" is a many-to-one",
                    field.name
                )));
            }
            (related, format!("{} = {}", column(&inner_alias, related_field), column(alias, &field.name)))
        }
        Some(FieldRelation::O2M { related, related_field, local_field, .. }) => {
            (related, format!("{} = {}", column(&inner_alias, related_field), column(alias, local_field)))
        }
        None => {
            return Err(ApiError::invalid_query(format!(
                "Field \"{}\" of collection \"{}\" is not a relation; use an operator such as \"_eq\"",
                field.name, collection.name
            )));
        }
    };
    let related = schema.collection(related).ok_or_else(ApiError::internal)?;
    let nested = match &r.filter {
        Some(f) => compile(sql, schema, related, &inner_alias, f, depth + 1)?,
        None => "TRUE".into(),
    };
    let exists = format!(
        "EXISTS (SELECT 1 FROM {} {inner_alias} WHERE {join} AND {nested})",
        table(&schema.db_schema, &related.name)
    );
    Ok(if quantifier == Quantifier::None { format!("NOT {exists}") } else { exists })
}

/// The operand as text for binding; `None` for null. Lists are refused here.
fn scalar_text(field: &Field, op: Operator, v: Option<&Value>) -> Result<Option<String>, ApiError> {
    let text = match v.and_then(|v| v.kind.as_ref()) {
        None | Some(value::Kind::Null(_)) => return Ok(None),
        Some(value::Kind::Boolean(b)) => b.to_string(),
        Some(value::Kind::String(s)) => s.clone(),
        Some(value::Kind::Integer(i)) => i.to_string(),
        Some(value::Kind::Float(f)) => f.to_string(),
        Some(value::Kind::List(_)) => {
            return Err(ApiError::invalid_query(format!(
                "\"{}\" on field \"{}\" takes a single value, not a list",
                operator_name(op),
                field.name
            )));
        }
    };
    if text.starts_with("$NOW") || text.starts_with("$CURRENT_") {
        return Err(not_supported(&format!("The dynamic variable \"{text}\"")));
    }
    check_value(field, &text)?;
    Ok(Some(text))
}

/// Rejects values that cannot be of the field's type, naming the field (before Postgres would).
fn check_value(field: &Field, text: &str) -> Result<(), ApiError> {
    let ok = match field.field_type {
        FieldType::Integer | FieldType::BigInteger => text.trim().parse::<i64>().is_ok(),
        FieldType::Float | FieldType::Decimal => text.trim().parse::<f64>().is_ok(),
        FieldType::Boolean => matches!(text, "true" | "false" | "1" | "0" | "t" | "f"),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_query(format!(
            "\"{text}\" is not a valid value for field \"{}\" of type {}",
            field.name,
            field.field_type.as_str()
        )))
    }
}

/// The operand as a list (array, or comma-separated string; directus-facts.md `_in`).
fn list_text(field: &Field, op: Operator, v: Option<&Value>) -> Result<Vec<String>, ApiError> {
    let items: Vec<Value> = match v.and_then(|v| v.kind.as_ref()) {
        Some(value::Kind::List(l)) => l.values.clone(),
        Some(value::Kind::String(s)) => s
            .split(',')
            .map(|p| Value { kind: Some(value::Kind::String(p.trim().to_owned())) })
            .collect(),
        None | Some(value::Kind::Null(_)) => Vec::new(),
        Some(_) => vec![v.cloned().unwrap_or_default()],
    };
    items
        .iter()
        .map(|i| {
            scalar_text(field, op, Some(i))?.ok_or_else(|| {
                ApiError::invalid_query(format!("\"{}\" does not accept null inside its list", operator_name(op)))
            })
        })
        .collect()
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

fn condition(sql: &mut Sql, collection: &Collection, alias: &str, c: &FieldCondition) -> Result<String, ApiError> {
    let field = lookup(collection, &c.field)?;
    let op = Operator::try_from(c.operator).unwrap_or(Operator::Unspecified);
    if field.is_alias() {
        return Err(ApiError::invalid_query(format!(
            "\"{}\" is a one-to-many field; filter on its related fields instead (e.g. {{\"{}\": {{\"<field>\": {{\"_eq\": ...}}}}}})",
            field.name, field.name
        )));
    }
    let col = column(alias, &field.name);
    let ty = field.db_type.as_str();
    let v = c.value.as_ref();
    let as_text = if field.field_type.is_textual() && field.enum_values.is_empty() { col.clone() } else { format!("{col}::text") };
    let like = |sql: &mut Sql, pattern: fn(&str) -> String, insensitive: bool, negate: bool| -> Result<String, ApiError> {
        let text = scalar_text(&Field { field_type: FieldType::Text, ..field.clone() }, op, v)?
            .ok_or_else(|| ApiError::invalid_query(format!("\"{}\" needs a value", operator_name(op))))?;
        let p = sql.param(Param::Text(pattern(&escape_like(&text))));
        let kw = if insensitive { "ILIKE" } else { "LIKE" };
        Ok(if negate { format!("NOT ({as_text} {kw} {p})") } else { format!("{as_text} {kw} {p}") })
    };
    let compare = |sql: &mut Sql, sym: &str| -> Result<String, ApiError> {
        let text = scalar_text(field, op, v)?
            .ok_or_else(|| ApiError::invalid_query(format!("\"{}\" cannot compare with null", operator_name(op))))?;
        Ok(format!("{col} {sym} {}", sql.cast_param(text, ty)))
    };
    Ok(match op {
        Operator::Eq => match scalar_text(field, op, v)? {
            None => format!("{col} IS NULL"),
            Some(t) => format!("{col} = {}", sql.cast_param(t, ty)),
        },
        Operator::Neq => match scalar_text(field, op, v)? {
            None => format!("{col} IS NOT NULL"),
            Some(t) => format!("{col} <> {}", sql.cast_param(t, ty)),
        },
        Operator::Lt => compare(sql, "<")?,
        Operator::Lte => compare(sql, "<=")?,
        Operator::Gt => compare(sql, ">")?,
        Operator::Gte => compare(sql, ">=")?,
        Operator::In | Operator::Nin => {
            let items = list_text(field, op, v)?;
            if items.is_empty() {
                return Ok(if op == Operator::In { "FALSE" } else { "TRUE" }.into());
            }
            let p = sql.param(Param::TextArray(items));
            let any = format!("{col} = ANY(CAST({p} AS {ty}[]))");
            if op == Operator::In { any } else { format!("NOT ({any})") }
        }
        Operator::Null | Operator::Nnull => {
            let is_null = boolean_operand(op, v)? == (op == Operator::Null);
            format!("{col} IS {}NULL", if is_null { "" } else { "NOT " })
        }
        Operator::Contains => like(sql, |s| format!("%{s}%"), false, false)?,
        Operator::Ncontains => like(sql, |s| format!("%{s}%"), false, true)?,
        Operator::Icontains => like(sql, |s| format!("%{s}%"), true, false)?,
        Operator::Nicontains => like(sql, |s| format!("%{s}%"), true, true)?,
        Operator::StartsWith => like(sql, |s| format!("{s}%"), false, false)?,
        Operator::NstartsWith => like(sql, |s| format!("{s}%"), false, true)?,
        Operator::IstartsWith => like(sql, |s| format!("{s}%"), true, false)?,
        Operator::NistartsWith => like(sql, |s| format!("{s}%"), true, true)?,
        Operator::EndsWith => like(sql, |s| format!("%{s}"), false, false)?,
        Operator::NendsWith => like(sql, |s| format!("%{s}"), false, true)?,
        Operator::IendsWith => like(sql, |s| format!("%{s}"), true, false)?,
        Operator::NiendsWith => like(sql, |s| format!("%{s}"), true, true)?,
        Operator::Between | Operator::Nbetween => {
            let items = list_text(field, op, v)?;
            let [lo, hi] = <[String; 2]>::try_from(items).map_err(|_| {
                ApiError::invalid_query(format!("\"{}\" takes exactly two values", operator_name(op)))
            })?;
            let (lo, hi) = (sql.cast_param(lo, ty), sql.cast_param(hi, ty));
            let between = format!("{col} BETWEEN {lo} AND {hi}");
            if op == Operator::Between { between } else { format!("NOT ({between})") }
        }
        Operator::Empty | Operator::Nempty => {
            let empty = boolean_operand(op, v).unwrap_or(true) == (op == Operator::Empty);
            let is_empty = if field.field_type.is_textual() {
                format!("({col} IS NULL OR {as_text} = '')")
            } else {
                format!("{col} IS NULL")
            };
            if empty { is_empty } else { format!("NOT {is_empty}") }
        }
        Operator::Intersects | Operator::Nintersects | Operator::IntersectsBbox | Operator::NintersectsBbox => {
            return Err(ApiError::invalid_query(format!(
                "\"{}\" applies to geometry fields only; \"{}\" is not one",
                operator_name(op),
                field.name
            )));
        }
        Operator::Unspecified => return Err(ApiError::invalid_query("A filter condition has no operator")),
    })
}

/// `search` (spec: Global query parameters): case-insensitive substring match over the root
/// item's string and text fields (enum labels included); integer fields also match a
/// whole-number search exactly. No searchable field: matches nothing.
pub fn search(sql: &mut Sql, collection: &Collection, alias: &str, term: &str) -> String {
    let mut parts = Vec::new();
    let mut pattern = None;
    let number = term.trim().parse::<i64>().ok();
    for f in collection.fields.iter().filter(|f| !f.is_alias()) {
        if f.field_type.is_textual() {
            let p = pattern
                .get_or_insert_with(|| sql.param(Param::Text(format!("%{}%", escape_like(term)))))
                .clone();
            let col = column(alias, &f.name);
            let col = if f.enum_values.is_empty() { col } else { format!("{col}::text") };
            parts.push(format!("{col} ILIKE {p}"));
        } else if let (true, Some(n)) = (f.field_type.is_integer(), number) {
            let p = sql.param(Param::Int(n));
            parts.push(format!("{} = {p}", column(alias, &f.name)));
        }
    }
    if parts.is_empty() { "FALSE".into() } else { format!("({})", parts.join(" OR ")) }
}
