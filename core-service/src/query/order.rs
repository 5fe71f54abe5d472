//! `sort` and field paths: the ORDER BY of a level ([`Sort`]), and paths through many-to-one
//! relations (`author.name`) or functions (`year(published_at)`) as SQL expressions with the
//! LEFT JOINs they need ([`Joins`]; shared by sort, groupBy and dynamic variables). Both are
//! planned, then rendered: the joins' related rows are typed sources
//! ([`super::predicate::Source`]), written with the statement; a sort term's expression is an
//! [`Expr`] (a column, a function of one).

use super::Planner;
use super::functions::Call;
use super::predicate::{Column, Expr, Join, Joins};
use crate::schema::{Collection, FieldRelation};
use crate::sql::Sql;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{FieldPath, SortKey};

/// The ORDER BY of one level: its terms in order.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Sort {
    /// The terms, most significant first.
    pub terms: Vec<SortTerm>,
}

/// One term of a [`Sort`].
#[derive(Debug, Clone, PartialEq)]
pub struct SortTerm {
    /// The expression ordered by (a column, a path's column, a function of one).
    pub expr: Expr,
    /// `DESC`.
    pub descending: bool,
}

impl Sort {
    /// Adds a term.
    pub fn by(&mut self, expr: Expr, descending: bool) {
        self.terms.push(SortTerm { expr, descending });
    }

    /// Adds `expr` ascending unless a term orders by it already (either way): how the primary
    /// key (or an aggregate's group keys) make an order stable.
    pub fn then_by(&mut self, expr: Expr) {
        if !self.terms.iter().any(|t| t.expr == expr) {
            self.by(expr, false);
        }
    }

    /// ` ORDER BY a, b DESC`, or nothing without terms; the literals of the rows a term reads (a
    /// related count) bound as parameters of `sql`.
    pub fn render(&self, sql: &mut Sql) -> String {
        if self.terms.is_empty() {
            return String::new();
        }
        let terms: Vec<String> = self
            .terms
            .iter()
            .map(|t| {
                let expr = t.expr.render(sql);
                if t.descending { format!("{expr} DESC") } else { expr }
            })
            .collect();
        format!(" ORDER BY {}", terms.join(", "))
    }
}

