//! The identifier budget of a query (issue 15, finding 7): every name a query uses — a field
//! in `fields`, `sort`, `groupBy`, `aggregate`, `alias`, `deep` or a filter — is at most
//! [`MAX_IDENTIFIER_LENGTH`] characters, Postgres's own limit (NAMEDATALEN − 1 = 63 bytes, so no
//! longer name can exist; Directus uses 64). A longer one answers INVALID_QUERY at the edge,
//! before any call to the core, without echoing it.

use cdapi_proto::ApiError;
use cdapi_proto::v1::{Filter, Query, filter};

/// Longest name (characters) in a query.
pub const MAX_IDENTIFIER_LENGTH: usize = 64;

/// Errors: INVALID_QUERY when a name in `query` (or its nested `deep` queries and filters) is
/// longer than [`MAX_IDENTIFIER_LENGTH`].
pub fn check(query: &Query) -> Result<(), ApiError> {
    let paths = query
        .fields
        .iter()
        .chain(&query.sort)
        .chain(&query.group_by)
        .chain(query.aggregate.iter().flat_map(|a| &a.fields))
        .chain(query.alias.keys())
        .chain(query.alias.values())
        .chain(query.deep.keys());
    for path in paths {
        path_ok(path)?;
    }
    for f in query.filter.iter().chain(&query.having) {
        filter_ok(f)?;
    }
    query.deep.values().try_for_each(check)
}

/// A path such as `-author.year(created_at)` or `item:headings.title`: each name between
/// `.`, `:`, `(`, `)`, `,` and spaces (a leading `-` is sort order).
fn path_ok(path: &str) -> Result<(), ApiError> {
    let too_long = path
        .split(['.', ':', '(', ')', ',', ' '])
        .any(|name| name.trim_start_matches('-').chars().count() > MAX_IDENTIFIER_LENGTH);
    if too_long {
        return Err(ApiError::invalid_query(format!("A field name is longer than {MAX_IDENTIFIER_LENGTH} characters")));
    }
    Ok(())
}

fn filter_ok(f: &Filter) -> Result<(), ApiError> {
    match &f.node {
        Some(filter::Node::And(g) | filter::Node::Or(g)) => g.filters.iter().try_for_each(filter_ok),
        Some(filter::Node::Condition(c)) => path_ok(&c.field),
        Some(filter::Node::Relation(r)) => {
            path_ok(&r.field)?;
            r.filter.as_ref().map_or(Ok(()), |f| filter_ok(f))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_longer_than_64_characters_are_refused() {
        let long = "f".repeat(65);
        let ok = "f".repeat(64);
        let q = |fields: Vec<String>| Query { fields, ..Default::default() };
        assert!(check(&q(vec![ok.clone(), format!("author.{ok}"), format!("year({ok})")])).is_ok());
        for bad in [long.clone(), format!("author.{long}"), format!("year({long})"), format!("blocks.item:{long}.x")] {
            assert!(check(&q(vec![bad.clone()])).is_err(), "{bad}");
        }
        let sorted = Query { sort: vec![format!("-{long}")], ..Default::default() };
        assert!(check(&sorted).is_err());
        let nested = Query { deep: [("tags".to_owned(), q(vec![long.clone()]))].into(), ..Default::default() };
        assert!(check(&nested).is_err());
        let filtered = Query {
            filter: Some(Filter {
                node: Some(filter::Node::And(cdapi_proto::v1::FilterGroup {
                    filters: vec![Filter { node: Some(filter::Node::Condition(cdapi_proto::v1::FieldCondition { field: long.clone(), ..Default::default() })) }],
                })),
            }),
            ..Default::default()
        };
        let err = check(&filtered).err().map(|e| e.message).unwrap_or_default();
        assert!(err.contains("longer than 64") && !err.contains(&long), "{err}");
    }
}
