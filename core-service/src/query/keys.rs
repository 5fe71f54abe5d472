//! Primary keys in SQL: conditions on one key or a list of keys (text forms, composite keys
//! joined by `,`), the key as a read writes it, and the stable order over the key.

use super::Planner;
use super::predicate::column::render_key;
use super::predicate::{Column, Comparison, Expr, Operand, Predicate, Test, ValueOutput};
use super::values::OutputForm;
use crate::schema::{Collection, Field};
use crate::sql::column;
use cdapi_proto::ApiError;

impl Planner<'_> {
    /// [`Self::keys_predicate`] written as SQL into the statement under construction.
    pub fn keys_condition(&mut self, collection: &Collection, alias: &str, keys: &[String]) -> Result<String, ApiError> {
        let keys = self.keys_predicate(collection, alias, keys)?;
        Ok(keys.render(&mut self.sql))
    }

    /// A condition matching any of `keys` (text forms) on rows aliased `alias`: one
    /// `= ANY(array)` for single-column keys ([`Test::AnyOf`]), else some key's columns all
    /// equal. FORBIDDEN when a key cannot be one of this collection's (the same answer as a key
    /// the caller may not reach: nothing is learnt from the type); INVALID_PAYLOAD for an
    /// empty list.
    pub fn keys_predicate(&self, collection: &Collection, alias: &str, keys: &[String]) -> Result<Predicate, ApiError> {
        if keys.is_empty() {
            return Err(ApiError::invalid_payload("\"keys\" must not be empty"));
        }
        if let [pk] = collection.primary_key.as_slice() {
            let field = collection.field(pk).ok_or_else(|| ApiError::internal_because(format!("the primary key \"{pk}\" is not a field")))?;
            if keys.iter().any(|k| !can_be(field, k)) {
                return Err(ApiError::forbidden());
            }
            return Ok(on_key(field, alias, Test::AnyOf(keys.to_vec())));
        }
        keys.iter().map(|k| self.key_predicate(collection, alias, k)).collect::<Result<Vec<_>, _>>().map(Predicate::Or)
    }

    /// Every column of the primary key equals its part of `key` (composite keys: parts joined
    /// by `,`); FORBIDDEN when the key cannot be one of this collection's.
    pub(crate) fn key_predicate(&self, collection: &Collection, alias: &str, key: &str) -> Result<Predicate, ApiError> {
        let parts: Vec<&str> = if collection.primary_key.len() == 1 { vec![key] } else { key.split(',').collect() };
        if parts.len() != collection.primary_key.len() {
            return Err(ApiError::forbidden());
        }
        let mut conds = Vec::with_capacity(parts.len());
        for (field, part) in collection.primary_key_fields().zip(parts) {
            if !can_be(field, part) {
                return Err(ApiError::forbidden());
            }
            conds.push(on_key(field, alias, Test::Equals(Operand::Text(part.to_owned()))));
        }
        // A key has at least one column (checked above); none would match nothing, never all.
        Ok(match conds.len() {
            0 => Predicate::Const(false),
            1 => conds.swap_remove(0),
            _ => Predicate::And(conds),
        })
    }
}

/// Whether `text` can be a value of key column `field` (an integer key's text parses).
fn can_be(field: &Field, text: &str) -> bool {
    !field.field_type.is_integer() || text.trim().parse::<i64>().is_ok()
}

/// `test` on key column `field` of rows `alias`.
fn on_key(field: &Field, alias: &str, test: Test) -> Predicate {
    Predicate::Compare(Comparison { target: Expr::column(alias, &field.name), db_type: field.db_type.clone(), text_cast: false, test })
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
/// (`bigint` and `numeric` keys as strings, as Directus), else the key's columns as one value
/// ([`Expr::Key`]: `a,b` text for composite keys).
pub(super) fn key_output(collection: &Collection, alias: &str) -> Expr {
    match (collection.primary_key.as_slice(), collection.primary_key_fields().next()) {
        ([_], Some(f)) => ValueOutput { column: Column::new(alias, &f.name), field_type: f.field_type, cast: None, form: OutputForm::Items }.expr(),
        _ => Expr::Key(key_columns(collection, alias)),
    }
}

/// The columns of `collection`'s primary key on rows `alias`.
pub fn key_columns(collection: &Collection, alias: &str) -> Vec<Column> {
    collection.primary_key.iter().map(|k| Column::new(alias, k)).collect()
}

/// The key of an item of `collection` (rows `alias`) as JSON-able SQL text (it binds nothing;
/// [`render_key`]), for statements that select or return keys (writes, the keys of a write's
/// query, triggers).
pub fn pk_expr(collection: &Collection, alias: &str) -> String {
    render_key(&key_columns(collection, alias))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::test_schema::blog;
    use crate::query::{Limits, Variables};
    use crate::sql::Param;
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

    /// `articles` keyed by (`id`, `title`).
    fn composite() -> Result<Collection, ApiError> {
        let mut c = blog().collection("articles").ok_or_else(ApiError::internal)?.as_ref().clone();
        c.primary_key = vec!["id".into(), "title".into()];
        Ok(c)
    }

    #[test]
    fn a_composite_key_is_each_column_equal_to_its_part() -> Result<(), ApiError> {
        let (schema, vars) = (blog(), Variables::default());
        let planner = Planner::new(&schema, Limits::default(), &vars);
        let c = composite()?;
        let equals = |name: &str, db_type: &str, v: &str| {
            Predicate::Compare(Comparison {
                target: Expr::column("t0", name),
                db_type: db_type.into(),
                text_cast: false,
                test: Test::Equals(Operand::Text(v.into())),
            })
        };
        let one = Predicate::And(vec![equals("id", "integer", "1"), equals("title", "text", "a")]);
        assert_eq!(planner.key_predicate(&c, "t0", "1,a")?, one);
        let two = Predicate::And(vec![equals("id", "integer", "2"), equals("title", "text", "b")]);
        assert_eq!(planner.keys_predicate(&c, "t0", &["1,a".into(), "2,b".into()])?, Predicate::Or(vec![one, two]));
        let refused = |key: &str| planner.key_predicate(&c, "t0", key).err().map(|e| e.code);
        assert_eq!(refused("1"), Some(ErrorCode::Forbidden), "a part missing");
        assert_eq!(refused("x,a"), Some(ErrorCode::Forbidden), "not an integer");
        let articles = schema.collection("articles").ok_or_else(ApiError::internal)?;
        assert_eq!(planner.key_predicate(articles, "t0", "7")?, equals("id", "integer", "7"), "one column: no group");
        Ok(())
    }
}
