//! `filter` and `search` → SQL conditions (Directus docs "Global Query Parameters"; operators and
//! their semantics as Directus docs "Filter Rules").
//!
//! Each condition's target (a column, or a function of one: functions filter as integers) is
//! compared by the one operator table, [`super::operators`].
//! Relational filters are `EXISTS` subqueries: through an M2O the related item must match;
//! through an O2M (and so an M2M junction) some related item must (`_some`, the default) or
//! none may (`_none`). `$FOLLOW(<collection>,<field>)` (Directus 11) follows an M2O of another
//! collection backwards, as an O2M without an alias.

use super::Planner;
use super::functions::{Call, Function};
use super::operators::Target;
use crate::schema::{Collection, FieldRelation, FieldType, ValueCast};
use crate::sql::{Param, column, escape_like};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{FieldCondition, Filter, Operator, Quantifier, RelationFilter, filter};

/// `$FOLLOW(<collection>,<field>)` → `(collection, field)`.
fn followed(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("$FOLLOW(")?.strip_suffix(')')?.split_once(',')
}

impl Planner<'_> {
    /// Compiles a filter tree on `collection` (rows aliased `alias`) into a boolean SQL expression.
    /// Errors: FORBIDDEN for unknown fields; INVALID_QUERY for operators or values that do not fit.
    pub fn filter(&mut self, collection: &Collection, alias: &str, f: &Filter, depth: usize) -> Result<String, ApiError> {
        if depth > self.limits.max_depth {
            return Err(ApiError::invalid_query("Max relational depth exceeded"));
        }
        self.count_condition()?;
        match &f.node {
            None => Ok("TRUE".into()),
            Some(filter::Node::And(g)) | Some(filter::Node::Or(g)) => {
                let is_and = matches!(f.node, Some(filter::Node::And(_)));
                if g.filters.is_empty() {
                    return Ok(if is_and { "TRUE" } else { "FALSE" }.into());
                }
                let parts = g.filters.iter().map(|c| self.filter(collection, alias, c, depth + 1)).collect::<Result<Vec<_>, _>>()?;
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
        let quantifier = Quantifier::try_from(r.quantifier).unwrap_or(Quantifier::Unspecified);
        let inner = self.sql.next_alias('t');
        if let Some((from, via)) = followed(&r.field) {
            let join = self.follow_join(collection, alias, &inner, from, via)?;
            let related = self.collection(from)?;
            return self.exists(related, &inner, &join, r, quantifier, depth);
        }
        let field = collection.field(&r.field).ok_or_else(|| ApiError::forbidden_field(&collection.name, &r.field))?;
        let (related, join) = match &field.relation {
            Some(FieldRelation::M2O { related, related_field, .. }) => {
                if quantifier != Quantifier::Unspecified {
                    return Err(ApiError::invalid_query(format!("\"_some\"/\"_none\" only apply to to-many relations; \"{}\" is a many-to-one", field.name)));
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
        self.exists(related, &inner, &join, r, quantifier, depth)
    }

    /// `EXISTS` (`NOT EXISTS` for `_none`) a row `inner` of `related` joined by `join` that
    /// matches the relation filter's nested filter.
    fn exists(&mut self, related: &Collection, inner: &str, join: &str, r: &RelationFilter, quantifier: Quantifier, depth: usize) -> Result<String, ApiError> {
        let nested = match &r.filter {
            Some(f) => self.filter(related, inner, f, depth + 1)?,
            None => "TRUE".into(),
        };
        let exists = format!("EXISTS (SELECT 1 FROM {} {inner} WHERE {join} AND {nested})", self.source(related)?);
        Ok(if quantifier == Quantifier::None { format!("NOT {exists}") } else { exists })
    }

    /// The join of `$FOLLOW(<from>,<via>)` (Directus 11's reverse relation, as the Studio's
    /// M2M "add existing" list sends it): rows `inner` of `from` whose M2O `via` points at the
    /// row `alias` of `collection`. Errors: FORBIDDEN for a collection or field the caller
    /// cannot read; INVALID_QUERY when `via` is not an M2O to `collection`.
    fn follow_join(&mut self, collection: &Collection, alias: &str, inner: &str, from: &str, via: &str) -> Result<String, ApiError> {
        let source = self.collection(from)?;
        let field = source.field(via).ok_or_else(|| ApiError::forbidden_field(from, via))?;
        match &field.relation {
            Some(FieldRelation::M2O { related, related_field, .. }) if *related == collection.name => {
                Ok(format!("{} = {}", column(inner, &field.name), column(alias, related_field)))
            }
            _ => Err(ApiError::invalid_query(format!("\"$FOLLOW({from},{via})\": \"{via}\" is not a many-to-one field to \"{}\"", collection.name))),
        }
    }

    /// `{"item:headings": {...}}`: rows whose item is in `scope` and matches the nested filter.
    fn m2a_relation(&mut self, collection: &Collection, alias: &str, name: &str, scope: &str, r: &RelationFilter, depth: usize) -> Result<String, ApiError> {
        let field = collection.field(name).ok_or_else(|| ApiError::forbidden_field(&collection.name, name))?;
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
            let name = query_language::paths::call_text(name, function);
            return Ok(Target { expr, field_type: FieldType::BigInteger, db_type: "bigint".into(), is_enum: false, name });
        }
        let field = collection.field(name).ok_or_else(|| ApiError::forbidden_field(&collection.name, name))?;
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

    fn condition(&mut self, collection: &Collection, alias: &str, c: &FieldCondition) -> Result<String, ApiError> {
        let t = self.target(collection, alias, &c.field, c.function())?;
        let op = Operator::try_from(c.operator).unwrap_or(Operator::Unspecified);
        // A concealed value is only known to be there or not (Directus's rule).
        let presence = query_language::operators::info(op).is_some_and(|i| i.family.is_presence());
        if collection.cast(&c.field) == Some(ValueCast::Conceal) && !presence {
            let name = query_language::filters::operator_name(op);
            return Err(ApiError::invalid_query(format!("Field with \"conceal\" special does not allow the \"{name}\" filter operator.")));
        }
        self.compare(&t, op, c.value.as_ref())
    }

    /// `search` (Directus docs "Global Query Parameters"): case-insensitive substring match over the root
    /// item's string and text fields (enum labels included); integer fields also match a
    /// whole-number search exactly; concealed fields are not searched. No searchable field:
    /// matches nothing.
    pub fn search(&mut self, collection: &Collection, alias: &str, term: &str) -> String {
        let mut parts = Vec::new();
        let mut pattern = None;
        let number = term.trim().parse::<i64>().ok();
        for f in collection.fields.iter().filter(|f| !f.is_alias() && collection.cast(&f.name) != Some(ValueCast::Conceal)) {
            if f.field_type.is_textual() {
                let p = pattern.get_or_insert_with(|| self.sql.param(Param::Text(format!("%{}%", escape_like(term))))).clone();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::test_schema::blog;
    use crate::query::{Limits, Variables};
    use cdapi_proto::ErrorCode;
    use serde_json::{Value, json};

    /// The SQL of filter `f` on `collection` (rows `t0`), planned as a signed-in caller.
    fn where_sql(collection: &str, f: Value, limits: Limits) -> Result<String, ApiError> {
        let schema = blog();
        let c = schema.collection(collection).ok_or_else(ApiError::internal)?.clone();
        let vars = Variables { user: Some("u1".into()), ..Variables::default() };
        let filter = query_language::query_json::filter_from_json(&f, 0)?.ok_or_else(ApiError::internal)?;
        Planner::new(&schema, limits, &vars).filter(&c, "t0", &filter, 0)
    }

    fn code(r: Result<String, ApiError>) -> Option<ErrorCode> {
        r.err().map(|e| e.code)
    }

    #[test]
    fn a_many_to_one_filter_is_an_exists_on_the_related_row() -> Result<(), ApiError> {
        let sql = where_sql("articles", json!({"author": {"name": {"_eq": "Ada"}}}), Limits::default())?;
        assert_eq!(sql, "EXISTS (SELECT 1 FROM \"public\".\"authors\" t1 WHERE t1.\"id\" = t0.\"author\" AND t1.\"name\" = CAST($1 AS text))");
        Ok(())
    }

    #[test]
    fn to_many_filters_quantify_over_the_related_rows() -> Result<(), ApiError> {
        let some = where_sql("authors", json!({"articles": {"title": {"_eq": "x"}}}), Limits::default())?;
        assert_eq!(some, "EXISTS (SELECT 1 FROM \"public\".\"articles\" t1 WHERE t1.\"author\" = t0.\"id\" AND t1.\"title\" = CAST($1 AS text))");
        let none = where_sql("authors", json!({"articles": {"_none": {"title": {"_eq": "x"}}}}), Limits::default())?;
        assert_eq!(none, format!("NOT {some}"));
        Ok(())
    }

    #[test]
    fn groups_combine_and_empty_groups_are_constants() -> Result<(), ApiError> {
        let sql = where_sql("articles", json!({"_or": [{"id": {"_eq": 1}}, {"_and": [{"title": {"_null": true}}, {"id": {"_gt": 5}}]}]}), Limits::default())?;
        assert_eq!(sql, "(t0.\"id\" = CAST($1 AS integer) OR (t0.\"title\" IS NULL AND t0.\"id\" > CAST($2 AS integer)))");
        assert_eq!(where_sql("articles", json!({"_or": []}), Limits::default())?, "FALSE");
        assert_eq!(where_sql("articles", json!({"_and": []}), Limits::default())?, "TRUE");
        Ok(())
    }

    #[test]
    fn mistakes_are_refused_with_their_codes() {
        // A field that does not exist: the same answer as one the caller may not read.
        assert_eq!(code(where_sql("articles", json!({"nope": {"_eq": 1}}), Limits::default())), Some(ErrorCode::Forbidden));
        // `_some` on a many-to-one, a condition on a to-many alias, a relation under a scalar.
        assert_eq!(code(where_sql("articles", json!({"author": {"_some": {"name": {"_eq": "x"}}}}), Limits::default())), Some(ErrorCode::InvalidQuery));
        assert_eq!(code(where_sql("authors", json!({"articles": {"_eq": 1}}), Limits::default())), Some(ErrorCode::InvalidQuery));
        assert_eq!(code(where_sql("articles", json!({"title": {"name": {"_eq": "x"}}}), Limits::default())), Some(ErrorCode::InvalidQuery));
        // A value that cannot be of the field's type names the field.
        let e = where_sql("articles", json!({"id": {"_eq": "seven"}}), Limits::default()).err().map(|e| e.message).unwrap_or_default();
        assert!(e.contains("\"id\""), "{e}");
    }

    #[test]
    fn depth_and_condition_budgets_hold() {
        let deep = json!({"author": {"articles": {"author": {"name": {"_eq": "x"}}}}});
        assert!(where_sql("articles", deep.clone(), Limits::default()).is_ok());
        assert_eq!(code(where_sql("articles", deep, Limits { max_depth: 2, ..Limits::default() })), Some(ErrorCode::InvalidQuery));
        let three = json!({"id": {"_gt": 1}, "title": {"_null": false}, "author": {"_null": true}});
        let two = Limits { max_conditions: Some(2), ..Limits::default() };
        assert_eq!(code(where_sql("articles", three.clone(), two)), Some(ErrorCode::InvalidQuery));
        assert!(where_sql("articles", three, Limits { max_conditions: Some(10), ..Limits::default() }).is_ok());
    }

    #[test]
    fn search_matches_text_fields_and_whole_numbers() -> Result<(), ApiError> {
        let schema = blog();
        let c = schema.collection("articles").ok_or_else(ApiError::internal)?.clone();
        let vars = Variables::default();
        let mut planner = Planner::new(&schema, Limits::default(), &vars);
        assert_eq!(planner.search(&c, "t0", "ad_a"), "(t0.\"title\" ILIKE $1)");
        assert_eq!(planner.sql.params, vec![Param::Text("%ad\\_a%".into())]);
        let mut planner = Planner::new(&schema, Limits::default(), &vars);
        assert_eq!(planner.search(&c, "t0", "7"), "(t0.\"id\" = $1 OR t0.\"title\" ILIKE $2 OR t0.\"author\" = $3)");
        Ok(())
    }
}
