//! The LEFT JOINs of many-to-one paths (`author.name` in `sort`, `groupBy` and dynamic
//! variables): each joins the related rows a caller may see ([`Source`]) by their key.

use super::{Column, Source};
use crate::sql::Sql;
use cdapi_proto::v1::PathSegment;

/// The LEFT JOIN a many-to-one hop of a path needs: the related row, joined by its key (a
/// foreign key reaches a unique key: it never multiplies rows).
#[derive(Debug, Clone, PartialEq)]
pub struct Join {
    /// The related rows (the caller's view of them).
    pub rows: Source,
    /// Their alias (`s1`).
    pub alias: String,
    /// The related row's key column…
    pub related: Column,
    /// …equal to the outer row's foreign key.
    pub local: Column,
}

/// LEFT JOINs added for M2O paths in `sort`, `groupBy` and dynamic variables, one per path
/// prefix (planned by [`crate::query::Planner::path_expr`]).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Joins {
    /// The joins, in the order first needed.
    pub joins: Vec<Join>,
    /// Each joined path prefix and its alias.
    joined: Vec<(Vec<PathSegment>, String)>,
}

impl Joins {
    /// The alias of the row joined for path prefix `prefix`, if joined already.
    pub fn alias_of(&self, prefix: &[PathSegment]) -> Option<&str> {
        self.joined.iter().find(|(p, _)| p == prefix).map(|(_, a)| a.as_str())
    }

    /// Adds `join`, the row of path prefix `prefix`.
    pub fn add(&mut self, prefix: &[PathSegment], join: Join) {
        self.joined.push((prefix.to_vec(), join.alias.clone()));
        self.joins.push(join);
    }

    /// ` LEFT JOIN <rows> s1 ON s1."id" = t0."author"` for each join, the rows' permission
    /// filters bound as parameters of `sql`; empty without joins.
    pub fn render(&self, sql: &mut Sql) -> String {
        let mut out = String::new();
        for j in &self.joins {
            let rows = j.rows.render(sql);
            out.push_str(&format!(" LEFT JOIN {rows} {} ON {} = {}", j.alias, j.related.render(), j.local.render()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::predicate::{Comparison, Expr, Operand, PermittedRows, Predicate, Test};
    use crate::sql::Param;

    fn segment(field: &str) -> PathSegment {
        PathSegment { field: field.into(), scope: None }
    }

    #[test]
    fn each_prefix_is_joined_once_and_its_rows_bind_where_rendered() {
        let mut joins = Joins::default();
        assert_eq!(joins.render(&mut Sql::default()), "", "no join, no text");
        let author = [segment("author")];
        assert_eq!(joins.alias_of(&author), None);
        let visible = Predicate::Compare(Comparison {
            target: Expr::column("p2", "name"),
            db_type: "text".into(),
            text_cast: false,
            test: Test::Equals(Operand::Text("ann".into())),
        });
        let rows =
            Source::Permitted(Box::new(PermittedRows { table: "\"public\".\"authors\"".into(), alias: "p2".into(), rows: vec![Some(visible)], columns: None }));
        joins.add(&author, Join { rows, alias: "s1".into(), related: Column::new("s1", "id"), local: Column::new("t0", "author") });
        assert_eq!(joins.alias_of(&author), Some("s1"));
        assert_eq!(joins.alias_of(&[segment("author"), segment("org")]), None, "a longer path is another prefix");
        let mut sql = Sql::default();
        assert_eq!(
            joins.render(&mut sql),
            " LEFT JOIN (SELECT * FROM \"public\".\"authors\" p2 WHERE (p2.\"name\" = CAST($1 AS text))) s1 ON s1.\"id\" = t0.\"author\""
        );
        assert_eq!(sql.params, vec![Param::Text("ann".into())]);
    }
}
