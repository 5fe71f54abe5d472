//! `sort` and field paths: the ORDER BY of a level, and paths through many-to-one relations
//! (`author.name`) or functions (`year(published_at)`) as SQL expressions with the LEFT JOINs
//! they need (shared by sort, groupBy and dynamic variables).

use super::sql::column;
use super::{Planner, forbidden_field, functions};
use crate::schema::{Collection, FieldRelation};
use cdapi_proto::ApiError;

/// LEFT JOINs added for M2O paths in `sort` and `groupBy`, one per path prefix.
#[derive(Debug, Default)]
pub struct Joins {
    /// The JOIN clauses, each starting with a space.
    pub sql: String,
    joined: Vec<(String, String)>,
}

impl Planner<'_> {

    /// Sort (spec: `sort`): `-` for descending, dot paths through M2O fields, functions
    /// (`-year(published_at)`), primary key appended for a stable order.
    /// Returns (joins, ` ORDER BY ...`).
    pub fn order_by(&mut self, collection: &Collection, root: &str, sort: &[String]) -> Result<(String, String), ApiError> {
        let mut joins = Joins::default();
        let mut terms = Vec::new();
        for raw in sort {
            let (desc, path) = match raw.strip_prefix('-') {
                Some(p) => (true, p),
                None => (false, raw.as_str()),
            };
            let expr = self.path_expr(collection, root, path, &mut joins, "sort")?;
            terms.push(format!("{expr}{}", if desc { " DESC" } else { "" }));
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

    /// A field path (`author.name`, through M2O fields only) or a function call (`year(date)`)
    /// as a SQL expression over rows aliased `root`, adding the LEFT JOINs its M2O hops need
    /// (they follow foreign keys to unique keys, so they never multiply rows). `purpose` names
    /// the parameter in error messages.
    pub fn path_expr(&mut self, collection: &Collection, root: &str, path: &str, joins: &mut Joins, purpose: &str) -> Result<String, ApiError> {
        if let Some(call) = functions::parse(path)? {
            return self.function_expr(collection, root, &call);
        }
        let segments: Vec<&str> = path.split('.').collect();
        if segments.len() > self.limits.max_depth + 1 {
            return Err(ApiError::invalid_query("Max relational depth exceeded"));
        }
        let mut current = collection;
        let mut alias = root.to_owned();
        for (i, seg) in segments.iter().enumerate() {
            let field = current.field(seg).ok_or_else(|| forbidden_field(&current.name, seg))?;
            let last = i + 1 == segments.len();
            match (&field.relation, last) {
                (Some(FieldRelation::O2M { .. }), _) => {
                    return Err(ApiError::invalid_query(format!(
                        "Cannot {purpose} by \"{path}\": \"{seg}\" is a to-many relation (use count({seg}))"
                    )));
                }
                (Some(FieldRelation::M2A { .. }), false) => {
                    return Err(ApiError::invalid_query(format!(
                        "Cannot {purpose} by \"{path}\": \"{seg}\" is a many-to-any field"
                    )));
                }
                (_, true) if field.field_type == crate::schema::FieldType::Json => {
                    return Err(ApiError::invalid_query(format!(
                        "Cannot {purpose} by \"{path}\": JSON values have no order"
                    )));
                }
                (_, true) => return Ok(column(&alias, seg)),
                (Some(FieldRelation::M2O { related, related_field, .. }), false) => {
                    let prefix = segments[..=i].join(".");
                    let next = match joins.joined.iter().find(|(p, _)| *p == prefix) {
                        Some((_, a)) => a.clone(),
                        None => {
                            let a = self.sql.next_alias('s');
                            let rel = self.collection(related)?;
                            joins.sql.push_str(&format!(
                                " LEFT JOIN {} {a} ON {} = {}",
                                self.source(rel)?,
                                column(&a, related_field),
                                column(&alias, seg)
                            ));
                            joins.joined.push((prefix, a.clone()));
                            a
                        }
                    };
                    current = self.collection(related)?;
                    alias = next;
                }
                (None, false) => {
                    return Err(ApiError::invalid_query(format!(
                        "Cannot {purpose} by \"{path}\": \"{seg}\" is not a relation"
                    )));
                }
            }
        }
        Err(ApiError::invalid_query(format!("\"{path}\" is not a valid field path")))
    }

    /// The type of the field a plain path (`status`, `author.name`, through M2O fields) ends
    /// at; `None` for anything else.
    pub fn path_type(&self, collection: &Collection, path: &str) -> Option<crate::schema::FieldType> {
        let (mut current, mut segments) = (collection, path.split('.').peekable());
        while let Some(seg) = segments.next() {
            let field = current.field(seg)?;
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
