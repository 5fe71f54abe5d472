//! The Directus query object (JSON) → [`Query`]. Both edges use this one translation: REST
//! builds the JSON from the query string or from the `SEARCH` body's `query`, GraphQL from its
//! arguments. Shapes follow Directus docs "Global Query Parameters" and "Filter Rules".
//!
//! Accepted spellings per key: `fields`/`sort`/`groupBy`/`meta` as a comma-separated string or
//! an array of strings; `filter`/`deep`/`alias`/`aggregate` as an object or as a string holding
//! JSON; `limit`/`offset`/`page` as an integer or an integer string. Unknown keys are ignored,
//! as Directus does. Every other mistake is an INVALID_QUERY [`ApiError`].

use cdapi_proto::ApiError;
use cdapi_proto::v1::{AggregateCall, AggregateFunction, ExportFormat, FieldPath, Filter, MetaCount, Query, SortKey};
use serde_json::Value as Json;

type Result<T> = std::result::Result<T, ApiError>;

pub use crate::filters::{MAX_DEPTH, operator_from_name, operator_name, value_from_json};

/// Translates a whole query object (`{"fields":..,"filter":..,..}`) into a [`Query`].
/// Errors: INVALID_QUERY naming the parameter and what is wrong with it.
pub fn query_from_json(obj: &serde_json::Map<String, Json>) -> Result<Query> {
    let mut q = Query::default();
    for (key, v) in obj {
        match key.as_str() {
            "fields" => q.fields = paths(key, v)?,
            "filter" => q.filter = filter_from_json(&json_param(key, v)?, 0)?,
            "search" => q.search = Some(plain_string(key, v)?),
            "sort" => q.sort = sort_keys(key, v)?,
            "limit" => q.limit = Some(integer(key, v)?),
            "offset" => q.offset = Some(integer(key, v)?),
            "page" => q.page = Some(integer(key, v)?),
            "meta" => q.meta = meta(v)?,
            "aggregate" => q.aggregate = aggregate(&json_param(key, v)?)?,
            "groupBy" => q.group_by = paths(key, v)?,
            "deep" => q.deep = deep_map(&json_param(key, v)?, 0)?,
            "alias" => q.alias = alias(&json_param(key, v)?)?,
            "version" => q.version = Some(plain_string(key, v)?),
            "export" => q.export = Some(export(v)? as i32),
            "having" => q.having = filter_from_json(&json_param(key, v)?, 0)?,
            "backlink" => q.backlink = Some(boolean(key, v)?),
            _ => {}
        }
    }
    Ok(q)
}

/// Translates one filter object in REST's spelling (see [`crate::filters`]). `Ok(None)` for an
/// empty object (no condition). `depth` counts nesting levels so far; past [`MAX_DEPTH`] the
/// filter is refused.
pub fn filter_from_json(v: &Json, depth: usize) -> Result<Option<Filter>> {
    crate::filters::build(v, &crate::filters::RestKeys, depth)
}

/// A list of REST field paths (`fields`, `groupBy`), parsed ([`crate::paths::parse`]).
fn paths(key: &str, v: &Json) -> Result<Vec<FieldPath>> {
    string_list(key, v)?.iter().map(|p| crate::paths::parse(p)).collect()
}

/// A REST `sort` list (`-title,author.name`), parsed ([`crate::paths::parse_sort`]).
fn sort_keys(key: &str, v: &Json) -> Result<Vec<SortKey>> {
    string_list(key, v)?.iter().map(|s| crate::paths::parse_sort(s)).collect()
}

fn json_param(key: &str, v: &Json) -> Result<Json> {
    match v {
        Json::String(s) => serde_json::from_str(s).map_err(|e| ApiError::invalid_query(format!("\"{key}\" is not valid JSON: {e}"))),
        other => Ok(other.clone()),
    }
}

