//! Expressions of a plan: what a condition compares ([`super::Comparison`]), what a sort
//! orders by ([`crate::query::order::SortTerm`]) and what a group is keyed by. A column of an
//! aliased row, and a function of one (Directus docs "Global Query Parameters", functions:
//! `year(published_at)`, `count(tags)`, planned by [`crate::query::functions`]), a stored
//! value in the form a reply writes it ([`ValueOutput`]), a key in text form and an aggregate
//! of a group's rows ([`AggregateOf`], compared by `having`) are typed. [`Expr::Sql`] carries
//! text already rendered into the statement: an aggregate's group key, which
//! [`crate::query::aggregate::AggregatePlan::render`] writes once and reuses in ORDER BY, as
//! Postgres matches it to GROUP BY by text (and a key counting related rows binds parameters,
//! which must not be numbered anew).

use super::{Column, Source};
use crate::query::values::{OutputForm, form_output, writes_as_stored};
use crate::schema::{FieldType, ValueCast};
use crate::sql::Sql;

/// A scalar expression over one row (or one group) of a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A column: `t0."title"`.
    Column(Column),
    /// A part of a date, time or timestamp column, an `int8`:
    /// `floor(EXTRACT(YEAR FROM t0."published_at"))::int8`.
    DatePart(DatePart),
    /// The length of a JSON column holding an array, an `int8`; NULL for any other JSON value.
    JsonLength(Column),
    /// The number of entries of an array (CSV) column, an `int8`; 0 when NULL.
    ArrayLength(Column),
    /// The number of related rows of a to-many field the caller may see, an `int8`.
    RelatedCount(Box<RelatedCount>),
    /// The expression's text form, `(e)::text`: a function's result as a reply writes it.
    Text(Box<Expr>),
    /// A stored value in the form a reply writes it, where that is not the bare column.
    Value(Box<ValueOutput>),
    /// A primary key's columns as one value ([`super::column::render_key`]).
    Key(Vec<Column>),
    /// An aggregate of a group's rows.
    Aggregate(AggregateOf),
    /// SQL text already rendered into this statement (a group key, reused in ORDER BY); any
    /// `$n` in it are this statement's.
    Sql(String),
}

/// An aggregate function (Directus docs "Global Query Parameters", `aggregate`; the result
/// types are [`crate::query::aggregate`]'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    /// `count`: the rows (all of them, or those where the column is not null).
    Count,
    /// `sum`.
    Sum,
    /// `avg`.
    Avg,
    /// `min`.
    Min,
    /// `max`.
    Max,
}

/// An aggregate function over a column of a group's rows ([`Expr::Aggregate`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateOf {
    /// The function.
    pub function: Aggregate,
    /// Over distinct values only (`countDistinct`, `sumDistinct`, `avgDistinct`).
    pub distinct: bool,
    /// The column; `None`: every row (`count(*)`).
    pub column: Option<Column>,
}

impl AggregateOf {
    /// `count(*)`, `sum(DISTINCT t0."amount")`.
    pub fn render(&self) -> String {
        let name = match self.function {
            Aggregate::Count => "count",
            Aggregate::Sum => "sum",
            Aggregate::Avg => "avg",
            Aggregate::Min => "min",
            Aggregate::Max => "max",
        };
        match &self.column {
            None => format!("{name}(*)"),
            Some(c) => format!("{name}({}{})", if self.distinct { "DISTINCT " } else { "" }, c.render()),
        }
    }
}

/// A stored value as a reply writes it: its type's form, then its field's cast
/// ([`crate::query::values`]; docs/directus-compatibility.md).
#[derive(Debug, Clone, PartialEq)]
pub struct ValueOutput {
    /// The column holding it.
    pub column: Column,
    /// The field's type.
    pub field_type: FieldType,
    /// The field's cast (`meta.special`), if any.
    pub cast: Option<ValueCast>,
    /// REST's and gRPC's form, or GraphQL's.
    pub form: OutputForm,
}

impl ValueOutput {
    /// The value as an expression: the bare column when `form` writes it as stored, else
    /// [`Expr::Value`].
    pub fn expr(self) -> Expr {
        if writes_as_stored(self.field_type, self.cast, self.form) { Expr::Column(self.column) } else { Expr::Value(Box::new(self)) }
    }
}

