//! A column of an aliased row: the leaf of expressions, joins and related rows.

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

/// A primary key's columns as one value: the column itself, several joined by commas
/// (`concat_ws`, Directus's text form of a composite key), none NULL.
pub fn render_key(columns: &[Column]) -> String {
    match columns {
        [] => "NULL".to_owned(),
        [one] => one.render(),
        many => format!("concat_ws(',', {})", many.iter().map(Column::render).collect::<Vec<_>>().join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_quoted_and_composite_keys_joined_by_commas() {
        assert_eq!(Column::new("t0", "a\"b").render(), "t0.\"a\"\"b\"");
        let key = |names: &[&str]| render_key(&names.iter().map(|n| Column::new("q1", n)).collect::<Vec<_>>());
        assert_eq!(key(&[]), "NULL", "no key (a view)");
        assert_eq!(key(&["id"]), "q1.\"id\"");
        assert_eq!(key(&["film_id", "actor_id"]), "concat_ws(',', q1.\"film_id\", q1.\"actor_id\")");
    }
}
