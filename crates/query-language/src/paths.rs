//! The field path grammar of REST (Directus docs "Global Query Parameters": `fields`, `sort`,
//! `groupBy`, functions, Many-to-Any scopes), parsed here and nowhere else into the typed [`FieldPath`],
//! and the naming rules of paths every process must agree on.
//!
//! Grammar: segments joined by `.` (`author.name`); `*` for every field of a level (`*.*`);
//! `<field>:<collection>` scopes a Many-to-Any field to one collection (`item:headings.title`);
//! a function call `<function>(<field>)` is the last segment (`author.year(born)`).

use cdapi_proto::ApiError;
use cdapi_proto::v1::{FieldFunction, FieldPath, PathSegment, SortKey};

/// Parses one REST field path. Errors: INVALID_QUERY for an empty segment, a malformed call or
/// an unknown function.
pub fn parse(path: &str) -> Result<FieldPath, ApiError> {
    let invalid = || ApiError::invalid_query(format!("\"{path}\" is not a valid field path"));
    // A call ends the path: split at the dot before its `(`, if any.
    let (prefix, last) = match path.find('(') {
        Some(open) => match path[..open].rfind('.') {
            Some(dot) => (Some(&path[..dot]), &path[dot + 1..]),
            None => (None, path),
        },
        None => match path.rfind('.') {
            Some(dot) => (Some(&path[..dot]), &path[dot + 1..]),
            None => (None, path),
        },
    };
    let mut segments = Vec::new();
    for s in prefix.map(|p| p.split('.').collect::<Vec<_>>()).unwrap_or_default() {
        segments.push(segment(s).ok_or_else(invalid)?);
    }
    let function = match last.split_once('(') {
        Some((name, rest)) => {
            let field = rest
                .strip_suffix(')')
                .filter(|f| !f.is_empty() && !f.contains(['(', ')']))
                .ok_or_else(|| ApiError::invalid_query(format!("\"{last}\" is not a valid function call")))?;
            let function = function_from_name(name).ok_or_else(|| ApiError::invalid_query(format!("Unknown function \"{name}\"")))?;
            segments.push(segment(field).ok_or_else(invalid)?);
            function
        }
        None => {
            segments.push(segment(last).ok_or_else(invalid)?);
            FieldFunction::Unspecified
        }
    };
    Ok(FieldPath { segments, function: function as i32 })
}

/// One segment: `field` or `field:scope`; `None` when empty.
fn segment(s: &str) -> Option<PathSegment> {
    let (field, scope) = match s.split_once(':') {
        Some((f, scope)) => (f, Some(scope.to_owned())),
        None => (s, None),
    };
    (!field.is_empty() && scope.as_deref() != Some("")).then(|| PathSegment { field: field.to_owned(), scope })
}

/// Parses a REST `sort` entry: a field path, `-` first for descending.
pub fn parse_sort(entry: &str) -> Result<SortKey, ApiError> {
    let (descending, path) = match entry.strip_prefix('-') {
        Some(p) => (true, p),
        None => (false, entry),
    };
    Ok(SortKey { path: Some(parse(path)?), descending })
}

/// A path of plain fields (`["author", "name"]`), without function or scope.
pub fn of_fields<'a>(fields: impl IntoIterator<Item = &'a str>) -> FieldPath {
    FieldPath { segments: fields.into_iter().map(|f| PathSegment { field: f.to_owned(), scope: None }).collect(), function: 0 }
}

/// The function of its REST name (`year`, `month`, `week`, `day`, `weekday`, `hour`, `minute`,
/// `second`, `count`).
pub fn function_from_name(name: &str) -> Option<FieldFunction> {
    let f = FieldFunction::from_str_name(&format!("FIELD_FUNCTION_{}", name.to_ascii_uppercase()))?;
    (f != FieldFunction::Unspecified && name.chars().all(|c| c.is_ascii_lowercase())).then_some(f)
}

/// The key a `fields` or `groupBy` entry's value appears under (Directus docs "Global Query Parameters", functions; Directus's
/// naming): `year(published_at)` under `published_at_year`, `count(articles)` under
/// `articles_count`; any other path as REST writes it (`author.name`).
pub fn result_key(path: &FieldPath) -> String {
    match (path.function(), path.segments.as_slice()) {
        (FieldFunction::Unspecified, _) | (_, []) => path.to_string(),
        (f, [.., last]) => function_key(&last.field, f),
    }
}

/// The result key of `function` of `field` (`published_at_year`, Directus's naming).
pub fn function_key(field: &str, function: FieldFunction) -> String {
    format!("{field}_{}", function.name())
}

/// REST's spelling of `function` of `field` (`year(published_at)`), for messages.
pub fn call_text(field: &str, function: FieldFunction) -> String {
    format!("{}({field})", function.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rest_paths_parse_and_print_back() {
        for text in ["author.name", "*", "*.*", "year(published_at)", "author.year(born)", "a.b.count(c)", "item:headings.title", "title"] {
            let p = parse(text).expect(text);
            assert_eq!(p.to_string(), text);
        }
        let p = parse("author.year(created_at)").expect("call");
        assert_eq!(p.segments.iter().map(|s| s.field.as_str()).collect::<Vec<_>>(), ["author", "created_at"]);
        assert_eq!(p.function(), FieldFunction::Year);
        let p = parse("item:headings.title").expect("scope");
        assert_eq!(p.segments[0].scope.as_deref(), Some("headings"));
    }

    #[test]
    fn malformed_paths_are_invalid_queries() {
        for bad in ["", "a..b", "a.", ".a", "year()", "nope(a)", "year(a", "item:", "Year(a)"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn function_calls_are_keyed_field_then_function() {
        let key = |s: &str| result_key(&parse(s).expect(s));
        assert_eq!(key("year(published_at)"), "published_at_year");
        assert_eq!(key("count(articles)"), "articles_count");
        assert_eq!(key("title"), "title");
        assert_eq!(key("author.name"), "author.name");
    }

    #[test]
    fn sort_entries_take_a_minus_for_descending() {
        let s = parse_sort("-author.name").expect("sort");
        assert!(s.descending);
        assert_eq!(s.path.map(|p| p.to_string()).as_deref(), Some("author.name"));
    }
}
