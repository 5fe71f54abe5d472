//! The identifier budget of a query (docs/security.md "Budgets"): every name a query uses — a field
//! in `fields`, `sort`, `groupBy`, `aggregate`, `alias`, `deep` or a filter — is at most
//! [`MAX_IDENTIFIER_LENGTH`] characters, Postgres's own limit (NAMEDATALEN − 1 = 63 bytes, so no
//! longer name can exist; Directus uses 64). A longer one answers INVALID_QUERY at the edge,
//! before any call to the core, without echoing it. Paths arrive typed (`query_language::paths`):
//! each segment, scope and field is a name.

use cdapi_proto::ApiError;
use cdapi_proto::v1::{Filter, Query, filter};

/// Longest name (characters) in a query.
pub const MAX_IDENTIFIER_LENGTH: usize = 64;

/// Errors: INVALID_QUERY when a name in `query` (or its nested `deep` queries and filters) is
/// longer than [`MAX_IDENTIFIER_LENGTH`].
pub fn check(query: &Query) -> Result<(), ApiError> {
    let segments = query
        .fields
        .iter()
        .chain(&query.group_by)
        .chain(query.sort.iter().filter_map(|s| s.path.as_ref()))
        .flat_map(|p| &p.segments)
        .flat_map(|s| std::iter::once(&s.field).chain(&s.scope));
    let names = segments.chain(query.aggregate.iter().flat_map(|a| &a.fields)).chain(query.alias.keys()).chain(query.alias.values()).chain(query.deep.keys());
    for name in names {
        name_ok(name)?;
    }
    for f in query.filter.iter().chain(&query.having) {
        filter_ok(f)?;
    }
    query.deep.values().try_for_each(check)
}

/// One name (`author`, an alias, a `having` key such as `sum.amount`: each part between dots).
fn name_ok(name: &str) -> Result<(), ApiError> {
    if name.split('.').any(|part| part.chars().count() > MAX_IDENTIFIER_LENGTH) {
        return Err(ApiError::invalid_query(format!("A field name is longer than {MAX_IDENTIFIER_LENGTH} characters")));
    }
    Ok(())
}

fn filter_ok(f: &Filter) -> Result<(), ApiError> {
    match &f.node {
        Some(filter::Node::And(g) | filter::Node::Or(g)) => g.filters.iter().try_for_each(filter_ok),
        Some(filter::Node::Condition(c)) => name_ok(&c.field),
        Some(filter::Node::Relation(r)) => {
            name_ok(&r.field)?;
            r.scope.as_deref().map_or(Ok(()), name_ok)?;
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
        let q = |fields: Vec<String>| Query { fields: fields.iter().map(|f| query_language::paths::parse(f).expect("path")).collect(), ..Default::default() };
        assert!(check(&q(vec![ok.clone(), format!("author.{ok}"), format!("year({ok})")])).is_ok());
        for bad in [long.clone(), format!("author.{long}"), format!("year({long})"), format!("blocks.item:{long}.x")] {
            assert!(check(&q(vec![bad.clone()])).is_err(), "{bad}");
        }
        let sorted = Query { sort: vec![query_language::paths::parse_sort(&format!("-{long}")).expect("sort")], ..Default::default() };
        assert!(check(&sorted).is_err());
        let nested = Query { deep: [("tags".to_owned(), q(vec![long.clone()]))].into(), ..Default::default() };
        assert!(check(&nested).is_err());
        let filtered = Query {
            filter: Some(Filter {
                node: Some(filter::Node::And(cdapi_proto::v1::FilterGroup {
                    filters: vec![Filter {
                        node: Some(filter::Node::Condition(cdapi_proto::v1::FieldCondition { field: long.clone(), ..Default::default() })),
                    }],
                })),
            }),
            ..Default::default()
        };
        let err = check(&filtered).err().map(|e| e.message).unwrap_or_default();
        assert!(err.contains("longer than 64") && !err.contains(&long), "{err}");
    }
}
