//! `sort` and field paths: the ORDER BY of a level, and paths through many-to-one relations
//! (`author.name`) or functions (`year(published_at)`) as SQL expressions with the LEFT JOINs
//! they need (shared by sort, groupBy and dynamic variables).

use super::Planner;
use super::functions::Call;
use crate::schema::{Collection, FieldRelation};
use crate::sql::column;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{FieldPath, PathSegment, SortKey};

/// LEFT JOINs added for M2O paths in `sort` and `groupBy`, one per path prefix.
#[derive(Debug, Default)]
pub struct Joins {
    /// The JOIN clauses, each starting with a space.
    pub sql: String,
    joined: Vec<(Vec<PathSegment>, String)>,
}

impl Planner<'_> {
    /// Sort (`sort`, Directus docs "Global Query Parameters"): descending or not, paths through M2O fields, functions
    /// (`-year(published_at)`), primary key appended for a stable order. Without `sort`, the
    /// manual order `default` comes first (a collection's `meta.sort_field`; for an O2M list,
    /// the relation's `sort_field`, else the related collection's; as Directus, NULLs last)
    /// when the caller may read that field (an order would tell what they may not read).
    /// Returns (joins, ` ORDER BY ...`).
    pub fn order_by(&mut self, collection: &Collection, root: &str, sort: &[SortKey], default: Option<&str>) -> Result<(String, String), ApiError> {
        let mut joins = Joins::default();
        let mut terms = Vec::new();
        if let (true, Some(field)) = (sort.is_empty(), default.filter(|f| collection.field(f).is_some())) {
            terms.push(column(root, field));
        }
        for key in sort {
            let path = key.path.as_ref().ok_or_else(|| ApiError::invalid_query("A sort key has no path"))?;
            let expr = self.path_expr(collection, root, path, &mut joins, "sort")?;
            terms.push(format!("{expr}{}", if key.descending { " DESC" } else { "" }));
        }
        for k in &collection.primary_key {
            let plain = column(root, k);
            if !terms.iter().any(|t| t.trim_end_matches(" DESC") == plain) {
                terms.push(plain);
            }
        }
        let order = if terms.is_empty() { String::new() } else { format!(" ORDER BY {}", terms.join(", ")) };
        Ok((joins.sql, order))
    }

    /// A field path (`author.name`, through M2O fields only), possibly ending in a function of
    /// a field (`year(date)`, `author.year(born)`), as a SQL expression over rows aliased `root`,
    /// adding the LEFT JOINs its M2O hops need (they follow foreign keys to unique keys, so
    /// they never multiply rows). `purpose` names the parameter in error messages.
    pub fn path_expr(&mut self, collection: &Collection, root: &str, path: &FieldPath, joins: &mut Joins, purpose: &str) -> Result<String, ApiError> {
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
                (_, true) => return Ok(column(&alias, seg)),
                (Some(FieldRelation::M2O { related, related_field, .. }), false) => {
                    let next = match joins.joined.iter().find(|(p, _)| *p == segments[..=i]) {
                        Some((_, a)) => a.clone(),
                        None => {
                            let a = self.sql.next_alias('s');
                            let rel = self.collection(related)?;
                            joins.sql.push_str(&format!(" LEFT JOIN {} {a} ON {} = {}", self.source(rel)?, column(&a, related_field), column(&alias, seg)));
                            joins.joined.push((segments[..=i].to_vec(), a.clone()));
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
    use crate::query::test_schema::blog;
    use crate::query::{Limits, Variables};
    use cdapi_proto::ErrorCode;

    /// (joins, ORDER BY) of `sort` (REST spelling) on `collection`, with `default` as its manual order.
    fn order(collection: &str, sort: &[&str], default: Option<&str>) -> Result<(String, String), ApiError> {
        let schema = blog();
        let c = schema.collection(collection).ok_or_else(ApiError::internal)?.clone();
        let vars = Variables::default();
        let keys = sort.iter().map(|s| query_language::paths::parse_sort(s)).collect::<Result<Vec<_>, _>>()?;
        Planner::new(&schema, Limits::default(), &vars).order_by(&c, "t0", &keys, default)
    }

    #[test]
    fn the_primary_key_ends_every_order_once() -> Result<(), ApiError> {
        assert_eq!(order("articles", &[], None)?, (String::new(), " ORDER BY t0.\"id\"".into()));
        assert_eq!(order("articles", &["-title"], None)?.1, " ORDER BY t0.\"title\" DESC, t0.\"id\"");
        // Sorting by the key already: not appended again.
        assert_eq!(order("articles", &["-id"], None)?.1, " ORDER BY t0.\"id\" DESC");
        Ok(())
    }

    #[test]
    fn the_manual_order_applies_without_sort_when_the_field_exists() -> Result<(), ApiError> {
        assert_eq!(order("articles", &[], Some("title"))?.1, " ORDER BY t0.\"title\", t0.\"id\"");
        assert_eq!(order("articles", &["-id"], Some("title"))?.1, " ORDER BY t0.\"id\" DESC", "sort wins");
        // A sort field the caller cannot read (absent from their view) is ignored, not told.
        assert_eq!(order("articles", &[], Some("hidden"))?.1, " ORDER BY t0.\"id\"");
        Ok(())
    }

    #[test]
    fn a_path_through_a_many_to_one_joins_once() -> Result<(), ApiError> {
        let (joins, order_sql) = order("articles", &["author.name", "-author.id"], None)?;
        assert_eq!(joins, " LEFT JOIN \"public\".\"authors\" s1 ON s1.\"id\" = t0.\"author\"");
        assert_eq!(order_sql, " ORDER BY s1.\"name\", s1.\"id\" DESC, t0.\"id\"");
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
