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
//! or the rows the caller may see), rendered with the predicate. Two parts stay SQL text,
//! written by the planner as it resolves them, with their parameters already bound in the same
//! statement: a function of a column or an aggregate compared ([`Comparison::target`],
//! [`super::expr::Expr::Sql`]) and a field of the caller's record ([`Operand::Expr`]). Their `$n` belong to the
//! statement the predicate was planned in: render a predicate into that statement's [`Sql`]
//! only.

use super::expr::{Column, Expr};
use crate::sql::{Param, Sql, column, ident};
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
    /// A scalar SQL expression (a field of the caller's record), cast to the type.
    Expr(String),
}

/// A `LIKE` pattern.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// The pattern, `%` and `_` of the value already escaped, bound as a parameter.
    Literal(String),
    /// The text of an expression, escaped in SQL, between `prefix` and `suffix` (each `%` or
    /// nothing).
    Expr {
        /// `%` or nothing.
        prefix: &'static str,
        /// The scalar expression.
        expr: String,
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
        let col = &self.target.render();
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
                    Pattern::Expr { prefix, expr, suffix } => {
                        format!(r"('{prefix}' || replace(replace(replace(CAST({expr} AS text), '\', '\\'), '%', '\%'), '_', '\_') || '{suffix}')")
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
        Operand::Expr(expr) => format!("CAST({expr} AS {db_type})"),
    }
}

/// The rows of one collection a statement reads, as a FROM item.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Every row: the table's quoted, schema-qualified name (admin access, or read permission
    /// rows without item filter or field limits).
    Table(String),
    /// The rows the caller's read permission rows let them see.
    Permitted(Box<PermittedRows>),
    /// A FROM item already written as SQL text, its parameters bound in the statement it was
    /// planned in ([`super::version_rows`]).
    Sql(String),
}

/// `(SELECT … FROM table p WHERE <some row's filter matches>)`, where every field only some
/// permission rows grant reads `CASE WHEN <one of those rows' filters> THEN p.field END`
/// (Directus docs "Permissions": the union of a role's policies). Postgres flattens it into
/// the surrounding query.
#[derive(Debug, Clone, PartialEq)]
pub struct PermittedRows {
    /// The table's quoted, schema-qualified name.
    pub table: String,
    /// The alias the permission filters are written against (`p1`).
    pub alias: String,
    /// Each read permission row's item filter, compiled against the whole snapshot (it may name
    /// fields the caller cannot read); `None`: every row.
    pub rows: Vec<Option<Predicate>>,
    /// Every stored field, in the snapshot's order, when some field is granted by only some
    /// rows; `None` when every row grants every readable field (`SELECT *`).
    pub columns: Option<Vec<PermittedColumn>>,
}

/// A stored field of [`PermittedRows`] and which permission rows grant it.
#[derive(Debug, Clone, PartialEq)]
pub struct PermittedColumn {
    /// The field's (column's) name.
    pub name: String,
    /// Indexes into [`PermittedRows::rows`] of the rows granting it; `None`: every row, the
    /// value is read as stored.
    pub granted_by: Option<Vec<usize>>,
}

impl Source {
    /// The SQL of the FROM item (to be followed by its alias), the permission filters'
    /// literals bound as parameters of `sql`.
    pub fn render(&self, sql: &mut Sql) -> String {
        match self {
            Self::Table(text) | Self::Sql(text) => text.clone(),
            Self::Permitted(rows) => rows.render(sql),
        }
    }
}

impl PermittedRows {
    fn render(&self, sql: &mut Sql) -> String {
        // Each row's filter is written once; the conditions of masked fields reuse its text.
        let conditions: Vec<Option<String>> = self.rows.iter().map(|p| p.as_ref().map(|p| p.render(sql))).collect();
        // Some of the rows matches: `None` when one of them has no filter (every row).
        let any = |rows: &mut dyn Iterator<Item = usize>| -> Option<String> {
            let mut parts = Vec::new();
            for i in rows {
                parts.push(conditions.get(i)?.clone()?);
            }
            Some(if parts.is_empty() { "FALSE".to_owned() } else { format!("({})", parts.join(" OR ")) })
        };
        let alias = &self.alias;
        let visible = any(&mut (0..conditions.len())).map(|c| format!(" WHERE {c}")).unwrap_or_default();
        let Some(columns) = &self.columns else { return format!("(SELECT * FROM {} {alias}{visible})", self.table) };
        let columns: Vec<String> = columns
            .iter()
            .map(|c| {
                let value = column(alias, &c.name);
                match c.granted_by.as_ref().and_then(|rows| any(&mut rows.iter().copied())) {
                    Some(granted) => format!("CASE WHEN {granted} THEN {value} END AS {}", ident(&c.name)),
                    None => value,
                }
            })
            .collect();
        format!("(SELECT {} FROM {} {alias}{visible})", columns.join(", "), self.table)
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
            (compare(false, Test::In(vec![one("1"), Operand::Expr("(SELECT 2)".into())])), "t0.\"f\" IN (CAST($1 AS integer), CAST((SELECT 2) AS integer))"),
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
        let like = compare(false, Test::Like { pattern: Pattern::Expr { prefix: "%", expr: "(SELECT v)".into(), suffix: "" }, case_insensitive: false });
        let (text, sql) = render(&like);
        assert!(text.starts_with("t0.\"f\" LIKE ('%' || replace(replace(replace(CAST((SELECT v) AS text)"), "{text}");
        assert!(sql.params.is_empty(), "an expression's pattern binds nothing");
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

    #[test]
    fn a_filtered_row_limits_the_rows_and_its_text_is_written_once_per_use() {
        let title = |v: &str| {
            Some(Predicate::Compare(Comparison {
                target: Expr::column("p1", "title"),
                db_type: "text".into(),
                text_cast: false,
                test: Test::Equals(Operand::Text(v.into())),
            }))
        };
        let mut rows = PermittedRows { table: "\"public\".\"articles\"".into(), alias: "p1".into(), rows: vec![title("a"), title("b")], columns: None };
        let mut sql = Sql::default();
        assert_eq!(
            Source::Permitted(Box::new(rows.clone())).render(&mut sql),
            "(SELECT * FROM \"public\".\"articles\" p1 WHERE (p1.\"title\" = CAST($1 AS text) OR p1.\"title\" = CAST($2 AS text)))"
        );
        rows.rows.push(None);
        rows.columns = Some(vec![
            PermittedColumn { name: "id".into(), granted_by: None },
            PermittedColumn { name: "title".into(), granted_by: Some(vec![1]) },
            PermittedColumn { name: "author".into(), granted_by: Some(vec![]) },
        ]);
        let mut sql = Sql::default();
        assert_eq!(
            Source::Permitted(Box::new(rows)).render(&mut sql),
            "(SELECT p1.\"id\", CASE WHEN (p1.\"title\" = CAST($2 AS text)) THEN p1.\"title\" END AS \"title\", \
             CASE WHEN FALSE THEN p1.\"author\" END AS \"author\" FROM \"public\".\"articles\" p1)",
            "an unfiltered row shows every row; a masked field reuses its rows' bound filters"
        );
        assert_eq!(sql.params.len(), 2);
    }

    #[test]
    fn a_source_of_sql_text_is_written_as_it_is() {
        let mut sql = Sql::default();
        assert_eq!(Source::Sql("(SELECT 1)".into()).render(&mut sql), "(SELECT 1)");
        assert!(sql.params.is_empty());
    }
}
