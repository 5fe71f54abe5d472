//! `filter` and `search` → SQL conditions (spec: Global query parameters; operators and their
//! semantics as directus-facts.md "Filters").
//!
//! Values are bound as text and cast to the field's Postgres type, so enums, domains, dates and
//! numerics compare as their own type; integer values are checked here first so that a bad value
//! names its field. Dynamic variables (`$NOW`, `$CURRENT_USER.<path>`...) are resolved by
//! [`super::variables`]. Functions (`year(date)`) filter as integers.
//! Relational filters are `EXISTS` subqueries: through an M2O the related item must match;
//! through an O2M (and so an M2M junction) some related item must (`_some`, the default) or
//! none may (`_none`).

use super::functions::{Call, Function};
use super::variables::Operand;
use super::sql::{Param, column, escape_like};
use super::{Planner, forbidden_field};
use crate::schema::{Collection, FieldRelation, FieldType};
use cdapi_proto::ApiError;
use cdapi_proto::query_json::operator_name;
use cdapi_proto::v1::{FieldCondition, Filter, Operator, Quantifier, RelationFilter, Value, filter, value};

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
    /// Compiles a filter tree on `collection` (rows aliased `alias`) into a boolean SQL expression.
    /// Errors: FORBIDDEN for unknown fields; INVALID_QUERY for operators or values that do not fit.
    pub fn filter(&mut self, collection: &Collection, alias: &str, f: &Filter, depth: usize) -> Result<String, ApiError> {
        if depth > self.limits.max_depth {
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
                    .map(|c| self.filter(collection, alias, c, depth + 1))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(format!("({})", parts.join(if is_and { " AND " } else { " OR " })))
            }
            Some(filter::Node::Condition(c)) => self.condition(collection, alias, c),
            Some(filter::Node::Relation(r)) => self.relation(collection, alias, r, depth),
        }
    }

    fn relation(&mut self, collection: &Collection, alias: &str, r: &RelationFilter, depth: usize) -> Result<String, ApiError> {
        if let Some(scope) = &r.scope {
            return self.m2a_relation(collection, alias, &r.field, scope, r, depth);
        }
        let field = collection.field(&r.field).ok_or_else(|| forbidden_field(&collection.name, &r.field))?;
        let quantifier = Quantifier::try_from(r.quantifier).unwrap_or(Quantifier::Unspecified);
        let inner = self.sql.next_alias('t');
        let (related, join) = match &field.relation {
            Some(FieldRelation::M2O { related, related_field, .. }) => {
                if quantifier != Quantifier::Unspecified {
                    return Err(ApiError::invalid_query(format!(
                        "\"_some\"/\"_none\" only apply to to-many relations; \"{}\" is a many-to-one",
                        field.name
                    )));
                }
                (related, format!("{} = {}", column(&inner, related_field), column(alias, &field.name)))
            }
            Some(FieldRelation::O2M { related, related_field, local_field, .. }) => {
                (related, format!("{} = {}", column(&inner, related_field), column(alias, local_field)))
            }
            Some(FieldRelation::M2A { .. }) => {
                return Err(ApiError::invalid_query(format!(
                    "\"{}\" is a many-to-any field: filter one collection's items with \"{}:<collection>\"",
                    field.name, field.name
                )));
            }
            None => {
                return Err(ApiError::invalid_query(format!(
                    "Field \"{}\" of collection \"{}\" is not a relation; use an operator such as \"_eq\"",
                    field.name, collection.name
                )));
            }
        };
        let related = self.collection(related)?;
        let nested = match &r.filter {
            Some(f) => self.filter(related, &inner, f, depth + 1)?,
            None => "TRUE".into(),
        };
        let exists = format!(
            "EXISTS (SELECT 1 FROM {} {inner} WHERE {join} AND {nested})",
            self.source(related)?
        );
        Ok(if quantifier == Quantifier::None { format!("NOT {exists}") } else { exists })
    }

    /// `{"item:headings": {...}}`: rows whose item is in `scope` and matches the nested filter.
    fn m2a_relation(&mut self, collection: &Collection, alias: &str, name: &str, scope: &str, r: &RelationFilter, depth: usize) -> Result<String, ApiError> {
        let field = collection.field(name).ok_or_else(|| forbidden_field(&collection.name, name))?;
        let Some(FieldRelation::M2A { collection_field, allowed }) = &field.relation else {
            return Err(ApiError::invalid_query(format!("\"{name}:{scope}\": \"{name}\" is not a many-to-any field")));
        };
        if !allowed.iter().any(|c| c == scope) {
            return Err(ApiError::invalid_query(format!("\"{name}:{scope}\": \"{scope}\" is not a collection \"{name}\" can hold")));
        }
        if Quantifier::try_from(r.quantifier).unwrap_or(Quantifier::Unspecified) != Quantifier::Unspecified {
            return Err(ApiError::invalid_query("\"_some\"/\"_none\" only apply to to-many relations"));
        }
        let related = self.collection(scope)?;
        let Some(pk) = related.primary_key_fields().next().filter(|_| related.primary_key.len() == 1) else {
            return Err(ApiError::invalid_query(format!("\"{scope}\" needs a single-column primary key")));
        };
        let inner = self.sql.next_alias('t');
        let nested = match &r.filter {
            Some(f) => self.filter(related, &inner, f, depth + 1)?,
            None => "TRUE".into(),
        };
        let p = self.sql.param(Param::Text(scope.to_owned()));
        // CASE keeps the cast from running on keys of other collections.
        Ok(format!(
            "CASE WHEN {} = {p} THEN EXISTS (SELECT 1 FROM {} {inner} WHERE {} = CAST({} AS {}) AND {nested}) ELSE FALSE END",
            column(alias, collection_field),
            self.source(related)?,
            column(&inner, &pk.name),
            column(alias, &field.name),
            pk.db_type
        ))
    }

    fn target(&mut self, collection: &Collection, alias: &str, name: &str, function: Function) -> Result<Target, ApiError> {
        if let Some(call) = Call::of(function, name) {
            let expr = self.function_expr(collection, alias, &call)?;
            let name = format!("{}({name})", cdapi_proto::paths::function_name(function));
            return Ok(Target { expr, field_type: FieldType::BigInteger, db_type: "bigint".into(), is_enum: false, name });
        }
        let field = collection.field(name).ok_or_else(|| forbidden_field(&collection.name, name))?;
        if field.is_alias() {
            return Err(ApiError::invalid_query(format!(
                "\"{name}\" is a one-to-many field; filter on its related fields instead (e.g. {{\"{name}\": {{\"<field>\": {{\"_eq\": ...}}}}}}), or on count({name})"
            )));
        }
        Ok(Target {
            expr: column(alias, &field.name),
            field_type: field.field_type,
            db_type: field.db_type.clone(),
            is_enum: !field.enum_values.is_empty(),
            name: field.name.clone(),
        })
    }

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
                return Err(ApiError::invalid_query(format!(
                    "\"{}\" on field \"{}\" takes a single value, not a list",
                    operator_name(op),
                    t.name
                )));
            }
        };
        if let Some(var) = text.strip_prefix('$') {
            return self.variable(var).map(Some);
        }
        check_value(t, &text)?;
        Ok(Some(Operand::Text(text)))
    }

    /// The operand as a list (array, or comma-separated string; directus-facts.md `_in`).
    fn list(&mut self, t: &Target, op: Operator, v: Option<&Value>) -> Result<Vec<Operand>, ApiError> {
        let items: Vec<Value> = match v.and_then(|v| v.kind.as_ref()) {
            Some(value::Kind::List(l)) => l.values.clone(),
            Some(value::Kind::String(s)) => {
                s.split(',').map(|p| Value { kind: Some(value::Kind::String(p.trim().to_owned())) }).collect()
            }
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

    fn condition(&mut self, collection: &Collection, alias: &str, c: &FieldCondition) -> Result<String, ApiError> {
        let t = self.target(collection, alias, &c.field, c.function())?;
        let op = Operator::try_from(c.operator).unwrap_or(Operator::Unspecified);
        self.compare(&t, op, c.value.as_ref())
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
            return Err(ApiError::invalid_query(format!(
                "\"{}\" cannot be used on field \"{}\" of type {}",
                operator_name(op),
                t.name,
                t.field_type.as_str()
            )));
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
                let p = match text.strip_prefix('$').map(|var| self.variable(var)).transpose()? {
                    None => self.sql.param(Param::Text(format!("{prefix}{}{suffix}", escape_like(&text)))),
                    Some(Operand::Text(value)) => self.sql.param(Param::Text(format!("{prefix}{}{suffix}", escape_like(&value)))),
                    // A field of the caller's record: its text, escaped the same way, in SQL.
                    Some(Operand::Expr(e)) => format!(
                        r"('{prefix}' || replace(replace(replace(CAST({e} AS text), '', '\'), '%', '\%'), '_', '\_') || '{suffix}')"
                    ),
                    Some(Operand::Now(_) | Operand::Many(_)) => {
                        return Err(ApiError::invalid_query(format!("\"{name}\" needs a text value")));
                    }
                };
                let kw = if insensitive { "ILIKE" } else { "LIKE" };
                if negate { format!("NOT ({as_text} {kw} {p})") } else { format!("{as_text} {kw} {p}") }
            }
            Operator::Between | Operator::Nbetween => {
                let items = self.list(t, op, v)?;
                let [lo, hi] = <[Operand; 2]>::try_from(items)
                    .map_err(|_| ApiError::invalid_query(format!("\"{}\" takes exactly two values", operator_name(op))))?;
                let (lo, hi) = (self.operand_sql(t, lo)?, self.operand_sql(t, hi)?);
                let between = format!("{col} BETWEEN {lo} AND {hi}");
                if op == Operator::Between { between } else { format!("NOT ({between})") }
            }
            Operator::Empty | Operator::Nempty => {
                let empty = boolean_operand(op, v).unwrap_or(true) == (op == Operator::Empty);
                let is_empty = if t.field_type.is_textual() {
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
                    t.name
                )));
            }
            Operator::Unspecified => return Err(ApiError::invalid_query("A filter condition has no operator")),
        })
    }

    /// `search` (spec: Global query parameters): case-insensitive substring match over the root
    /// item's string and text fields (enum labels included); integer fields also match a
    /// whole-number search exactly. No searchable field: matches nothing.
    pub fn search(&mut self, collection: &Collection, alias: &str, term: &str) -> String {
        let mut parts = Vec::new();
        let mut pattern = None;
        let number = term.trim().parse::<i64>().ok();
        for f in collection.fields.iter().filter(|f| !f.is_alias()) {
            if f.field_type.is_textual() {
                let p = pattern
                    .get_or_insert_with(|| self.sql.param(Param::Text(format!("%{}%", escape_like(term)))))
                    .clone();
                let col = column(alias, &f.name);
                let col = if f.enum_values.is_empty() { col } else { format!("{col}::text") };
                parts.push(format!("{col} ILIKE {p}"));
            } else if let (true, Some(n)) = (f.field_type.is_integer(), number) {
                let p = self.sql.param(Param::Int(n));
                parts.push(format!("{} = {p}", column(alias, &f.name)));
            }
        }
        if parts.is_empty() { "FALSE".into() } else { format!("({})", parts.join(" OR ")) }
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
        Err(ApiError::invalid_query(format!(
            "\"{text}\" is not a valid value for field \"{}\" of type {}",
            t.name,
            t.field_type.as_str()
        )))
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
