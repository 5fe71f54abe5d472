//! The typed condition of a plan, the rows it reaches ([`Source`]), and their one renderer to
//! SQL.
//!
//! A statement's `WHERE` (the query's `filter` and `search`), a permission's row condition, a
//! validation rule's condition, an aggregate's `having` and the condition on items' keys are
//! planned into a [`Predicate`] ([`super::filter`], [`super::operators`], [`super::aggregate`],
//! [`super::keys`]): names, relations, operators, operand types and dynamic variables are
//! resolved and every mistake is refused there. [`Predicate::render`] then writes it as SQL,
//! binding each literal as a parameter of the statement ([`Sql`]) cast to the compared
//! expression's Postgres type. Planner tests assert on predicates; the tests here assert on
//! SQL.
//!
//! The rows a relational condition reaches are a typed [`Source`] ([`Exists::from`]: a table,
//! or the rows the caller may see, [`rows`]), and what a condition compares is a typed
//! [`Expr`] ([`expr`]: a column, a function of one, an aggregate of a group's rows); each is
//! rendered with the predicate.
//! Mutually recursive (a source's rows are limited by predicates, a related count reads a
//! source), they live in this one module. Literals are bound when a predicate is rendered.
//! The aliases, given out while planning, are that statement's: render a predicate into the
//! statement it was planned in only.

pub mod column;
pub mod expr;
pub mod joins;
pub mod rows;

pub use column::Column;
pub use expr::{Aggregate, AggregateOf, DatePart, Expr, Part, RelatedCount, ValueOutput};
pub use joins::{Join, Joins};
pub use rows::{ItemRows, PermittedColumn, PermittedRows, ReadableLink, ReadableList, RelatedKeys, Source, VersionColumn, VersionRows};

use crate::sql::{Param, Sql};
use query_language::operators::Order;

/// A boolean condition on the rows of one level of a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// `TRUE` or `FALSE`.
    Const(bool),
    /// Every part holds: `(a AND b)`; no part: `TRUE`.
    And(Vec<Predicate>),
    /// Some part holds: `(a OR b)`; no part: `FALSE`.
    Or(Vec<Predicate>),
    /// The part does not hold: `NOT (p)`.
    Not(Box<Predicate>),
    /// An expression compared by an operator.
    Compare(Comparison),
    /// Some related row matches: `EXISTS (SELECT 1 …)`.
    Exists(Box<Exists>),
    /// A many-to-any item is of collection `scope` and matches
    /// (`CASE WHEN … THEN EXISTS (…) ELSE FALSE END`).
    InScope(Box<InScope>),
}

/// An expression, its type and the test applied to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The expression compared: a column (`t0."title"`), a function of one, an aggregate.
    pub target: Expr,
    /// Its Postgres type (from the snapshot): what operands are cast to.
    pub db_type: String,
    /// Whether text tests (`Like`, `Matches`, `Empty`) read it as `target::text` (a column that
    /// is not text, or an enum).
    pub text_cast: bool,
    /// The test.
    pub test: Test,
}

/// What a [`Comparison`] tests (one SQL form per family of the operator catalog,
/// [`query_language::operators::Family`]; negation is [`Predicate::Not`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    /// `IS NULL`.
    IsNull,
    /// `= operand`.
    Equals(Operand),
    /// `<`, `<=`, `>`, `>=` the operand.
    Ordering(Order, Operand),
    /// `= ANY(CAST($n AS type[]))`: literals, bound as one array parameter however many.
    AnyOf(Vec<String>),
    /// `IN (a, b, …)`: a list holding a dynamic variable; never empty.
    In(Vec<Operand>),
    /// `BETWEEN low AND high`.
    Between(Operand, Operand),
    /// `LIKE` (`ILIKE`) on the text form.
    Like {
        /// The pattern.
        pattern: Pattern,
        /// `ILIKE`.
        case_insensitive: bool,
    },
    /// NULL, or (`textual`) also the empty text.
    Empty {
        /// Whether the empty text counts as empty (text fields).
        textual: bool,
    },
    /// POSIX regular expression (`~`, `~*`) on the text form.
    Matches {
        /// The expression, bound as a parameter.
        pattern: String,
        /// `~*`.
        case_insensitive: bool,
    },
}