fn plain_string(key: &str, v: &Json) -> Result<String> {
    match v {
        Json::String(s) => Ok(s.clone()),
        Json::Number(n) => Ok(n.to_string()),
        _ => Err(ApiError::invalid_query(format!("\"{key}\" must be a string"))),
    }
}

fn string_list(key: &str, v: &Json) -> Result<Vec<String>> {
    let split = |s: &str| -> Vec<String> { s.split(',').map(str::trim).filter(|p| !p.is_empty()).map(str::to_owned).collect() };
    match v {
        Json::String(s) if s.trim_start().starts_with('[') => string_list(key, &json_param(key, v)?),
        Json::String(s) => Ok(split(s)),
        Json::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                match item {
                    Json::String(s) => out.extend(split(s)),
                    _ => return Err(ApiError::invalid_query(format!("\"{key}\" must contain only strings"))),
                }
            }
            Ok(out)
        }
        _ => Err(ApiError::invalid_query(format!("\"{key}\" must be a string or an array of strings"))),
    }
}

fn boolean(key: &str, v: &Json) -> Result<bool> {
    match v {
        Json::Bool(b) => Ok(*b),
        Json::String(s) if s == "true" => Ok(true),
        Json::String(s) if s == "false" => Ok(false),
        _ => Err(ApiError::invalid_query(format!("\"{key}\" must be true or false"))),
    }
}

