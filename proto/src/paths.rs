//! Naming rules of field paths that every process must agree on.

use std::borrow::Cow;

/// The key under which a field path's value appears in results (spec: Functions; Directus's
/// naming): a function call `year(published_at)` appears under `published_at_year`,
/// `count(articles)` under `articles_count`; any other path as written. Used for `fields`
/// and for `groupBy` keys.
pub fn result_key(path: &str) -> Cow<'_, str> {
    let call = path.split_once('(').and_then(|(function, rest)| Some((function, rest.strip_suffix(')')?)));
    match call {
        Some((function, field)) if !function.is_empty() && !field.is_empty() && !function.contains('.') => Cow::Owned(format!("{field}_{function}")),
        _ => Cow::Borrowed(path),
    }
}

#[cfg(test)]
mod tests {
    use super::result_key;

    #[test]
    fn function_calls_are_keyed_field_then_function() {
        assert_eq!(result_key("year(published_at)"), "published_at_year");
        assert_eq!(result_key("count(articles)"), "articles_count");
        assert_eq!(result_key("title"), "title");
        assert_eq!(result_key("author.name"), "author.name");
        assert_eq!(result_key("year()"), "year()");
    }
}
