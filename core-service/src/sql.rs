//! The one place where SQL text is assembled: identifier quoting and bound parameters.
//! Every identifier reaching SQL comes from the schema snapshot and passes through [`ident`];
//! every value is a parameter (`$n`), bound as text (or text[]) and cast to the column's type.

/// Quotes an identifier for Postgres (`"a""b"`). The only identifier quoting in the service.
pub fn ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// A bound value.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// Bound as `text`; SQL casts it to the target type.
    Text(String),
    /// Bound as `text[]`.
    TextArray(Vec<String>),
    /// Bound as `int8` (limits and offsets).
    Int(i64),
}

/// A statement under construction: SQL text plus its parameters in `$n` order.
#[derive(Debug, Default)]
pub struct Sql {
    /// The SQL text.
    pub text: String,
    /// Parameters; `params[i]` is `$(i+1)`.
    pub params: Vec<Param>,
    /// The collections whose rows the statement reads (each once, in the order first read):
    /// what a cached result of it depends on (see [`crate::cache`]).
    pub reads: Vec<String>,
    /// Whether the result depends on more than the rows read (the clock: `$NOW`), so it is
    /// never cached.
    pub volatile: bool,
    alias_counter: usize,
}

impl Sql {
    /// Adds a parameter and returns its placeholder (`$3`).
    pub fn param(&mut self, p: Param) -> String {
        self.params.push(p);
        format!("${}", self.params.len())
    }

    /// `CAST($n AS <db_type>)` for a text value. `db_type` comes from the snapshot
    /// (`format_type()` output, already valid SQL).
    pub fn cast_param(&mut self, value: String, db_type: &str) -> String {
        let p = self.param(Param::Text(value));
        format!("CAST({p} AS {db_type})")
    }

    /// Notes that the statement reads rows of `collection`.
    pub fn reads(&mut self, collection: &str) {
        if !self.reads.iter().any(|c| c == collection) {
            self.reads.push(collection.to_owned());
        }
    }

    /// Whether nothing has been written, bound or aliased yet (what was planned so far can be
    /// rendered into any statement).
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.params.is_empty() && self.reads.is_empty() && self.alias_counter == 0
    }

    /// A fresh table alias (`t1`, `t2`, ...); `t0` is the root.
    pub fn next_alias(&mut self, prefix: char) -> String {
        self.alias_counter += 1;
        format!("{prefix}{}", self.alias_counter)
    }

    /// Binds the parameters to a sqlx query over this statement's text.
    pub fn query(&self) -> sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments> {
        // Safe: identifiers are quoted by `ident` and every value is a bound parameter.
        let mut q = sqlx::query(sqlx::AssertSqlSafe(self.text.as_str()));
        for p in &self.params {
            q = match p {
                Param::Text(s) => q.bind(s.as_str()),
                Param::TextArray(v) => q.bind(v.as_slice()),
                Param::Int(i) => q.bind(*i),
            };
        }
        q
    }
}

impl Sql {
    /// The statement with every parameter written in as a literal, for tools (`core-service
    /// sql`, pgbench comparisons); never used to run requests.
    pub fn inline(&self) -> String {
        let literal = |p: &Param| match p {
            Param::Text(s) => format!("'{}'::text", s.replace('\'', "''")),
            Param::TextArray(v) => {
                let items: Vec<String> = v.iter().map(|s| format!("'{}'", s.replace('\'', "''"))).collect();
                format!("ARRAY[{}]::text[]", items.join(", "))
            }
            Param::Int(i) => format!("{i}::int8"),
        };
        let mut out = String::with_capacity(self.text.len());
        let mut chars = self.text.char_indices().peekable();
        while let Some((_, c)) = chars.next() {
            if c == '$' && chars.peek().is_some_and(|(_, d)| d.is_ascii_digit()) {
                let mut n = 0usize;
                while let Some((_, d)) = chars.peek().copied().filter(|(_, d)| d.is_ascii_digit()) {
                    n = n * 10 + (d as usize - '0' as usize);
                    chars.next();
                }
                match n.checked_sub(1).and_then(|i| self.params.get(i)) {
                    Some(p) => out.push_str(&literal(p)),
                    None => out.push_str(&format!("${n}")),
                }
            } else {
                out.push(c);
            }
        }
        out
    }
}

/// `"schema"."table"`.
pub fn table(db_schema: &str, collection: &str) -> String {
    format!("{}.{}", ident(db_schema), ident(collection))
}

/// `alias."column"`.
pub fn column(alias: &str, name: &str) -> String {
    format!("{alias}.{}", ident(name))
}

/// Escapes LIKE metacharacters (`\`, `%`, `_`) so a value matches literally
/// (docs/directus-compatibility.md "Differences kept on purpose": `_contains` with `%` or `_`).
pub fn escape_like(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_and_inner_quotes_doubled() {
        assert_eq!(ident("film"), "\"film\"");
        assert_eq!(ident("we\"ird"), "\"we\"\"ird\"");
        assert_eq!(table("public", "bıgınt"), "\"public\".\"bıgınt\"");
    }

    #[test]
    fn params_are_numbered_in_order() {
        let mut sql = Sql::default();
        assert_eq!(sql.param(Param::Int(1)), "$1");
        assert_eq!(sql.cast_param("5".into(), "integer"), "CAST($2 AS integer)");
        assert_eq!(sql.params.len(), 2);
    }

    #[test]
    fn inline_writes_literals_for_placeholders() {
        let mut sql = Sql::default();
        let a = sql.cast_param("it's".into(), "text");
        for i in 0..9 {
            sql.param(Param::Int(i));
        }
        let b = sql.param(Param::TextArray(vec!["x".into(), "y".into()]));
        sql.text = format!("SELECT {a}, {b}, $2");
        assert_eq!(sql.inline(), "SELECT CAST('it''s'::text AS text), ARRAY['x', 'y']::text[], 0::int8");
    }

    #[test]
    fn like_metacharacters_are_escaped() {
        assert_eq!(escape_like("50%_a\\b"), "50\\%\\_a\\\\b");
    }
}
