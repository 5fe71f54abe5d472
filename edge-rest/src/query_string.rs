//! The REST query string → the Directus query object (JSON), which
//! [`query_language::query_json::query_from_json`] turns into the typed query.
//!
//! Forms accepted (Directus docs "Global Query Parameters" and "Filter Rules"):
//! - plain `limit=10`, `fields=id,title`, repeated `fields=a&fields=b` (→ array);
//! - brackets `filter[title][_eq]=x`, `fields[]=id`, `filter[_or][0][id][_eq]=1` (indices → arrays),
//!   `deep[tags][_limit]=2`, `alias[n]=name`, `aggregate[count]=*`;
//! - JSON values `filter={"title":{"_eq":"x"}}` (parsed later, per parameter).
//!
//! In the bracket form of `filter`, `deep` and `having`, the strings `true`, `false` and `null` become
//! typed values. `access_token` is taken out and returned separately.

use cdapi_proto::ApiError;
use serde_json::{Map, Value as Json};

/// The parsed query object and the `access_token` parameter, if any.
#[derive(Debug, Default)]
pub struct ParsedQuery {
    /// The query object (keys as in Directus: `fields`, `filter`, ...).
    pub query: Map<String, Json>,
    /// `?access_token=` (one way to pass the token: docs/authentication.md).
    pub access_token: Option<String>,
}

/// Parses a raw (still percent-encoded) query string. Errors: INVALID_QUERY for keys whose
/// bracket paths conflict (e.g. `filter=x&filter[a]=y`).
pub fn parse(raw: &str) -> Result<ParsedQuery, ApiError> {
    let mut root = Json::Object(Map::new());
    let mut access_token = None;
    for (count, (key, value)) in form_urlencoded::parse(raw.as_bytes()).enumerate() {
        if count >= MAX_PARAMETERS {
            return Err(ApiError::invalid_query(format!("More than {MAX_PARAMETERS} query parameters")));
        }
        if key == "access_token" {
            access_token = Some(value.into_owned());
            continue;
        }
        let (base, segments) = split_key(&key);
        if segments.len() > MAX_SEGMENTS {
            return Err(ApiError::invalid_query(format!("The query parameter \"{base}\" nests deeper than {MAX_SEGMENTS} brackets")));
        }
        if base.is_empty() {
            continue;
        }
        let typed = !segments.is_empty() && matches!(base, "filter" | "deep" | "having");
        let value = if typed { typed_value(&value) } else { Json::String(value.into_owned()) };
        let mut path = Vec::with_capacity(segments.len() + 1);
        path.push(base);
        path.extend(segments);
        insert(&mut root, &path, value).map_err(|_| ApiError::invalid_query(format!("The query parameter \"{key}\" conflicts with another one")))?;
    }
    compact(&mut root);
    let Json::Object(query) = root else { return Err(ApiError::internal_because("the parsed query string is not an object")) };
    Ok(ParsedQuery { query, access_token })
}

/// Most parameters one query string may hold.
pub const MAX_PARAMETERS: usize = 1000;
/// Most bracket segments one key may have (`filter[a][b]...`); deeper filters use the JSON form
/// or SEARCH. Bounds the recursion of parsing.
pub const MAX_SEGMENTS: usize = 24;

/// Largest bracket index that addresses an array slot (`filter[_or][20]`); a larger one is an
/// object key, as qs (which Directus parses query strings with) does with its default
/// `arrayLimit` of 20. Bounds the null slots a sparse index pads: at most 21 per bracket, so a
/// query string cannot make the parser allocate thousands of times its own size.
pub const MAX_ARRAY_INDEX: usize = 20;

/// Removes the holes that sparse indices leave (`filter[_or][1]...` alone), as qs does.
fn compact(v: &mut Json) {
    match v {
        Json::Array(items) => {
            items.retain(|i| !i.is_null());
            items.iter_mut().for_each(compact);
        }
        Json::Object(map) => map.values_mut().for_each(compact),
        _ => {}
    }
}

/// `filter[a][b]` → (`filter`, [`a`, `b`]); a key without brackets has no segments.
fn split_key(key: &str) -> (&str, Vec<&str>) {
    let Some(open) = key.find('[') else { return (key, Vec::new()) };
    let base = &key[..open];
    let mut segments = Vec::new();
    let mut rest = &key[open..];
    while let Some(stripped) = rest.strip_prefix('[') {
        match stripped.find(']') {
            Some(close) => {
                segments.push(&stripped[..close]);
                rest = &stripped[close + 1..];
            }
            None => {
                // Unbalanced: treat the remainder as part of the last segment, as qs does.
                segments.push(stripped);
                rest = "";
            }
        }
    }
    (base, segments)
}

