//! Functions (spec: "Functions"): `year month week day weekday hour minute second` on date and
//! time fields, `count` on JSON arrays, arrays and relational fields. Written `<fn>(<field>)` in
//! `fields` (the result key is `<field>_<fn>`, as Directus: `published_at_year`), `filter`, `sort`, `groupBy`, `aggregate`.
//! Every function yields an integer (`int8`). Date parts of `timestamptz` values are taken in
//! UTC, so results do not depend on the server's time zone.

use super::Planner;
use super::sql::column;
use super::forbidden_field;
use crate::schema::{Collection, FieldRelation, FieldType};
use cdapi_proto::ApiError;

/// A function name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// Calendar year.
    Year,
    /// Month 1–12.
    Month,
    /// ISO week 1–53.
    Week,
    /// Day of month 1–31.
    Day,
    /// Day of week, 0 = Sunday (as Directus).
    Weekday,
    /// Hour 0–23.
    Hour,
    /// Minute 0–59.
    Minute,
    /// Second 0–59.
    Second,
    /// Number of items (JSON array, array, O2M).
    Count,
}

/// A parsed `<fn>(<field>)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call<'s> {
    /// The function.
    pub function: Function,
    /// The field it applies to.
    pub field: &'s str,
}

/// Parses `year(published_at)`. `Ok(None)` when `s` is not a call; INVALID_QUERY when it is
/// malformed or names an unknown function.
pub fn parse(s: &str) -> Result<Option<Call<'_>>, ApiError> {
    let Some(open) = s.find('(') else { return Ok(None) };
    let name = &s[..open];
    let field = s[open + 1..]
        .strip_suffix(')')
        .filter(|f| !f.is_empty() && !f.contains(['(', ')']))
        .ok_or_else(|| ApiError::invalid_query(format!("\"{s}\" is not a valid function call")))?;
    let function = match name {
        "year" => Function::Year,
        "month" => Function::Month,
        "week" => Function::Week,
        "day" => Function::Day,
        "weekday" => Function::Weekday,
        "hour" => Function::Hour,
        "minute" => Function::Minute,
        "second" => Function::Second,
        "count" => Function::Count,
        other => return Err(ApiError::invalid_query(format!("Unknown function \"{other}\""))),
    };
    Ok(Some(Call { function, field }))
}

impl Planner<'_> {
    /// The SQL expression (an `int8`) of `call` on `collection` rows aliased `alias`.
    /// Errors: FORBIDDEN for an unknown field; INVALID_QUERY when the function does not apply
    /// to the field's type.
    pub fn function_expr(&mut self, collection: &Collection, alias: &str, call: &Call<'_>) -> Result<String, ApiError> {
        self.function_sql(collection, alias, call, false)
    }

    /// The SQL expression (`text`) of `call` as `fields` writes it: as [`Planner::function_expr`],
    /// but `second` keeps its fraction, as Postgres's `EXTRACT` gives it (`"7.000000"`, as
    /// Directus answers).
    pub fn function_output_expr(&mut self, collection: &Collection, alias: &str, call: &Call<'_>) -> Result<String, ApiError> {
        Ok(super::values::function_output(self.function_sql(collection, alias, call, true)?))
    }

    fn function_sql(&mut self, collection: &Collection, alias: &str, call: &Call<'_>, exact: bool) -> Result<String, ApiError> {
        let field = collection.field(call.field).ok_or_else(|| forbidden_field(&collection.name, call.field))?;
        let wrong_type = || {
            ApiError::invalid_query(format!(
                "Function \"{}\" cannot be used on field \"{}\" of type {}",
                name(call.function),
                field.name,
                field.field_type.as_str()
            ))
        };
        let col = column(alias, &field.name);
        if call.function == Function::Count {
            return match (&field.relation, field.field_type) {
                (Some(FieldRelation::O2M { related, related_field, local_field, .. }), _) => {
                    let c = self.sql.next_alias('c');
                    let rel = self.collection(related)?;
                    Ok(format!(
                        "(SELECT count(*) FROM {} {c} WHERE {} = {})",
                        self.source(rel)?,
                        column(&c, related_field),
                        column(alias, local_field)
                    ))
                }
                (_, FieldType::Json) => Ok(format!(
                    "(CASE WHEN json_typeof({col}::json) = 'array' THEN json_array_length({col}::json) END)::int8"
                )),
                (_, FieldType::Csv) => Ok(format!("coalesce(cardinality({col}), 0)::int8")),
                _ => Err(wrong_type()),
            };
        }
        let source = match field.field_type {
            FieldType::Timestamp => format!("({col} AT TIME ZONE 'UTC')"),
            FieldType::Date | FieldType::DateTime => col,
            FieldType::Time if matches!(call.function, Function::Hour | Function::Minute | Function::Second) => col,
            _ => return Err(wrong_type()),
        };
        let part = match call.function {
            Function::Year => "YEAR",
            Function::Month => "MONTH",
            Function::Week => "WEEK",
            Function::Day => "DAY",
            Function::Weekday => "DOW",
            Function::Hour => "HOUR",
            Function::Minute => "MINUTE",
            Function::Second => "SECOND",
            Function::Count => return Err(wrong_type()),
        };
        if exact && call.function == Function::Second {
            return Ok(format!("EXTRACT(SECOND FROM {source})"));
        }
        Ok(format!("floor(EXTRACT({part} FROM {source}))::int8"))
    }
}

/// The function's name as written in queries.
pub fn name(f: Function) -> &'static str {
    match f {
        Function::Year => "year",
        Function::Month => "month",
        Function::Week => "week",
        Function::Day => "day",
        Function::Weekday => "weekday",
        Function::Hour => "hour",
        Function::Minute => "minute",
        Function::Second => "second",
        Function::Count => "count",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_calls_and_rejects_bad_ones() {
        assert_eq!(parse("title"), Ok(None));
        assert_eq!(parse("year(published_at)"), Ok(Some(Call { function: Function::Year, field: "published_at" })));
        assert!(parse("decade(published_at)").is_err());
        assert!(parse("year(published_at").is_err());
        assert!(parse("year()").is_err());
        assert!(parse("year(month(x))").is_err());
    }
}