fn integer(key: &str, v: &Json) -> Result<i64> {
    let parsed = match v {
        Json::Number(n) => n.as_i64(),
        Json::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    parsed.ok_or_else(|| ApiError::invalid_query(format!("\"{key}\" has to be an integer")))
}

fn meta(v: &Json) -> Result<Vec<i32>> {
    let mut out = Vec::new();
    for name in string_list("meta", v)? {
        match name.as_str() {
            "*" => {
                out = vec![MetaCount::TotalCount as i32, MetaCount::FilterCount as i32];
                break;
            }
            "total_count" => out.push(MetaCount::TotalCount as i32),
            "filter_count" => out.push(MetaCount::FilterCount as i32),
            other => return Err(ApiError::invalid_query(format!("Unknown meta \"{other}\""))),
        }
    }
    out.dedup();
    Ok(out)
}

fn aggregate(v: &Json) -> Result<Vec<AggregateCall>> {
    let Json::Object(map) = v else {
        return Err(ApiError::invalid_query("\"aggregate\" must be an object such as {\"count\": \"*\"}"));
    };
    let mut out = Vec::with_capacity(map.len());
    for (name, fields) in map {
        let function = aggregate_function_from_name(name).ok_or_else(|| ApiError::invalid_query(format!("Unknown aggregate function \"{name}\"")))?;
        out.push(AggregateCall { function: function as i32, fields: string_list("aggregate", fields)? });
    }
    Ok(out)
}

/// The aggregate function of its Directus name (`count`, `countDistinct`, `sum`, `sumDistinct`,
/// `avg`, `avgDistinct`, `min`, `max`, `countAll`); the REST `aggregate[<name>]` key and the
/// GraphQL `<c>_aggregated` field names. `None` for any other name.
pub fn aggregate_function_from_name(name: &str) -> Option<AggregateFunction> {
    Some(match name {
        "count" => AggregateFunction::Count,
        "countDistinct" => AggregateFunction::CountDistinct,
        "sum" => AggregateFunction::Sum,
        "sumDistinct" => AggregateFunction::SumDistinct,
        "avg" => AggregateFunction::Avg,
        "avgDistinct" => AggregateFunction::AvgDistinct,
        "min" => AggregateFunction::Min,
        "max" => AggregateFunction::Max,
        "countAll" => AggregateFunction::CountAll,
        _ => return None,
    })
}

fn alias(v: &Json) -> Result<std::collections::HashMap<String, String>> {
    let Json::Object(map) = v else {
        return Err(ApiError::invalid_query("\"alias\" must be an object of alias → field"));
    };
    map.iter()
        .map(|(k, v)| match v {
            Json::String(field) if !field.contains('.') => Ok((k.clone(), field.clone())),
            Json::String(_) => Err(ApiError::invalid_query(format!("Alias \"{k}\" must name a field of the same level, not a nested path"))),
            _ => Err(ApiError::invalid_query(format!("Alias \"{k}\" must be a string"))),
        })
        .collect()
}

fn deep_map(v: &Json, depth: usize) -> Result<std::collections::HashMap<String, Query>> {
    if depth > MAX_DEPTH {
        return Err(ApiError::invalid_query("Max relational depth exceeded"));
    }
    let Json::Object(map) = v else {
        return Err(ApiError::invalid_query("\"deep\" must be an object keyed by relational field"));
    };
    let mut out = std::collections::HashMap::new();
    for (field, nested) in map {
        let Json::Object(nested) = nested else {
            return Err(ApiError::invalid_query(format!("\"deep.{field}\" must be an object")));
        };
        let mut q = Query::default();
        let mut children = serde_json::Map::new();
        for (k, v) in nested {
            match k.as_str() {
                "_filter" => q.filter = filter_from_json(&json_param(k, v)?, depth + 1)?,
                "_search" => q.search = Some(plain_string(k, v)?),
                "_sort" => q.sort = sort_keys(k, v)?,
                "_limit" => q.limit = Some(integer(k, v)?),
                "_offset" => q.offset = Some(integer(k, v)?),
                "_page" => q.page = Some(integer(k, v)?),
                "_alias" => q.alias = alias(&json_param(k, v)?)?,
                k if k.starts_with('_') => {
                    return Err(ApiError::invalid_query(format!("\"{k}\" is not a deep query parameter")));
                }
                _ => {
                    children.insert(k.clone(), v.clone());
                }
            }
        }
        if !children.is_empty() {
            q.deep = deep_map(&Json::Object(children), depth + 1)?;
        }
        out.insert(field.clone(), q);
    }
    Ok(out)
}

fn export(v: &Json) -> Result<ExportFormat> {
    match v.as_str() {
        Some("csv") => Ok(ExportFormat::Csv),
        Some("json") => Ok(ExportFormat::Json),
        Some("xml") => Ok(ExportFormat::Xml),
        Some("yaml") => Ok(ExportFormat::Yaml),
        _ => Err(ApiError::invalid_query("\"export\" must be one of csv, json, xml, yaml")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdapi_proto::v1::{FieldFunction, Quantifier, filter};
    use serde_json::json;

    fn q(v: Json) -> Result<Query> {
        query_from_json(v.as_object().ok_or_else(ApiError::internal)?)
    }

    #[test]
    fn lists_accept_strings_and_arrays() -> Result<()> {
        let text = |paths: &[FieldPath]| paths.iter().map(ToString::to_string).collect::<Vec<_>>();
        let a = q(json!({"fields": "id, title,author.*", "sort": ["-id", "title"]}))?;
        assert_eq!(text(&a.fields), ["id", "title", "author.*"]);
        let sort: Vec<(String, bool)> = a.sort.iter().map(|s| (s.path.as_ref().map(ToString::to_string).unwrap_or_default(), s.descending)).collect();
        assert_eq!(sort, [("id".to_owned(), true), ("title".to_owned(), false)]);
        let b = q(json!({"fields": "[\"id\",\"title\"]"}))?;
        assert_eq!(text(&b.fields), ["id", "title"]);
        Ok(())
    }

    #[test]
    fn filter_keys_carry_functions_and_scopes_typed() -> Result<()> {
        let query = q(json!({"filter": {"year(published_at)": {"_eq": 2024}, "item:headings": {"title": {"_eq": "x"}}}}))?;
        let Some(Filter { node: Some(filter::Node::And(and)) }) = query.filter else { panic!("{:?}", query.filter) };
        // Key order depends on serde_json's features: find each part.
        let c = and.filters.iter().find_map(|f| if let Some(filter::Node::Condition(c)) = &f.node { Some(c) } else { None }).expect("condition");
        assert_eq!((c.field.as_str(), c.function()), ("published_at", FieldFunction::Year));
        let r = and.filters.iter().find_map(|f| if let Some(filter::Node::Relation(r)) = &f.node { Some(r) } else { None }).expect("relation");
        assert_eq!((r.field.as_str(), r.scope.as_deref()), ("item", Some("headings")));
        let err = q(json!({"filter": {"count(tags)": {"id": {"_eq": 1}}}})).expect_err("a function is no relation");
        assert_eq!(err.code, cdapi_proto::ErrorCode::InvalidQuery);
        Ok(())
    }

    #[test]
    fn filter_tree_has_conditions_relations_and_groups() -> Result<()> {
        let query = q(json!({"filter": "{\"_or\":[{\"id\":{\"_eq\":1}},{\"author\":{\"name\":{\"_contains\":\"a\"}}}],\"rating\":{\"_gte\":2,\"_lte\":4}}"}))?;
        let Some(Filter { node: Some(filter::Node::And(and)) }) = query.filter else {
            panic!("expected a top-level AND, got {:?}", query.filter);
        };
        assert_eq!(and.filters.len(), 3);
        let Some(filter::Node::Or(or)) = &and.filters[0].node else { panic!("expected OR first") };
        let Some(filter::Node::Relation(rel)) = &or.filters[1].node else { panic!("expected relation") };
        assert_eq!(rel.field, "author");
        assert_eq!(rel.quantifier, Quantifier::Unspecified as i32);
        Ok(())
    }

    #[test]
    fn bad_input_is_invalid_query() {
        for bad in [
            json!({"limit": "ten"}),
            json!({"filter": "{not json"}),
            json!({"filter": {"title": {"_like": "x"}}}),
            json!({"filter": {"_eq": 1}}),
            json!({"filter": {"title": ["x"]}}),
            json!({"meta": "everything"}),
            json!({"alias": {"a": "author.name"}}),
        ] {
            let err = q(bad.clone()).expect_err(&bad.to_string());
            assert_eq!(err.code, cdapi_proto::ErrorCode::InvalidQuery, "{bad}");
        }
    }

    #[test]
    fn a_plain_value_is_short_for_eq() {
        let short = q(json!({"filter": {"id": 4}})).expect("plain value");
        let long = q(json!({"filter": {"id": {"_eq": 4}}})).expect("_eq");
        assert_eq!(short.filter, long.filter);
    }

    #[test]
    fn operator_names_round_trip() {
        for name in ["_eq", "_nin", "_istarts_with", "_nintersects_bbox", "_between"] {
            let op = operator_from_name(name).expect(name);
            assert_eq!(operator_name(op), name);
        }
        assert!(operator_from_name("_some").is_none());
        assert!(operator_from_name("_EQ").is_none());
        assert!(operator_from_name("eq").is_none());
    }

    #[test]
    fn deep_nests_and_depth_is_limited() -> Result<()> {
        let query = q(json!({"deep": {"tags": {"_limit": 2, "tags_id": {"_filter": {"name": {"_eq": "x"}}}}}}))?;
        let tags = &query.deep["tags"];
        assert_eq!(tags.limit, Some(2));
        assert!(tags.deep["tags_id"].filter.is_some());
        let nested = |n: usize| (0..n).fold(json!({"id": {"_eq": 1}}), |f, _| json!({"rel": f}));
        // The parser's own ceiling; the relational depth itself is the core's setting.
        assert!(filter_from_json(&nested(MAX_DEPTH - 1), 0).is_ok());
        assert!(filter_from_json(&nested(MAX_DEPTH + 2), 0).is_err());
        Ok(())
    }
}