/// A value compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A literal, bound as text and cast to the compared expression's type.
    Text(String),
    /// An integer bound as `int8`, uncast (`search` on integer fields).
    Integer(i64),
    /// The database's clock, `now()` plus an interval text (`$NOW(-1 year)`), cast to the
    /// compared expression's type. Makes the statement volatile (never cached).
    Now(Option<String>),
    /// A field of the caller's record (`$CURRENT_USER.org`), read inside the statement and
    /// cast to the type.
    Record(Box<RecordField>),
    /// NULL cast to the type: the field of a record the caller does not have (the public
    /// role's user).
    Null,
}

/// `(SELECT <value> FROM <rows> <alias><joins> WHERE <key_column> = CAST($n AS <key_type>))`:
/// one field of one record (the caller's user or role), through many-to-one paths
/// ([`crate::query::variables`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordField {
    /// The path's expression on the record's row.
    pub value: Expr,
    /// The record's collection as the planner sees it.
    pub rows: Source,
    /// The record's alias (`v1`).
    pub alias: String,
    /// The joins of the path's many-to-one hops.
    pub joins: Joins,
    /// The record's primary key column.
    pub key_column: Column,
    /// The record's key, bound as text…
    pub key: String,
    /// …and cast to the key's Postgres type.
    pub key_type: String,
}

/// A `LIKE` pattern.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// The pattern, `%` and `_` of the value already escaped, bound as a parameter.
    Literal(String),
    /// The text of a value read in the statement ([`Operand::Record`], [`Operand::Null`]),
    /// escaped in SQL, between `prefix` and `suffix` (each `%` or nothing).
    Value {
        /// `%` or nothing.
        prefix: &'static str,
        /// The value.
        value: Operand,
        /// `%` or nothing.
        suffix: &'static str,
    },
}

/// Related rows of which some must match.
#[derive(Debug, Clone, PartialEq)]
pub struct Exists {
    /// The related rows.
    pub from: Source,
    /// Their alias.
    pub alias: String,
    /// The related row's column joined…
    pub inner: Column,
    /// …to the outer row's column…
    pub outer: Column,
    /// …cast to this type first (a many-to-any key, stored as text).
    pub cast: Option<String>,
    /// What a related row must match.
    pub filter: Predicate,
}

/// A many-to-any item in collection `scope` that matches.
#[derive(Debug, Clone, PartialEq)]
pub struct InScope {
    /// The outer row's column naming the item's collection.
    pub collection_column: Column,
    /// The collection the item must be in.
    pub scope: String,
    /// The item's row, joined by its key.
    pub item: Exists,
}

impl Predicate {
    /// `NOT (self)`.
    pub fn negate(self) -> Self {
        Self::Not(Box::new(self))
    }

    /// The SQL of the predicate, its literals bound as parameters of `sql`.
    pub fn render(&self, sql: &mut Sql) -> String {
        match self {
            Self::Const(true) => "TRUE".into(),
            Self::Const(false) => "FALSE".into(),
            Self::And(parts) => group(parts, " AND ", "TRUE", sql),
            Self::Or(parts) => group(parts, " OR ", "FALSE", sql),
            Self::Not(p) => format!("NOT ({})", p.render(sql)),
            Self::Compare(c) => c.render(sql),
            Self::Exists(e) => e.render(sql),
            Self::InScope(s) => {
                let scope = sql.param(Param::Text(s.scope.clone()));
                // CASE keeps the key's cast from running on keys of other collections.
                format!("CASE WHEN {} = {scope} THEN {} ELSE FALSE END", s.collection_column.render(), s.item.render(sql))
            }
        }
    }
}

fn group(parts: &[Predicate], joiner: &str, empty: &str, sql: &mut Sql) -> String {
    if parts.is_empty() {
        return empty.to_owned();
    }
    let parts: Vec<String> = parts.iter().map(|p| p.render(sql)).collect();
    format!("({})", parts.join(joiner))
}

impl Exists {
    fn render(&self, sql: &mut Sql) -> String {
        let outer = match &self.cast {
            Some(db_type) => format!("CAST({} AS {db_type})", self.outer.render()),
            None => self.outer.render(),
        };
        let from = self.from.render(sql);
        let filter = self.filter.render(sql);
        format!("EXISTS (SELECT 1 FROM {from} {} WHERE {} = {outer} AND {filter})", self.alias, self.inner.render())
    }
}