/// A part of a date or time, as `EXTRACT` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `YEAR`.
    Year,
    /// `MONTH`.
    Month,
    /// `WEEK` (ISO week of the year).
    Week,
    /// `DAY` of the month.
    Day,
    /// `DOW`: the day of the week, Sunday 0.
    Weekday,
    /// `HOUR`.
    Hour,
    /// `MINUTE`.
    Minute,
    /// `SECOND`.
    Second,
}

/// A part of a column's date or time ([`Expr::DatePart`]).
#[derive(Debug, Clone, PartialEq)]
pub struct DatePart {
    /// The column.
    pub column: Column,
    /// The part taken.
    pub part: Part,
    /// Read a `timestamptz` column in UTC (`AT TIME ZONE 'UTC'`), so the part does not depend
    /// on the server's time zone.
    pub utc: bool,
    /// Keep the fraction of a second, as `EXTRACT` gives it (`7.000000`): the value `fields`
    /// writes, as Directus does. Otherwise the whole part, an `int8`.
    pub fraction: bool,
}

/// `(SELECT count(*) FROM <rows> <alias> WHERE <foreign_key> = <local>)`.
#[derive(Debug, Clone, PartialEq)]
pub struct RelatedCount {
    /// The related rows the caller may see.
    pub rows: Source,
    /// Their alias (`c1`).
    pub alias: String,
    /// The related rows' column pointing at the counted item.
    pub foreign_key: Column,
    /// The counted item's column it points at.
    pub local: Column,
}

impl Expr {
    /// The column `name` of row `alias`.
    pub fn column(alias: &str, name: &str) -> Self {
        Self::Column(Column::new(alias, name))
    }

    /// The expression's SQL, the literals of the rows it reads bound as parameters of `sql`.
    pub fn render(&self, sql: &mut Sql) -> String {
        match self {
            Self::Column(c) => c.render(),
            Self::DatePart(d) => d.render(),
            Self::JsonLength(c) => {
                let c = c.render();
                format!("(CASE WHEN json_typeof({c}::json) = 'array' THEN json_array_length({c}::json) END)::int8")
            }
            Self::ArrayLength(c) => format!("coalesce(cardinality({}), 0)::int8", c.render()),
            Self::RelatedCount(count) => {
                let rows = count.rows.render(sql);
                format!("(SELECT count(*) FROM {rows} {} WHERE {} = {})", count.alias, count.foreign_key.render(), count.local.render())
            }
            Self::Text(e) => crate::query::values::function_output(e.render(sql)),
            Self::Value(v) => form_output(v.field_type, v.cast, v.form, &v.column.render()),
            Self::Key(columns) => super::column::render_key(columns),
            Self::Aggregate(a) => a.render(),
            Self::Sql(text) => text.clone(),
        }
    }
}

