//! How a column's value is written into the response JSON. Postgres's own JSON forms are
//! kept, except where Directus on Postgres answers otherwise and clients parse what it sends
//! (docs/directus-compatibility.md; Directus's payload service):
//! - `timestamptz` (`timestamp`): ISO 8601 in UTC with milliseconds, `2024-03-14T10:52:07.000Z`
//!   (JavaScript's `Date#toISOString`; finer fractions are cut, as a `Date` holds milliseconds);
//! - `timestamp` (`dateTime`): the wall-clock time without zone or fraction,
//!   `2024-03-14T10:52:07`;
//! - `date` (`2024-03-14`) and `time` (`10:52:07`) are Postgres's forms already;
//! - `bigint` and `numeric` (`bigInteger`, `decimal`) as strings, `"9007199254740993"`,
//!   `"12.50"` (node-postgres's text, which no JavaScript number could hold exactly);
//! - results of functions (`year(published_at)`, `count(tags)`) as strings, `"2023"`: on
//!   Postgres 14+ `EXTRACT` is `numeric` and `count` is `bigint`, which node-postgres gives as
//!   strings.
//!
//! Values outside `to_char`'s range (`infinity`) come out as JSON `null`.

use crate::schema::{FieldType, ValueCast};

/// What a concealed value reads as (Directus's mask).
pub const CONCEALED: &str = "**********";

/// The SQL expression of a value shaped by `cast` (a field's `meta.special`; rules at
/// [`ValueCast`]): `raw` is the column, `out` its usual output form. Casts that do not apply
/// to the column's type (`cast-json` of a json column, `cast-boolean` of a boolean) leave
/// `out` as it is.
pub fn cast_output(cast: ValueCast, field_type: FieldType, raw: &str, out: String) -> String {
    match cast {
        ValueCast::Conceal => concealed(raw),
        ValueCast::Json if field_type.is_textual() => format!("{}.json_or_text({raw})", crate::schema::introspect::SYSTEM_SCHEMA),
        ValueCast::Csv if field_type.is_textual() => format!("to_json(string_to_array({raw}, ','))"),
        ValueCast::Boolean if field_type != FieldType::Boolean => format!(
            "CASE WHEN {raw}::text = '1' THEN to_json(true) WHEN {raw}::text = '0' THEN to_json(false) \
             WHEN {raw} IS NULL OR {raw}::text = '' THEN NULL ELSE to_json({out}) END"
        ),
        _ => out,
    }
}

/// A concealed column: the mask, or null when it holds nothing (null or empty).
pub fn concealed(raw: &str) -> String {
    format!("CASE WHEN {raw} IS NULL OR {raw}::text = '' THEN NULL ELSE '{CONCEALED}' END")
}

/// `to_char` pattern of a UTC timestamp with milliseconds and `Z`. The colons are quoted
/// literal text (the same output): a bare `:MI` reads as a variable to tools such as pgbench,
/// which `bench/run` feeds the core's statements to.
const ISO_MILLIS_Z: &str = r#"'YYYY-MM-DD"T"HH24":"MI":"SS.MS"Z"'"#;

/// `to_char` pattern of a timestamp to the second, without zone (colons quoted as above).
const ISO_SECONDS: &str = r#"'YYYY-MM-DD"T"HH24":"MI":"SS'"#;

/// The SQL expression writing a value of `field_type` (its expression is `col`) the way the
/// response carries it.
pub fn output(field_type: FieldType, col: String) -> String {
    match field_type {
        FieldType::Timestamp => iso_datetime(field_type, &col).unwrap_or(col),
        FieldType::DateTime => format!("to_char({col}, {ISO_SECONDS})"),
        FieldType::BigInteger | FieldType::Decimal => format!("{col}::text"),
        _ => col,
    }
}

/// The SQL expression writing column `raw` (of `field_type`, shaped by `cast`) the way the
/// response carries it: its type's form ([`output`]), then its cast ([`cast_output`]).
pub fn value_output(field_type: FieldType, cast: Option<ValueCast>, raw: &str) -> String {
    shaped(field_type, cast, raw, output(field_type, raw.to_owned()))
}

/// `out` (column `raw`'s output form) shaped by `cast`, if any.
fn shaped(field_type: FieldType, cast: Option<ValueCast>, raw: &str, out: String) -> String {
    match cast {
        Some(cast) => cast_output(cast, field_type, raw, out),
        None => out,
    }
}

/// [`value_output`] in GraphQL's output forms (a query's `graphql_values`, set by edge-graphql;
/// docs/graphql.md): a single-field primary key (`primary_key`) of an `integer` or `float`
/// column is written as text before its cast applies, so whatever number it gives is the string
/// the `ID` scalar serializes it to (a cast's booleans and mask stay as they are); a concealed
/// `integer`, `float` or `decimal` value that is no primary key reads as null, as the `Int` and
/// `Float` scalars serialize a string that holds no number.
pub fn graphql_output(field_type: FieldType, primary_key: bool, cast: Option<ValueCast>, raw: &str) -> String {
    let number = matches!(field_type, FieldType::Integer | FieldType::Float | FieldType::Decimal);
    if cast == Some(ValueCast::Conceal) && number && !primary_key {
        return "NULL".to_owned();
    }
    let mut out = output(field_type, raw.to_owned());
    if primary_key && matches!(field_type, FieldType::Integer | FieldType::Float) {
        out = format!("({out})::text");
    }
    shaped(field_type, cast, raw, out)
}

/// The form a reply writes a stored value in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputForm {
    /// REST's and gRPC's ([`value_output`]).
    Items,
    /// GraphQL's ([`graphql_output`]); `primary_key`: the field is its collection's
    /// single-field primary key.
    GraphQL {
        /// See above.
        primary_key: bool,
    },
}