impl Comparison {
    fn render(&self, sql: &mut Sql) -> String {
        let col = &self.target.render(sql);
        let as_text = || if self.text_cast { format!("{col}::text") } else { col.clone() };
        let operand = |o: &Operand, sql: &mut Sql| render_operand(o, &self.db_type, sql);
        match &self.test {
            Test::IsNull => format!("{col} IS NULL"),
            Test::Equals(o) => format!("{col} = {}", operand(o, sql)),
            Test::Ordering(order, o) => {
                let sym = match order {
                    Order::Less => "<",
                    Order::LessOrEqual => "<=",
                    Order::Greater => ">",
                    Order::GreaterOrEqual => ">=",
                };
                format!("{col} {sym} {}", operand(o, sql))
            }
            Test::AnyOf(texts) => {
                let p = sql.param(Param::TextArray(texts.clone()));
                format!("{col} = ANY(CAST({p} AS {}[]))", self.db_type)
            }
            Test::In(items) => {
                let items: Vec<String> = items.iter().map(|o| operand(o, sql)).collect();
                format!("{col} IN ({})", items.join(", "))
            }
            Test::Between(low, high) => {
                let (low, high) = (operand(low, sql), operand(high, sql));
                format!("{col} BETWEEN {low} AND {high}")
            }
            Test::Like { pattern, case_insensitive } => {
                let pattern = match pattern {
                    Pattern::Literal(text) => sql.param(Param::Text(text.clone())),
                    Pattern::Value { prefix, value, suffix } => {
                        let text = render_operand(value, "text", sql);
                        format!(r"('{prefix}' || replace(replace(replace({text}, '\', '\\'), '%', '\%'), '_', '\_') || '{suffix}')")
                    }
                };
                format!("{} {} {pattern}", as_text(), if *case_insensitive { "ILIKE" } else { "LIKE" })
            }
            Test::Empty { textual: true } => format!("({col} IS NULL OR {} = '')", as_text()),
            Test::Empty { textual: false } => format!("{col} IS NULL"),
            Test::Matches { pattern, case_insensitive } => {
                let p = sql.param(Param::Text(pattern.clone()));
                format!("{} {} {p}", as_text(), if *case_insensitive { "~*" } else { "~" })
            }
        }
    }
}

/// The SQL of an operand compared with an expression of type `db_type`.
fn render_operand(o: &Operand, db_type: &str, sql: &mut Sql) -> String {
    match o {
        Operand::Text(text) => sql.cast_param(text.clone(), db_type),
        Operand::Integer(n) => sql.param(Param::Int(*n)),
        Operand::Now(None) => {
            sql.volatile = true;
            format!("CAST(now() AS {db_type})")
        }
        Operand::Now(Some(interval)) => {
            sql.volatile = true;
            let p = sql.param(Param::Text(interval.clone()));
            format!("CAST(now() + CAST({p} AS interval) AS {db_type})")
        }
        Operand::Record(record) => format!("CAST({} AS {db_type})", record.render(sql)),
        Operand::Null => format!("CAST(NULL AS {db_type})"),
    }
}

