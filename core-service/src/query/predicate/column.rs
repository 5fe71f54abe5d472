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
