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
use super::predicate::{Column, Exists, InScope, Operand, Pattern, Predicate, Test};
use crate::schema::{Collection, FieldRelation, FieldType, ValueCast};
use crate::sql::escape_like;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{FieldCondition, Filter, Operator, Quantifier, RelationFilter, filter};

/// `$FOLLOW(<collection>,<field>)` → `(collection, field)`.
fn followed(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("$FOLLOW(")?.strip_suffix(')')?.split_once(',')
}

/// How a related row joins the outer one: (the related row's column, the outer row's column).
type Join = (Column, Column);

impl Planner<'_> {
    /// Plans a filter tree on `collection` (rows aliased `alias`) into a [`Predicate`].
    /// Errors: FORBIDDEN for unknown fields; INVALID_QUERY for operators or values that do not
    /// fit, past [`super::Limits::max_depth`] or the condition budget.
    pub fn filter(&mut self, collection: &Collection, alias: &str, f: &Filter, depth: usize) -> Result<Predicate, ApiError> {
        if depth > self.limits.max_depth {
            return Err(ApiError::invalid_query("Max relational depth exceeded"));
        }
        self.count_condition()?;
        match &f.node {
            None => Ok(Predicate::Const(true)),
            Some(filter::Node::And(g)) | Some(filter::Node::Or(g)) => {
                let parts = g.filters.iter().map(|c| self.filter(collection, alias, c, depth + 1)).collect::<Result<Vec<_>, _>>()?;
                Ok(if matches!(f.node, Some(filter::Node::And(_))) { Predicate::And(parts) } else { Predicate::Or(parts) })
            }
            Some(filter::Node::Condition(c)) => self.condition(collection, alias, c),
            Some(filter::Node::Relation(r)) => self.relation(collection, alias, r, depth),
        }
    }

    fn relation(&mut self, collection: &Collection, alias: &str, r: &RelationFilter, depth: usize) -> Result<Predicate, ApiError> {
        if let Some(scope) = &r.scope {
            return self.m2a_relation(collection, alias, &r.field, scope, r, depth);
        }
        let quantifier = Quantifier::try_from(r.quantifier).unwrap_or(Quantifier::Unspecified);
        let inner = self.sql.next_alias('t');
        if let Some((from, via)) = followed(&r.field) {
            let join = self.follow_join(collection, alias, &inner, from, via)?;
            let related = self.collection(from)?;
            return self.exists(related, &inner, join, r, quantifier, depth);
        }
        let field = collection.field(&r.field).ok_or_else(|| ApiError::forbidden_field(&collection.name, &r.field))?;
        let (related, join) = match &field.relation {
            Some(FieldRelation::M2O { related, related_field, .. }) => {
                if quantifier != Quantifier::Unspecified {
                    return Err(ApiError::invalid_query(format!("\"_some\"/\"_none\" only apply to to-many relations; \"{}\" is a many-to-one", field.name)));
                }
                (related, (Column::new(&inner, related_field), Column::new(alias, &field.name)))
            }
            Some(FieldRelation::O2M { related, related_field, local_field, .. }) => {
                (related, (Column::new(&inner, related_field), Column::new(alias, local_field)))
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
        self.exists(related, &inner, join, r, quantifier, depth)
    }

    /// Some row `inner` of `related` joined by `join` matches the relation filter's nested
    /// filter (none may for `_none`).
    fn exists(
        &mut self,
        related: &Collection,
        inner: &str,
        join: Join,
        r: &RelationFilter,
        quantifier: Quantifier,
        depth: usize,
    ) -> Result<Predicate, ApiError> {
        let filter = self.nested(related, inner, r, depth)?;
        let (inner_column, outer) = join;
        let exists = Exists { from: self.source(related)?, alias: inner.to_owned(), inner: inner_column, outer, cast: None, filter };
        let exists = Predicate::Exists(Box::new(exists));
        Ok(if quantifier == Quantifier::None { exists.negate() } else { exists })
    }

    /// The nested filter of a relation filter on rows `inner` of `related` (none: `TRUE`).
    fn nested(&mut self, related: &Collection, inner: &str, r: &RelationFilter, depth: usize) -> Result<Predicate, ApiError> {
        match &r.filter {
            Some(f) => self.filter(related, inner, f, depth + 1),
            None => Ok(Predicate::Const(true)),
        }
    }

    /// The join of `$FOLLOW(<from>,<via>)` (Directus 11's reverse relation, as the Studio's
    /// M2M "add existing" list sends it): rows `inner` of `from` whose M2O `via` points at the
    /// row `alias` of `collection`. Errors: FORBIDDEN for a collection or field the caller
    /// cannot read; INVALID_QUERY when `via` is not an M2O to `collection`.
    fn follow_join(&mut self, collection: &Collection, alias: &str, inner: &str, from: &str, via: &str) -> Result<Join, ApiError> {
        let source = self.collection(from)?;
        let field = source.field(via).ok_or_else(|| ApiError::forbidden_field(from, via))?;
        match &field.relation {
            Some(FieldRelation::M2O { related, related_field, .. }) if *related == collection.name => {
                Ok((Column::new(inner, &field.name), Column::new(alias, related_field)))
            }
            _ => Err(ApiError::invalid_query(format!("\"$FOLLOW({from},{via})\": \"{via}\" is not a many-to-one field to \"{}\"", collection.name))),
        }
    }

    /// `{"item:headings": {...}}`: rows whose item is in `scope` and matches the nested filter.
    fn m2a_relation(&mut self, collection: &Collection, alias: &str, name: &str, scope: &str, r: &RelationFilter, depth: usize) -> Result<Predicate, ApiError> {
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
        let filter = self.nested(related, &inner, r, depth)?;
        let item = Exists {
            from: self.source(related)?,
            alias: inner.clone(),
            inner: Column::new(&inner, &pk.name),
            outer: Column::new(alias, &field.name),
            cast: Some(pk.db_type.clone()),
            filter,
        };
        Ok(Predicate::InScope(Box::new(InScope { collection_column: Column::new(alias, collection_field), scope: scope.to_owned(), item })))
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
        Ok(Target::column(alias, field))
    }

    fn condition(&mut self, collection: &Collection, alias: &str, c: &FieldCondition) -> Result<Predicate, ApiError> {
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
    pub fn search(&self, collection: &Collection, alias: &str, term: &str) -> Predicate {
        let mut parts = Vec::new();
        let number = term.trim().parse::<i64>().ok();
        for f in collection.fields.iter().filter(|f| !f.is_alias() && collection.cast(&f.name) != Some(ValueCast::Conceal)) {
            let test = if f.field_type.is_textual() {
                Test::Like { pattern: Pattern::Literal(format!("%{}%", escape_like(term))), case_insensitive: true }
            } else if let (true, Some(n)) = (f.field_type.is_integer(), number) {
                Test::Equals(Operand::Integer(n))
            } else {
                continue;
            };
            parts.push(Target::column(alias, f).test(test));
        }
        Predicate::Or(parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::predicate::{Comparison, Expr, Source};
    use crate::query::test_schema::blog;
    use crate::query::{Limits, Variables};
    use crate::sql::Sql;
    use cdapi_proto::ErrorCode;
    use query_language::operators::Order;
    use serde_json::{Value, json};

    /// The plan of filter `f` on `collection` (rows `t0`), as a signed-in caller, with the
    /// statement it was planned in (its aliases).
    fn plan(collection: &str, f: Value, limits: Limits) -> Result<(Predicate, Sql), ApiError> {
        let schema = blog();
        let c = schema.collection(collection).ok_or_else(ApiError::internal)?.clone();
        let vars = Variables { user: Some("u1".into()), ..Variables::default() };
        let filter = query_language::query_json::filter_from_json(&f, 0)?.ok_or_else(ApiError::internal)?;
        let mut planner = Planner::new(&schema, limits, &vars);
        let predicate = planner.filter(&c, "t0", &filter, 0)?;
        Ok((predicate, planner.sql))
    }

    fn predicate(collection: &str, f: Value) -> Result<Predicate, ApiError> {
        plan(collection, f, Limits::default()).map(|(p, _)| p)
    }

    fn code(r: Result<(Predicate, Sql), ApiError>) -> Option<ErrorCode> {
        r.err().map(|e| e.code)
    }

    /// `test` on column `name` (of type `db_type`) of rows `alias`.
    fn on(alias: &str, name: &str, db_type: &str, test: Test) -> Predicate {
        Predicate::Compare(Comparison { target: Expr::column(alias, name), db_type: db_type.into(), text_cast: db_type != "text", test })
    }

    fn text(v: &str) -> Operand {
        Operand::Text(v.into())
    }

    #[test]
    fn a_many_to_one_filter_is_an_exists_on_the_related_row() -> Result<(), ApiError> {
        let want = Exists {
            from: Source::Table("\"public\".\"authors\"".into()),
            alias: "t1".into(),
            inner: Column::new("t1", "id"),
            outer: Column::new("t0", "author"),
            cast: None,
            filter: on("t1", "name", "text", Test::Equals(text("Ada"))),
        };
        assert_eq!(predicate("articles", json!({"author": {"name": {"_eq": "Ada"}}}))?, Predicate::Exists(Box::new(want)));
        Ok(())
    }

    #[test]
    fn to_many_filters_quantify_over_the_related_rows() -> Result<(), ApiError> {
        let some = predicate("authors", json!({"articles": {"title": {"_eq": "x"}}}))?;
        let Predicate::Exists(exists) = &some else { panic!("an EXISTS: {some:?}") };
        assert_eq!((&exists.inner, &exists.outer), (&Column::new("t1", "author"), &Column::new("t0", "id")));
        assert_eq!(predicate("authors", json!({"articles": {"_some": {"title": {"_eq": "x"}}}}))?, some, "_some is the default");
        assert_eq!(predicate("authors", json!({"articles": {"_none": {"title": {"_eq": "x"}}}}))?, some.negate());
        Ok(())
    }

    #[test]
    fn follow_joins_the_other_collections_many_to_one_backwards() -> Result<(), ApiError> {
        let p = predicate("authors", json!({"$FOLLOW(articles,author)": {"title": {"_eq": "x"}}}))?;
        let Predicate::Exists(exists) = &p else { panic!("an EXISTS: {p:?}") };
        assert_eq!((&exists.inner, &exists.outer), (&Column::new("t1", "author"), &Column::new("t0", "id")));
        assert_eq!(exists.from, Source::Table("\"public\".\"articles\"".into()));
        let wrong = plan("authors", json!({"$FOLLOW(articles,title)": {"id": {"_eq": 1}}}), Limits::default());
        assert_eq!(code(wrong), Some(ErrorCode::InvalidQuery));
        Ok(())
    }

    #[test]
    fn a_many_to_any_filter_checks_the_items_collection_then_its_row() -> Result<(), ApiError> {
        let p = predicate("mentions", json!({"item:authors": {"name": {"_eq": "Ada"}}}))?;
        let item = Exists {
            from: Source::Table("\"public\".\"authors\"".into()),
            alias: "t1".into(),
            inner: Column::new("t1", "id"),
            outer: Column::new("t0", "item"),
            cast: Some("integer".into()),
            filter: on("t1", "name", "text", Test::Equals(text("Ada"))),
        };
        assert_eq!(p, Predicate::InScope(Box::new(InScope { collection_column: Column::new("t0", "collection"), scope: "authors".into(), item })));
        let refused = |f: Value| code(plan("mentions", f, Limits::default()));
        assert_eq!(refused(json!({"item": {"name": {"_eq": "Ada"}}})), Some(ErrorCode::InvalidQuery), "no collection named");
        assert_eq!(refused(json!({"item:tags": {"name": {"_eq": "Ada"}}})), Some(ErrorCode::InvalidQuery), "a collection it cannot hold");
        assert_eq!(refused(json!({"item:authors": {"_none": {"name": {"_eq": "Ada"}}}})), Some(ErrorCode::InvalidQuery), "a quantifier");
        Ok(())
    }

    #[test]
    fn groups_keep_their_shape() -> Result<(), ApiError> {
        let p = predicate("articles", json!({"_or": [{"id": {"_eq": 1}}, {"_and": [{"title": {"_null": true}}, {"id": {"_gt": 5}}]}]}))?;
        let want = Predicate::Or(vec![
            on("t0", "id", "integer", Test::Equals(text("1"))),
            Predicate::And(vec![on("t0", "title", "text", Test::IsNull), on("t0", "id", "integer", Test::Ordering(Order::Greater, text("5")))]),
        ]);
        assert_eq!(p, want);
        assert_eq!(predicate("articles", json!({"_or": []}))?, Predicate::Or(vec![]));
        assert_eq!(predicate("articles", json!({"_and": []}))?, Predicate::And(vec![]));
        // Several conditions of one object are ANDed.
        let both = predicate("articles", json!({"id": {"_eq": 1}, "title": {"_eq": "a"}}))?;
        assert!(matches!(&both, Predicate::And(parts) if parts.len() == 2), "{both:?}");
        Ok(())
    }

    #[test]
    fn a_plan_renders_into_the_statement_it_was_planned_for() -> Result<(), ApiError> {
        let (p, mut sql) = plan("articles", json!({"author": {"name": {"_eq": "Ada"}}}), Limits::default())?;
        let text = p.render(&mut sql);
        assert_eq!(text, "EXISTS (SELECT 1 FROM \"public\".\"authors\" t1 WHERE t1.\"id\" = t0.\"author\" AND t1.\"name\" = CAST($1 AS text))");
        assert_eq!(sql.reads, vec!["authors".to_owned()], "what a cached result depends on");
        Ok(())
    }

    #[test]
    fn mistakes_are_refused_with_their_codes() {
        let refused = |c: &str, f: Value| code(plan(c, f, Limits::default()));
        // A field that does not exist: the same answer as one the caller may not read.
        assert_eq!(refused("articles", json!({"nope": {"_eq": 1}})), Some(ErrorCode::Forbidden));
        assert_eq!(refused("articles", json!({"nope": {"name": {"_eq": 1}}})), Some(ErrorCode::Forbidden));
        // `_some` on a many-to-one, a condition on a to-many alias, a relation under a scalar.
        assert_eq!(refused("articles", json!({"author": {"_some": {"name": {"_eq": "x"}}}})), Some(ErrorCode::InvalidQuery));
        assert_eq!(refused("authors", json!({"articles": {"_eq": 1}})), Some(ErrorCode::InvalidQuery));
        assert_eq!(refused("articles", json!({"title": {"name": {"_eq": "x"}}})), Some(ErrorCode::InvalidQuery));
        // A value that cannot be of the field's type names the field.
        let e = plan("articles", json!({"id": {"_eq": "seven"}}), Limits::default()).err().map(|e| e.message).unwrap_or_default();
        assert!(e.contains("\"id\""), "{e}");
    }

    #[test]
    fn depth_and_condition_budgets_hold() {
        let deep = json!({"author": {"articles": {"author": {"name": {"_eq": "x"}}}}});
        assert!(plan("articles", deep.clone(), Limits::default()).is_ok());
        assert_eq!(code(plan("articles", deep, Limits { max_depth: 2, ..Limits::default() })), Some(ErrorCode::InvalidQuery));
        let three = json!({"id": {"_gt": 1}, "title": {"_null": false}, "author": {"_null": true}});
        let two = Limits { max_conditions: Some(2), ..Limits::default() };
        assert_eq!(code(plan("articles", three.clone(), two)), Some(ErrorCode::InvalidQuery));
        assert!(plan("articles", three, Limits { max_conditions: Some(10), ..Limits::default() }).is_ok());
    }

    #[test]
    fn search_matches_text_fields_and_whole_numbers() -> Result<(), ApiError> {
        let schema = blog();
        let c = schema.collection("articles").ok_or_else(ApiError::internal)?.clone();
        let vars = Variables::default();
        let planner = Planner::new(&schema, Limits::default(), &vars);
        let like = |alias: &str| on(alias, "title", "text", Test::Like { pattern: Pattern::Literal("%ad\\_a%".into()), case_insensitive: true });
        assert_eq!(planner.search(&c, "t0", "ad_a"), Predicate::Or(vec![like("t0")]));
        let seven = planner.search(&c, "t0", "7");
        let Predicate::Or(parts) = &seven else { panic!("an OR: {seven:?}") };
        assert_eq!(parts.len(), 3, "id, title and author: {seven:?}");
        assert_eq!(
            parts[0],
            Predicate::Compare(Comparison {
                target: Expr::column("t0", "id"),
                db_type: "integer".into(),
                text_cast: true,
                test: Test::Equals(Operand::Integer(7))
            })
        );
        Ok(())
    }
}