fn typed_value(v: &str) -> Json {
    match v {
        "true" => Json::Bool(true),
        "false" => Json::Bool(false),
        "null" => Json::Null,
        other => Json::String(other.to_owned()),
    }
}

struct Conflict;

fn insert(target: &mut Json, path: &[&str], value: Json) -> Result<(), Conflict> {
    let Some((seg, rest)) = path.split_first() else {
        match target {
            Json::Null if !matches!(value, Json::Null) => *target = value,
            Json::Null => *target = Json::Null,
            Json::Array(items) => items.push(value),
            Json::Object(_) => return Err(Conflict),
            other => {
                let old = std::mem::take(other);
                *other = Json::Array(vec![old, value]);
            }
        }
        return Ok(());
    };
    if seg.is_empty() {
        if target.is_null() {
            *target = Json::Array(Vec::new());
        }
        let Json::Array(items) = target else { return Err(Conflict) };
        if rest.is_empty() {
            items.push(value);
            return Ok(());
        }
        items.push(Json::Null);
        let last = items.len() - 1;
        return insert(&mut items[last], rest, value);
    }
    if let Ok(idx) = seg.parse::<usize>()
        && idx <= MAX_ARRAY_INDEX
        && (target.is_null() || target.is_array())
    {
        if target.is_null() {
            *target = Json::Array(Vec::new());
        }
        let Json::Array(items) = target else { return Err(Conflict) };
        if items.len() <= idx {
            items.resize(idx + 1, Json::Null);
        }
        return insert(&mut items[idx], rest, value);
    }
    if target.is_null() {
        *target = Json::Object(Map::new());
    }
    let Json::Object(map) = target else { return Err(Conflict) };
    insert(map.entry((*seg).to_owned()).or_insert(Json::Null), rest, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(raw: &str) -> Json {
        Json::Object(parse(raw).map(|p| p.query).unwrap_or_default())
    }

    #[test]
    fn bracket_forms_build_nested_objects_and_arrays() {
        assert_eq!(
            p("filter[title][_eq]=Hello%20World&filter[id][_in]=1,2&fields[]=id&fields[]=title&limit=5"),
            json!({"filter": {"title": {"_eq": "Hello World"}, "id": {"_in": "1,2"}}, "fields": ["id", "title"], "limit": "5"})
        );
        assert_eq!(
            p("filter[_or][0][id][_eq]=1&filter[_or][1][rating][_null]=true"),
            json!({"filter": {"_or": [{"id": {"_eq": "1"}}, {"rating": {"_null": true}}]}})
        );
        assert_eq!(p("fields=a&fields=b"), json!({"fields": ["a", "b"]}));
        assert_eq!(p("deep[tags][_limit]=2"), json!({"deep": {"tags": {"_limit": "2"}}}));
    }

    #[test]
    fn sparse_indices_are_compacted_and_depth_is_capped() {
        assert_eq!(p("filter[_or][1][id][_eq]=1"), json!({"filter": {"_or": [{"id": {"_eq": "1"}}]}}));
        let deep = format!("a{}=1", "[b]".repeat(MAX_SEGMENTS + 1));
        assert!(parse(&deep).is_err());
        let many = (0..=MAX_PARAMETERS).map(|i| format!("k{i}=1")).collect::<Vec<_>>().join("&");
        assert!(parse(&many).is_err());
    }

    #[test]
    fn indices_past_the_array_limit_are_object_keys_as_in_qs() {
        // Found writing the rest_query_string fuzz target: with indices up to 999, a 16 KiB
        // query string of `filter[i][999]...[999]=1` padded ~3 million null slots (~100 MB).
        assert_eq!(p(&format!("a[{MAX_ARRAY_INDEX}]=x")), json!({"a": ["x"]}));
        assert_eq!(p(&format!("a[{}]=x", MAX_ARRAY_INDEX + 1)), json!({"a": {"21": "x"}}));
        assert_eq!(p("filter[_or][999][id][_eq]=1"), json!({"filter": {"_or": {"999": {"id": {"_eq": "1"}}}}}));
    }

    #[test]
    fn json_values_stay_strings_for_later_parsing() {
        assert_eq!(p("filter=%7B%22id%22%3A%7B%22_eq%22%3A1%7D%7D"), json!({"filter": "{\"id\":{\"_eq\":1}}"}));
    }

    #[test]
    fn access_token_is_separated_and_conflicts_are_errors() -> Result<(), ApiError> {
        let parsed = parse("access_token=abc&limit=1")?;
        assert_eq!(parsed.access_token.as_deref(), Some("abc"));
        assert!(!parsed.query.contains_key("access_token"));
        assert!(parse("filter[a][_eq]=1&filter[a]=2").is_err());
        Ok(())
    }
}