impl Planner<'_> {
    /// Sort (`sort`, Directus docs "Global Query Parameters"): descending or not, paths through M2O fields, functions
    /// (`-year(published_at)`), primary key appended for a stable order. Without `sort`, the
    /// manual order `default` comes first (a collection's `meta.sort_field`; for an O2M list,
    /// the relation's `sort_field`, else the related collection's; as Directus, NULLs last)
    /// when the caller may read that field (an order would tell what they may not read).
    /// Returns the joins the paths need and the order.
    pub fn order_by(&mut self, collection: &Collection, root: &str, sort: &[SortKey], default: Option<&str>) -> Result<(Joins, Sort), ApiError> {
        let mut joins = Joins::default();
        let mut order = Sort::default();
        if let (true, Some(field)) = (sort.is_empty(), default.filter(|f| collection.field(f).is_some())) {
            order.by(Expr::column(root, field), false);
        }
        for key in sort {
            let path = key.path.as_ref().ok_or_else(|| ApiError::invalid_query("A sort key has no path"))?;
            let expr = self.path_expr(collection, root, path, &mut joins, "sort")?;
            order.by(expr, key.descending);
        }
        for k in &collection.primary_key {
            order.then_by(Expr::column(root, k));
        }
        Ok((joins, order))
    }

    /// A field path (`author.name`, through M2O fields only), possibly ending in a function of
    /// a field (`year(date)`, `author.year(born)`), as an expression over rows aliased `root`,
    /// adding the LEFT JOINs its M2O hops need (they follow foreign keys to unique keys, so
    /// they never multiply rows). `purpose` names the parameter in error messages.
    pub fn path_expr(&mut self, collection: &Collection, root: &str, path: &FieldPath, joins: &mut Joins, purpose: &str) -> Result<Expr, ApiError> {
        let segments = &path.segments;
        if segments.len() > self.limits.max_depth + 1 {
            return Err(ApiError::invalid_query("Max relational depth exceeded"));
        }
        let mut current = collection;
        let mut alias = root.to_owned();
        for (i, seg) in segments.iter().enumerate() {
            let last = i + 1 == segments.len();
            if seg.scope.is_some() {
                return Err(ApiError::invalid_query(format!("Cannot {purpose} by \"{path}\": a many-to-any scope has no single value")));
            }
            let seg = seg.field.as_str();
            if let (true, Some(call)) = (last, Call::of(path.function(), seg)) {
                return self.function_expr(current, &alias, &call);
            }
            let field = current.field(seg).ok_or_else(|| ApiError::forbidden_field(&current.name, seg))?;
            match (&field.relation, last) {
                (Some(FieldRelation::O2M { .. }), _) => {
                    return Err(ApiError::invalid_query(format!("Cannot {purpose} by \"{path}\": \"{seg}\" is a to-many relation (use count({seg}))")));
                }
                (Some(FieldRelation::M2A { .. }), false) => {
                    return Err(ApiError::invalid_query(format!("Cannot {purpose} by \"{path}\": \"{seg}\" is a many-to-any field")));
                }
                (_, true) if field.field_type == crate::schema::FieldType::Json => {
                    return Err(ApiError::invalid_query(format!("Cannot {purpose} by \"{path}\": JSON values have no order")));
                }
                // An order or grouping by a concealed value would tell it (docs/security.md).
                (_, true) if current.cast(seg) == Some(crate::schema::ValueCast::Conceal) => {
                    return Err(ApiError::invalid_query(format!("Cannot {purpose} by \"{path}\": its value is concealed")));
                }
                (_, true) => return Ok(Expr::column(&alias, seg)),
                (Some(FieldRelation::M2O { related, related_field, .. }), false) => {
                    let next = match joins.alias_of(&segments[..=i]) {
                        Some(a) => a.to_owned(),
                        None => {
                            let a = self.sql.next_alias('s');
                            let rel = self.collection(related)?;
                            let rows = self.source(rel)?;
                            joins.add(
                                &segments[..=i],
                                Join { rows, alias: a.clone(), related: Column::new(&a, related_field), local: Column::new(&alias, seg) },
                            );
                            a
                        }
                    };
                    current = self.collection(related)?;
                    alias = next;
                }
                (None, false) => {
                    return Err(ApiError::invalid_query(format!("Cannot {purpose} by \"{path}\": \"{seg}\" is not a relation")));
                }
            }
        }
        Err(ApiError::invalid_query(format!("\"{path}\" is not a valid field path")))
    }

    /// The type of the field a plain path (`status`, `author.name`, through M2O fields, no
    /// function) ends at; `None` for anything else.
    pub fn path_type(&self, collection: &Collection, path: &FieldPath) -> Option<crate::schema::FieldType> {
        if path.function() != cdapi_proto::v1::FieldFunction::Unspecified {
            return None;
        }
        let (mut current, mut segments) = (collection, path.segments.iter().peekable());
        while let Some(seg) = segments.next() {
            let field = current.field(&seg.field)?;
            if segments.peek().is_none() {
                return Some(field.field_type);
            }
            match &field.relation {
                Some(FieldRelation::M2O { related, .. }) => current = self.collection(related).ok()?,
                _ => return None,
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::predicate::Source;
    use crate::query::test_schema::blog;
    use crate::query::{Limits, Variables};
    use cdapi_proto::ErrorCode;

    /// (joins, order) of `sort` (REST spelling) on `collection`, with `default` as its manual order.
    fn order(collection: &str, sort: &[&str], default: Option<&str>) -> Result<(Joins, Sort), ApiError> {
        let schema = blog();
        let c = schema.collection(collection).ok_or_else(ApiError::internal)?.clone();
        let vars = Variables::default();
        let keys = sort.iter().map(|s| query_language::paths::parse_sort(s)).collect::<Result<Vec<_>, _>>()?;
        Planner::new(&schema, Limits::default(), &vars).order_by(&c, "t0", &keys, default)
    }

    /// The terms of an order: (expression, descending).
    fn terms(sort: &Sort) -> Vec<(Expr, bool)> {
        sort.terms.iter().map(|t| (t.expr.clone(), t.descending)).collect()
    }

    /// A term ordering by column `name` of row `alias`.
    fn by(alias: &str, name: &str, descending: bool) -> (Expr, bool) {
        (Expr::column(alias, name), descending)
    }

    #[test]
    fn the_primary_key_ends_every_order_once() -> Result<(), ApiError> {
        let (joins, sort) = order("articles", &[], None)?;
        assert_eq!((joins.joins.len(), terms(&sort)), (0, vec![by("t0", "id", false)]));
        assert_eq!(terms(&order("articles", &["-title"], None)?.1), vec![by("t0", "title", true), by("t0", "id", false)]);
        // Sorting by the key already: not appended again.
        assert_eq!(terms(&order("articles", &["-id"], None)?.1), vec![by("t0", "id", true)]);
        // A function is its typed expression.
        let count = terms(&order("authors", &["-count(articles)"], None)?.1);
        assert!(matches!(&count[..], [(Expr::RelatedCount(c), true), _] if c.local == Column::new("t0", "id")), "{count:?}");
        Ok(())
    }

    #[test]
    fn the_manual_order_applies_without_sort_when_the_field_exists() -> Result<(), ApiError> {
        assert_eq!(terms(&order("articles", &[], Some("title"))?.1), vec![by("t0", "title", false), by("t0", "id", false)]);
        assert_eq!(terms(&order("articles", &["-id"], Some("title"))?.1), vec![by("t0", "id", true)], "sort wins");
        // A sort field the caller cannot read (absent from their view) is ignored, not told.
        assert_eq!(terms(&order("articles", &[], Some("hidden"))?.1), vec![by("t0", "id", false)]);
        Ok(())
    }

    #[test]
    fn a_path_through_a_many_to_one_joins_once() -> Result<(), ApiError> {
        let (joins, sort) = order("articles", &["author.name", "-author.id"], None)?;
        let author = Join {
            rows: Source::Table("\"public\".\"authors\"".into()),
            alias: "s1".into(),
            related: Column::new("s1", "id"),
            local: Column::new("t0", "author"),
        };
        assert_eq!(joins.joins, vec![author]);
        assert_eq!(terms(&sort), vec![by("s1", "name", false), by("s1", "id", true), by("t0", "id", false)]);
        Ok(())
    }

    #[test]
    fn joins_and_orders_render_as_clauses() -> Result<(), ApiError> {
        let (joins, sort) = order("articles", &["author.name", "-author.id"], None)?;
        let mut sql = Sql::default();
        assert_eq!(joins.render(&mut sql), " LEFT JOIN \"public\".\"authors\" s1 ON s1.\"id\" = t0.\"author\"");
        assert_eq!(sort.render(&mut sql), " ORDER BY s1.\"name\", s1.\"id\" DESC, t0.\"id\"");
        assert_eq!((Joins::default().render(&mut sql), Sort::default().render(&mut sql)), (String::new(), String::new()));
        assert!(sql.params.is_empty());
        Ok(())
    }

    #[test]
    fn paths_that_have_no_single_value_are_refused() {
        let code = |sort: &str| order("authors", &[sort], None).err().map(|e| e.code);
        assert_eq!(code("articles.title"), Some(ErrorCode::InvalidQuery), "a to-many relation");
        assert_eq!(code("name.x"), Some(ErrorCode::InvalidQuery), "a scalar is not a relation");
        assert_eq!(code("nope"), Some(ErrorCode::Forbidden), "an unknown field, as an unreadable one");
    }
}