/// Column `raw` (of `field_type`, shaped by `cast`) written in `form`: [`value_output`] or
/// [`graphql_output`].
pub fn form_output(field_type: FieldType, cast: Option<ValueCast>, form: OutputForm, raw: &str) -> String {
    match form {
        OutputForm::Items => value_output(field_type, cast, raw),
        OutputForm::GraphQL { primary_key } => graphql_output(field_type, primary_key, cast, raw),
    }
}

/// Whether [`form_output`] writes the column as it is stored (the bare column), decided from
/// the types alone so a plan needs no SQL text for it (a unit test holds the two together).
pub fn writes_as_stored(field_type: FieldType, cast: Option<ValueCast>, form: OutputForm) -> bool {
    let typed = matches!(field_type, FieldType::Timestamp | FieldType::DateTime | FieldType::BigInteger | FieldType::Decimal);
    let cast = match cast {
        None => false,
        Some(ValueCast::Conceal) => true,
        Some(ValueCast::Json | ValueCast::Csv) => field_type.is_textual(),
        Some(ValueCast::Boolean) => field_type != FieldType::Boolean,
    };
    let key_text = matches!(form, OutputForm::GraphQL { primary_key: true }) && matches!(field_type, FieldType::Integer | FieldType::Float);
    !typed && !cast && !key_text
}

/// A timestamp, timestamp without zone or date as Directus's JavaScript `Date` serialises it
/// (UTC, milliseconds, `Z`; dates at midnight): aggregates' min/max and system timestamps.
/// `None` for other types.
pub fn iso_datetime(field_type: FieldType, expr: &str) -> Option<String> {
    match field_type {
        FieldType::Timestamp => Some(format!("to_char({expr} AT TIME ZONE 'UTC', {ISO_MILLIS_Z})")),
        FieldType::DateTime | FieldType::Date => Some(format!("to_char({expr}::timestamp, {ISO_MILLIS_Z})")),
        _ => None,
    }
}

/// The SQL writing a function's result (an `int8` expression) as the response carries it.
pub fn function_output(expr: String) -> String {
    format!("({expr})::text")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_have_no_bare_colon_for_pgbench_to_read_as_a_variable() {
        for field_type in [FieldType::Timestamp, FieldType::DateTime] {
            let sql = output(field_type, "t0.\"at\"".into());
            // Every `:` of the pattern sits inside double quotes (literal text of `to_char`).
            let bare = sql.split('"').enumerate().filter(|(i, _)| i % 2 == 0).any(|(_, part)| part.contains(':'));
            assert!(!bare, "{sql}");
        }
    }

    #[test]
    fn outputs_and_casts_apply_to_their_types_only() {
        assert_eq!(output(FieldType::BigInteger, "c".into()), "c::text", "a bigint is a string");
        assert_eq!(output(FieldType::Integer, "c".into()), "c");
        assert_eq!(cast_output(ValueCast::Json, FieldType::Json, "c", "c".into()), "c", "cast-json of a json column");
        assert_eq!(cast_output(ValueCast::Boolean, FieldType::Boolean, "c", "c".into()), "c", "cast-boolean of a boolean");
        assert_eq!(cast_output(ValueCast::Conceal, FieldType::Text, "c", "c".into()), concealed("c"));
        assert!(iso_datetime(FieldType::Text, "c").is_none());
        assert_eq!(function_output("x".into()), "(x)::text");
    }

    #[test]
    fn a_value_is_written_as_stored_exactly_when_its_form_is_the_bare_column() {
        let casts = [None, Some(ValueCast::Conceal), Some(ValueCast::Json), Some(ValueCast::Csv), Some(ValueCast::Boolean)];
        let forms = [OutputForm::Items, OutputForm::GraphQL { primary_key: false }, OutputForm::GraphQL { primary_key: true }];
        let mut checked = 0;
        for field_type in (0..=17).filter_map(|i| FieldType::try_from(i).ok()) {
            for cast in casts {
                for form in forms {
                    let text = form_output(field_type, cast, form, "t0.\"c\"");
                    assert_eq!(writes_as_stored(field_type, cast, form), text == "t0.\"c\"", "{field_type:?} {cast:?} {form:?}: {text}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 18 * 5 * 3);
    }

    #[test]
    fn graphql_forms_are_key_text_and_no_concealed_number() {
        assert_eq!(graphql_output(FieldType::Integer, true, None, "c"), "(c)::text", "an integer ID");
        assert_eq!(graphql_output(FieldType::Uuid, true, None, "c"), "c", "a uuid is a string already");
        assert_eq!(graphql_output(FieldType::Integer, false, None, "c"), "c", "an Int stays a number");
        assert_eq!(graphql_output(FieldType::Decimal, false, Some(ValueCast::Conceal), "c"), "NULL", "a Float cannot hold the mask");
        assert_eq!(graphql_output(FieldType::Integer, true, Some(ValueCast::Conceal), "c"), concealed("c"), "an ID can");
        assert_eq!(graphql_output(FieldType::Text, false, Some(ValueCast::Conceal), "c"), concealed("c"), "a String can");
        // A cast that leaves numbers (cast-json of a number, cast-boolean's other values) gets
        // the key's text.
        assert_eq!(graphql_output(FieldType::Integer, true, Some(ValueCast::Json), "c"), "(c)::text");
        assert!(graphql_output(FieldType::Integer, true, Some(ValueCast::Boolean), "c").contains("ELSE to_json((c)::text)"));
        assert_eq!(graphql_output(FieldType::Text, false, Some(ValueCast::Csv), "c"), value_output(FieldType::Text, Some(ValueCast::Csv), "c"));
    }
}
