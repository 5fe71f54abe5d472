//! Directus's names of the field functions (`year`, `count`...) and the REST spelling of a
//! field path (`author.year(born)`, `item:headings.title`), for messages and result keys. The
//! grammar that parses paths is the `query-language` crate's `paths`.

use crate::v1::{FieldFunction, FieldPath};
use std::fmt;

impl FieldFunction {
    /// The REST name of a function (`year`); empty for none (Directus docs "Global Query
    /// Parameters", functions).
    pub fn name(self) -> &'static str {
        match self {
            FieldFunction::Unspecified => "",
            FieldFunction::Year => "year",
            FieldFunction::Month => "month",
            FieldFunction::Week => "week",
            FieldFunction::Day => "day",
            FieldFunction::Weekday => "weekday",
            FieldFunction::Hour => "hour",
            FieldFunction::Minute => "minute",
            FieldFunction::Second => "second",
            FieldFunction::Count => "count",
        }
    }
}

/// REST's spelling of a path (for error messages and keys): `author.year(born)`,
/// `item:headings.title`.
impl fmt::Display for FieldPath {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.segments.len();
        for (i, s) in self.segments.iter().enumerate() {
            if i > 0 {
                out.write_str(".")?;
            }
            let function = self.function().name();
            if i + 1 == n && !function.is_empty() {
                write!(out, "{function}(")?;
            }
            out.write_str(&s.field)?;
            if let Some(scope) = &s.scope {
                write!(out, ":{scope}")?;
            }
            if i + 1 == n && !function.is_empty() {
                out.write_str(")")?;
            }
        }
        Ok(())
    }
}
