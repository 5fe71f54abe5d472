//! Which items a write may change (docs/security.md "Permissions"): the condition, built from the caller's permission
//! rows, that every item a create, update or delete touches must meet. Pure: the validation
//! outcomes come from [`super::validate::check`].

use super::{Grant, all_of, any_of};
use cdapi_proto::ApiError;
use cdapi_proto::v1::Filter;
use std::sync::Arc;

/// The condition for writing `fields` of `collection` through `grant`: for every field, one of
/// the rows that grants it ([`super::Permission::writes`]) and whose validation the payload
/// passed (`validation[i]` is row `i`'s outcome) must match the item. `None` = every item.
/// With no fields (a delete, or an update carrying only relational changes already checked),
/// the item must match some row.
///
/// Errors: FORBIDDEN naming the first field no row grants (Directus's wording); the first
/// granting row's FAILED_VALIDATION when no granting row's validation passed.
pub fn write_condition(grant: &Grant, collection: &str, fields: &[&str], validation: &[Result<(), ApiError>]) -> Result<Option<Arc<Filter>>, ApiError> {
    if fields.is_empty() {
        return Ok(grant.row_filter());
    }
    let mut per_field = Vec::with_capacity(fields.len());
    for field in fields {
        let granting: Vec<usize> = (0..grant.rows.len()).filter(|&i| grant.rows[i].writes(collection, field)).collect();
        if granting.is_empty() {
            return Err(ApiError::forbidden_field(collection, field));
        }
        let passing: Vec<usize> = granting.iter().copied().filter(|&i| validation.get(i).is_none_or(Result::is_ok)).collect();
        if passing.is_empty() {
            let first = granting.iter().find_map(|&i| validation.get(i).and_then(|r| r.as_ref().err()));
            return Err(first.cloned().unwrap_or_else(ApiError::forbidden));
        }
        per_field.push(any_of(passing.iter().map(|&i| grant.rows[i].filter.clone())));
    }
    // Fields granted by the same rows give the same condition: AND it once.
    per_field.dedup();
    Ok(all_of(per_field))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::{Fields, Permission};
    use serde_json::{Map, json};

    fn row(filter: Option<serde_json::Value>, fields: &[&str]) -> Permission {
        Permission {
            filter: filter.and_then(|f| query_language::query_json::filter_from_json(&f, 0).ok().flatten()).map(Arc::new),
            fields: if fields == ["*"] { Fields::All } else { Fields::Only(fields.iter().map(|f| (*f).to_owned()).collect()) },
            validation: None,
            presets: Map::new(),
        }
    }

    #[test]
    fn rows_never_lend_each_other_fields() -> Result<(), ApiError> {
        // The role may edit first_name anywhere; the built-in row lets
        // a user edit their own password. Together they must not let anyone edit another
        // user's password.
        let grant = Grant { rows: vec![row(None, &["first_name"]), row(Some(json!({"id": {"_eq": "$CURRENT_USER"}})), &["first_name", "password"])] };
        let own = write_condition(&grant, "directus_users", &["password"], &[Ok(()), Ok(())])?;
        assert_eq!(own, grant.rows[1].filter, "password only where the own-user row matches");
        assert_eq!(write_condition(&grant, "directus_users", &["first_name"], &[Ok(()), Ok(())])?, None);
        // `*` does not cover sensitive fields.
        let star = Grant { rows: vec![row(None, &["*"])] };
        let e = write_condition(&star, "directus_users", &["role"], &[Ok(())]).err().ok_or_else(ApiError::internal)?;
        assert_eq!(e.code, cdapi_proto::ErrorCode::Forbidden);
        assert_eq!(write_condition(&star, "articles", &["role"], &[Ok(())])?, None);
        Ok(())
    }

    #[test]
    fn a_failed_validation_removes_its_row() -> Result<(), ApiError> {
        let grant = Grant { rows: vec![row(Some(json!({"a": {"_eq": 1}})), &["x"]), row(Some(json!({"b": {"_eq": 2}})), &["x"])] };
        let bad = ApiError::failed_validation("x", "eq", "no");
        let cond = write_condition(&grant, "c", &["x"], &[Err(bad.clone()), Ok(())])?;
        assert_eq!(cond, grant.rows[1].filter);
        let e = write_condition(&grant, "c", &["x"], &[Err(bad.clone()), Err(bad)]).err().ok_or_else(ApiError::internal)?;
        assert_eq!(e.code, cdapi_proto::ErrorCode::FailedValidation);
        Ok(())
    }
}