impl DatePart {
    fn render(&self) -> String {
        let column = self.column.render();
        let source = if self.utc { format!("({column} AT TIME ZONE 'UTC')") } else { column };
        let part = match self.part {
            Part::Year => "YEAR",
            Part::Month => "MONTH",
            Part::Week => "WEEK",
            Part::Day => "DAY",
            Part::Weekday => "DOW",
            Part::Hour => "HOUR",
            Part::Minute => "MINUTE",
            Part::Second => "SECOND",
        };
        if self.fraction && self.part == Part::Second {
            return format!("EXTRACT(SECOND FROM {source})");
        }
        format!("floor(EXTRACT({part} FROM {source}))::int8")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::Param;

    fn render(e: &Expr) -> (String, Sql) {
        let mut sql = Sql::default();
        (e.render(&mut sql), sql)
    }

    #[test]
    fn columns_are_quoted_and_sql_is_written_as_it_is() {
        assert_eq!(render(&Expr::column("t0", "we\"ird")).0, "t0.\"we\"\"ird\"");
        assert_eq!(render(&Expr::Sql("t0.\"a\" || $1".into())).0, "t0.\"a\" || $1");
    }

    #[test]
    fn values_keep_their_reply_form_and_keys_join_their_columns() {
        let value = |field_type, cast, form| ValueOutput { column: Column::new("t0", "v"), field_type, cast, form }.expr();
        assert_eq!(value(FieldType::Integer, None, OutputForm::Items), Expr::column("t0", "v"), "an integer is written as stored");
        assert_eq!(render(&value(FieldType::BigInteger, None, OutputForm::Items)).0, "t0.\"v\"::text");
        assert_eq!(render(&value(FieldType::Integer, None, OutputForm::GraphQL { primary_key: true })).0, "(t0.\"v\")::text", "an ID");
        assert_eq!(render(&value(FieldType::Integer, Some(ValueCast::Conceal), OutputForm::GraphQL { primary_key: false })).0, "NULL");
        let key = |names: &[&str]| render(&Expr::Key(names.iter().map(|n| Column::new("t1", n)).collect())).0;
        assert_eq!((key(&[]), key(&["id"])), ("NULL".to_owned(), "t1.\"id\"".to_owned()));
        assert_eq!(key(&["a", "b"]), "concat_ws(',', t1.\"a\", t1.\"b\")");
    }

    #[test]
    fn aggregates_name_their_function_and_distinct_values() {
        let of = |function, distinct, column: Option<&str>| {
            render(&Expr::Aggregate(AggregateOf { function, distinct, column: column.map(|c| Column::new("t0", c)) })).0
        };
        assert_eq!(of(Aggregate::Count, false, None), "count(*)");
        assert_eq!(of(Aggregate::Count, true, Some("author")), "count(DISTINCT t0.\"author\")");
        assert_eq!(of(Aggregate::Avg, false, Some("rating")), "avg(t0.\"rating\")");
        assert_eq!(
            (of(Aggregate::Sum, true, Some("n")), of(Aggregate::Min, false, Some("n"))),
            ("sum(DISTINCT t0.\"n\")".to_owned(), "min(t0.\"n\")".to_owned())
        );
        assert_eq!(of(Aggregate::Max, false, Some("n")), "max(t0.\"n\")");
    }

    #[test]
    fn date_parts_are_whole_numbers_in_utc_but_a_written_second_keeps_its_fraction() {
        let part = |part, utc, fraction| Expr::DatePart(DatePart { column: Column::new("t0", "at"), part, utc, fraction });
        assert_eq!(render(&part(Part::Year, true, false)).0, "floor(EXTRACT(YEAR FROM (t0.\"at\" AT TIME ZONE 'UTC')))::int8");
        assert_eq!(render(&part(Part::Weekday, false, true)).0, "floor(EXTRACT(DOW FROM t0.\"at\"))::int8", "only seconds have a fraction");
        assert_eq!(render(&Expr::Text(Box::new(part(Part::Second, false, true)))).0, "(EXTRACT(SECOND FROM t0.\"at\"))::text");
    }

    #[test]
    fn counts_of_lists() {
        assert_eq!(render(&Expr::ArrayLength(Column::new("t0", "tags"))).0, "coalesce(cardinality(t0.\"tags\"), 0)::int8");
        let json = render(&Expr::JsonLength(Column::new("t0", "data"))).0;
        assert_eq!(json, "(CASE WHEN json_typeof(t0.\"data\"::json) = 'array' THEN json_array_length(t0.\"data\"::json) END)::int8");
    }

    #[test]
    fn a_related_count_binds_its_rows_where_it_is_rendered() {
        use crate::query::predicate::{Comparison, Operand, PermittedRows, Predicate, Test};
        let visible = Predicate::Compare(Comparison {
            target: Expr::column("p2", "status"),
            db_type: "text".into(),
            text_cast: false,
            test: Test::Equals(Operand::Text("published".into())),
        });
        let rows = Source::Permitted(Box::new(PermittedRows {
            table: "\"public\".\"articles\"".into(),
            alias: "p2".into(),
            rows: vec![Some(visible)],
            columns: None,
        }));
        let count =
            Expr::RelatedCount(Box::new(RelatedCount { rows, alias: "c1".into(), foreign_key: Column::new("c1", "author"), local: Column::new("t0", "id") }));
        let mut sql = Sql::default();
        let first = sql.param(Param::Text("before".into()));
        let text = count.render(&mut sql);
        assert_eq!(first, "$1");
        assert_eq!(
            text,
            "(SELECT count(*) FROM (SELECT * FROM \"public\".\"articles\" p2 WHERE (p2.\"status\" = CAST($2 AS text))) c1 WHERE c1.\"author\" = t0.\"id\")"
        );
        assert_eq!(sql.params, vec![Param::Text("before".into()), Param::Text("published".into())]);
    }
}
