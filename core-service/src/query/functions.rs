//! Functions (Directus docs "Global Query Parameters"): `year month week day weekday hour minute second` on date and
//! time fields, `count` on JSON arrays, arrays and relational fields, in `fields` (the result
//! key is `<field>_<fn>`, as Directus: `published_at_year`), `filter`, `sort` and `groupBy`;
//! they arrive typed (`FieldPath.function`, `FieldCondition.function`).
//! Every function yields an integer (`int8`). Date parts of `timestamptz` values are taken in
//! UTC, so results do not depend on the server's time zone.

use super::Planner;

use super::predicate::{Column, DatePart, Expr, Part, RelatedCount};
use crate::schema::{Collection, FieldRelation, FieldType};
use cdapi_proto::ApiError;

/// A function name: the contract's enum (`query.proto` `FieldFunction`; REST names by
/// `query_language::paths::function_name`). Paths arrive typed: nothing here parses text.
pub use cdapi_proto::v1::FieldFunction as Function;

/// A function applied to a field of the current level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call<'s> {
    /// The function (never `Unspecified`).
    pub function: Function,
    /// The field it applies to.
    pub field: &'s str,
}

impl<'s> Call<'s> {
    /// The call of `function` on `field`; `None` when `function` is `Unspecified` (the field's
    /// value, no call).
    pub fn of(function: Function, field: &'s str) -> Option<Self> {
        (function != Function::Unspecified).then_some(Self { function, field })
    }
}

impl Planner<'_> {
    /// The expression (an `int8`) of `call` on `collection` rows aliased `alias`.
    /// Errors: FORBIDDEN for an unknown field; INVALID_QUERY when the function does not apply
    /// to the field's type.
    pub fn function_expr(&mut self, collection: &Collection, alias: &str, call: &Call<'_>) -> Result<Expr, ApiError> {
        self.function(collection, alias, call, false)
    }

    /// The expression (`text`) of `call` as `fields` writes it: as [`Planner::function_expr`],
    /// but `second` keeps its fraction, as Postgres's `EXTRACT` gives it (`"7.000000"`, as
    /// Directus answers).
    pub fn function_output_expr(&mut self, collection: &Collection, alias: &str, call: &Call<'_>) -> Result<Expr, ApiError> {
        Ok(Expr::Text(Box::new(self.function(collection, alias, call, true)?)))
    }

    fn function(&mut self, collection: &Collection, alias: &str, call: &Call<'_>, fraction: bool) -> Result<Expr, ApiError> {
        let field = collection.field(call.field).ok_or_else(|| ApiError::forbidden_field(&collection.name, call.field))?;
        let wrong_type = || {
            ApiError::invalid_query(format!(
                "Function \"{}\" cannot be used on field \"{}\" of type {}",
                call.function.name(),
                field.name,
                field.field_type.as_str()
            ))
        };
        let col = Column::new(alias, &field.name);
        if call.function == Function::Count {
            return match (&field.relation, field.field_type) {
                (Some(FieldRelation::O2M { related, related_field, local_field, .. }), _) => {
                    let c = self.sql.next_alias('c');
                    let rel = self.collection(related)?;
                    let rows = self.source(rel)?;
                    let foreign_key = Column::new(&c, related_field);
                    Ok(Expr::RelatedCount(Box::new(RelatedCount { rows, alias: c, foreign_key, local: Column::new(alias, local_field) })))
                }
                (_, FieldType::Json) => Ok(Expr::JsonLength(col)),
                (_, FieldType::Csv) => Ok(Expr::ArrayLength(col)),
                _ => Err(wrong_type()),
            };
        }
        let utc = match field.field_type {
            FieldType::Timestamp => true,
            FieldType::Date | FieldType::DateTime => false,
            FieldType::Time if matches!(call.function, Function::Hour | Function::Minute | Function::Second) => false,
            _ => return Err(wrong_type()),
        };
        let part = match call.function {
            Function::Year => Part::Year,
            Function::Month => Part::Month,
            Function::Week => Part::Week,
            Function::Day => Part::Day,
            Function::Weekday => Part::Weekday,
            Function::Hour => Part::Hour,
            Function::Minute => Part::Minute,
            Function::Second => Part::Second,
            Function::Count | Function::Unspecified => return Err(wrong_type()),
        };
        Ok(Expr::DatePart(DatePart { column: col, part, utc, fraction }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::test_schema::blog;
    use crate::query::{Limits, Variables};
    use cdapi_proto::ErrorCode;

    fn expr(collection: &str, function: Function, field: &str) -> Result<Expr, ApiError> {
        let schema = blog();
        let c = schema.collection(collection).ok_or_else(ApiError::internal)?.clone();
        let vars = Variables::default();
        let call = Call::of(function, field).ok_or_else(ApiError::internal)?;
        Planner::new(&schema, Limits::default(), &vars).function_expr(&c, "t0", &call)
    }

    #[test]
    fn count_of_a_to_many_field_counts_the_related_rows() -> Result<(), ApiError> {
        let Expr::RelatedCount(count) = expr("authors", Function::Count, "articles")? else { panic!("a related count") };
        assert_eq!(count.rows, crate::query::predicate::Source::Table("\"public\".\"articles\"".into()));
        assert_eq!((count.alias.as_str(), &count.foreign_key, &count.local), ("c1", &Column::new("c1", "author"), &Column::new("t0", "id")));
        Ok(())
    }

    #[test]
    fn functions_apply_to_their_types_only() {
        let code = |c: &str, f: Function, field: &str| expr(c, f, field).err().map(|e| e.code);
        assert_eq!(code("articles", Function::Year, "title"), Some(ErrorCode::InvalidQuery), "a date part of a text");
        assert_eq!(code("articles", Function::Count, "title"), Some(ErrorCode::InvalidQuery), "count of a text");
        assert_eq!(code("articles", Function::Year, "nope"), Some(ErrorCode::Forbidden), "an unknown field");
        assert!(Call::of(Function::Unspecified, "title").is_none(), "no function is the field's value");
    }
}