impl RecordField {
    fn render(&self, sql: &mut Sql) -> String {
        let value = self.value.render(sql);
        let joins = self.joins.render(sql);
        let rows = self.rows.render(sql);
        let key = sql.cast_param(self.key.clone(), &self.key_type);
        format!("(SELECT {value} FROM {rows} {}{joins} WHERE {} = {key})", self.alias, self.key_column.render())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compare(text_cast: bool, test: Test) -> Predicate {
        Predicate::Compare(Comparison { target: Expr::column("t0", "f"), db_type: "integer".into(), text_cast, test })
    }

    fn render(p: &Predicate) -> (String, Sql) {
        let mut sql = Sql::default();
        let text = p.render(&mut sql);
        (text, sql)
    }

    #[test]
    fn groups_render_in_parentheses_and_empty_groups_as_constants() {
        let eq = |v: &str| compare(false, Test::Equals(Operand::Text(v.into())));
        let p = Predicate::Or(vec![eq("1"), Predicate::And(vec![compare(false, Test::IsNull), eq("5").negate()])]);
        let (text, sql) = render(&p);
        assert_eq!(text, "(t0.\"f\" = CAST($1 AS integer) OR (t0.\"f\" IS NULL AND NOT (t0.\"f\" = CAST($2 AS integer))))");
        assert_eq!(sql.params, vec![Param::Text("1".into()), Param::Text("5".into())]);
        assert_eq!(render(&Predicate::And(vec![])).0, "TRUE");
        assert_eq!(render(&Predicate::Or(vec![])).0, "FALSE");
        assert_eq!(render(&Predicate::Const(false).negate()).0, "NOT (FALSE)");
    }

    #[test]
    fn each_test_has_its_form() {
        let one = |o: &str| Operand::Text(o.into());
        let cases = [
            (compare(false, Test::Ordering(Order::GreaterOrEqual, one("3"))), "t0.\"f\" >= CAST($1 AS integer)"),
            (compare(false, Test::AnyOf(vec!["1".into(), "2".into()])), "t0.\"f\" = ANY(CAST($1 AS integer[]))"),
            (compare(false, Test::In(vec![one("1"), Operand::Null])), "t0.\"f\" IN (CAST($1 AS integer), CAST(NULL AS integer))"),
            (compare(false, Test::Between(one("1"), one("9"))), "t0.\"f\" BETWEEN CAST($1 AS integer) AND CAST($2 AS integer)"),
            (compare(true, Test::Like { pattern: Pattern::Literal("4%".into()), case_insensitive: false }), "t0.\"f\"::text LIKE $1"),
            (compare(false, Test::Like { pattern: Pattern::Literal("a%".into()), case_insensitive: true }), "t0.\"f\" ILIKE $1"),
            (compare(true, Test::Empty { textual: true }), "(t0.\"f\" IS NULL OR t0.\"f\"::text = '')"),
            (compare(false, Test::Empty { textual: false }), "t0.\"f\" IS NULL"),
            (compare(false, Test::Matches { pattern: "^a".into(), case_insensitive: true }), "t0.\"f\" ~* $1"),
            (compare(false, Test::Equals(Operand::Integer(7))), "t0.\"f\" = $1"),
        ];
        for (p, want) in cases {
            assert_eq!(render(&p).0, want);
        }
        let org = RecordField {
            value: Expr::column("v1", "org"),
            rows: Source::Table("\"cdapi\".\"users\"".into()),
            alias: "v1".into(),
            joins: Joins::default(),
            key_column: Column::new("v1", "id"),
            key: "u1".into(),
            key_type: "uuid".into(),
        };
        let like = Test::Like { pattern: Pattern::Value { prefix: "%", value: Operand::Record(Box::new(org)), suffix: "" }, case_insensitive: false };
        let (text, sql) = render(&compare(false, like));
        let record = "(SELECT v1.\"org\" FROM \"cdapi\".\"users\" v1 WHERE v1.\"id\" = CAST($1 AS uuid))";
        assert_eq!(text, format!(r#"t0."f" LIKE ('%' || replace(replace(replace(CAST({record} AS text), '\', '\\'), '%', '\%'), '_', '\_') || '')"#));
        assert_eq!(sql.params, vec![Param::Text("u1".into())], "the record's key is bound where the pattern is rendered");
    }

    #[test]
    fn the_clock_makes_a_statement_volatile() {
        let (text, sql) = render(&compare(false, Test::Equals(Operand::Text("1".into()))));
        assert_eq!(text, "t0.\"f\" = CAST($1 AS integer)");
        assert!(!sql.volatile);
        let (text, sql) = render(&compare(false, Test::Ordering(Order::Less, Operand::Now(Some("-1 years".into())))));
        assert_eq!(text, "t0.\"f\" < CAST(now() + CAST($1 AS interval) AS integer)");
        assert!(sql.volatile);
        assert_eq!(sql.params, vec![Param::Text("-1 years".into())]);
    }

    #[test]
    fn related_rows_are_an_exists_and_a_many_to_any_item_checks_its_collection_first() {
        let item = Exists {
            from: Source::Table("\"public\".\"headings\"".into()),
            alias: "t1".into(),
            inner: Column::new("t1", "id"),
            outer: Column::new("t0", "item"),
            cast: Some("integer".into()),
            filter: Predicate::Const(true),
        };
        let exists = "EXISTS (SELECT 1 FROM \"public\".\"headings\" t1 WHERE t1.\"id\" = CAST(t0.\"item\" AS integer) AND TRUE)";
        assert_eq!(render(&Predicate::Exists(Box::new(item.clone()))).0, exists);
        let scoped = Predicate::InScope(Box::new(InScope { collection_column: Column::new("t0", "collection"), scope: "headings".into(), item }));
        let (text, sql) = render(&scoped);
        assert_eq!(text, format!("CASE WHEN t0.\"collection\" = $1 THEN {exists} ELSE FALSE END"));
        assert_eq!(sql.params, vec![Param::Text("headings".into())]);
    }
}
