//! Expressions of a plan: what a condition compares ([`super::predicate::Comparison`]) and
//! what a sort orders by ([`super::order::SortTerm`]). A column of an aliased row is typed;
//! a function of a column (`year(published_at)`, `count(tags)`, [`super::functions`]) and an
//! aggregate result (`having`, [`super::aggregate`]) are SQL text the planner wrote, whose
//! parameters (a related count's permission filters) are already bound in the statement they
//! were planned in: render such an expression into that statement only.

use crate::sql::column;

/// A column of an aliased row.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The row's alias (`t1`).
    pub alias: String,
    /// The column's name (quoted when rendered).
    pub name: String,
}

impl Column {
    /// The column of row `alias` named `name`.
    pub fn new(alias: &str, name: &str) -> Self {
        Self { alias: alias.to_owned(), name: name.to_owned() }
    }

    /// `alias."name"`.
    pub fn render(&self) -> String {
        column(&self.alias, &self.name)
    }
}

/// A scalar expression over one row (or one group) of a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A column: `t0."title"`.
    Column(Column),
    /// An expression written as SQL by the planner (a function of a column, an aggregate).
    Sql(String),
}

impl Expr {
    /// The column `name` of row `alias`.
    pub fn column(alias: &str, name: &str) -> Self {
        Self::Column(Column::new(alias, name))
    }

    /// The expression's SQL.
    pub fn render(&self) -> String {
        match self {
            Self::Column(c) => c.render(),
            Self::Sql(text) => text.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_quoted_and_sql_is_written_as_it_is() {
        assert_eq!(Expr::column("t0", "we\"ird").render(), "t0.\"we\"\"ird\"");
        assert_eq!(Expr::Sql("count(*)".into()).render(), "count(*)");
    }
}
