//! Primary keys in SQL: conditions on one key or a list of keys (text forms, composite keys
//! joined by `,`), the key as a read writes it, and the stable order over the key.

use super::Planner;
use crate::schema::Collection;
use crate::sql::{Param, column};
use cdapi_proto::ApiError;

impl Planner<'_> {
    /// A condition matching any of `keys` (text forms) on rows aliased `alias`: one
    /// `= ANY(array)` for single-column keys. FORBIDDEN when a key cannot be one of this
    /// collection's; INVALID_PAYLOAD for an empty list.
    pub fn keys_condition(&mut self, collection: &Collection, alias: &str, keys: &[String]) -> Result<String, ApiError> {
        if keys.is_empty() {
            return Err(ApiError::invalid_payload("\"keys\" must not be empty"));
        }
        if let [pk] = collection.primary_key.as_slice() {
            let field = collection.field(pk).ok_or_else(ApiError::internal)?;
            if field.field_type.is_integer() && keys.iter().any(|k| k.trim().parse::<i64>().is_err()) {
                return Err(ApiError::forbidden());
            }
            let p = self.sql.param(Param::TextArray(keys.to_vec()));
            return Ok(format!("{} = ANY(CAST({p} AS {}[]))", column(alias, pk), field.db_type));
        }
        let mut parts = Vec::with_capacity(keys.len());
        for k in keys {
            parts.push(format!("({})", self.key_condition(collection, alias, k)?.join(" AND ")));
        }
        Ok(format!("({})", parts.join(" OR ")))
    }

    /// `pk = key` conditions; FORBIDDEN when the key cannot be one of this collection's.
    pub(crate) fn key_condition(&mut self, collection: &Collection, alias: &str, key: &str) -> Result<Vec<String>, ApiError> {
        let parts: Vec<&str> = if collection.primary_key.len() == 1 { vec![key] } else { key.split(',').collect() };
        if parts.len() != collection.primary_key.len() {
            return Err(ApiError::forbidden());
        }
        let mut conds = Vec::new();
        for (field, part) in collection.primary_key_fields().zip(parts) {
            if field.field_type.is_integer() && part.trim().parse::<i64>().is_err() {
                return Err(ApiError::forbidden());
            }
            conds.push(format!("{} = {}", column(alias, &field.name), self.sql.cast_param(part.to_owned(), &field.db_type)));
        }
        Ok(conds)
    }
}

/// ` ORDER BY` over the primary key (stable order), or nothing for key-less collections.
pub(super) fn pk_order(collection: &Collection, alias: &str) -> String {
    if collection.primary_key.is_empty() {
        return String::new();
    }
    let cols: Vec<String> = collection.primary_key.iter().map(|k| column(alias, k)).collect();
    format!(" ORDER BY {}", cols.join(", "))
}

/// The key of a related item as a read writes it: a single key column with its output form
/// (`bigint` and `numeric` keys as strings, as Directus), else [`pk_expr`].
pub(super) fn key_output(collection: &Collection, alias: &str) -> String {
    match collection.primary_key.as_slice() {
        [one] => match collection.field(one) {
            Some(f) => super::values::output(f.field_type, column(alias, one)),
            None => pk_expr(collection, alias),
        },
        _ => pk_expr(collection, alias),
    }
}

/// The key of a related item as JSON-able SQL: the column, or `a,b` text for composite keys.
pub fn pk_expr(collection: &Collection, alias: &str) -> String {
    match collection.primary_key.as_slice() {
        [one] => column(alias, one),
        [] => "NULL".into(),
        many => {
            let cols: Vec<String> = many.iter().map(|k| column(alias, k)).collect();
            format!("concat_ws(',', {})", cols.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::test_schema::blog;
    use crate::query::{Limits, Variables};
    use cdapi_proto::ErrorCode;

    fn condition(keys: &[&str]) -> Result<(String, Vec<Param>), ApiError> {
        let schema = blog();
        let c = schema.collection("articles").ok_or_else(ApiError::internal)?.clone();
        let vars = Variables::default();
        let mut planner = Planner::new(&schema, Limits::default(), &vars);
        let keys: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
        let sql = planner.keys_condition(&c, "t0", &keys)?;
        Ok((sql, planner.sql.params))
    }

    #[test]
    fn keys_are_one_array_parameter() -> Result<(), ApiError> {
        let (sql, params) = condition(&["1", " 2"])?;
        assert_eq!(sql, "t0.\"id\" = ANY(CAST($1 AS integer[]))");
        assert_eq!(params, vec![Param::TextArray(vec!["1".into(), " 2".into()])]);
        Ok(())
    }

    #[test]
    fn a_key_that_cannot_be_one_is_forbidden_and_no_keys_is_a_bad_payload() {
        // The same answer as a key the caller may not reach: nothing is learnt from the type.
        assert_eq!(condition(&["1", "x"]).err().map(|e| e.code), Some(ErrorCode::Forbidden));
        assert_eq!(condition(&[]).err().map(|e| e.code), Some(ErrorCode::InvalidPayload));
    }

    #[test]
    fn the_key_orders_and_identifies_rows() -> Result<(), ApiError> {
        let schema = blog();
        let c = schema.collection("articles").ok_or_else(ApiError::internal)?;
        assert_eq!(pk_order(c, "t0"), " ORDER BY t0.\"id\"");
        assert_eq!(pk_expr(c, "t0"), "t0.\"id\"");
        Ok(())
    }
}
