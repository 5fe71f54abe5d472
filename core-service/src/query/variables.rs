//! Dynamic variables in filter values (Directus docs "Filter Rules"):
//! - `$NOW`, `$NOW(-1 year)` (units ms s m h d w mo y or their long forms, default days): the
//!   database's `now()`, adjusted;
//! - `$CURRENT_USER`, `$CURRENT_ROLE`: the caller's ids (a nil UUID for the public role, which
//!   matches nothing);
//! - `$CURRENT_USER.<path>`, `$CURRENT_ROLE.<path>`: a field of the caller's user or role
//!   record, through M2O relations too (`$CURRENT_USER.role.name`), read inside the statement
//!   as a scalar subquery; NULL for the public role, so such a rule matches nothing. In a
//!   permission rule (written by an admin, compiled over the whole snapshot) the path may name
//!   any field; in a query's own filter it is read through the caller's permissions, like any
//!   other path (stricter than Directus, which resolves it with full access: otherwise a filter
//!   such as `_starts_with: $CURRENT_USER.org.secret` would read fields the caller may not);
//! - `$CURRENT_ROLES`: the caller's role and the roles above it (none for the public);
//! - `$CURRENT_POLICIES`: the policies that apply to the request (the public's for the public).
//!
//! Every form works inside lists (`_in`, `_nin`, `_between`, `_nbetween`) too. Any other text
//! starting with `$` is a plain value, as in Directus (`$t:public_label`, a policy's name).

use super::Planner;
use super::predicate::{Column, Joins, Operand, RecordField};
use cdapi_proto::ApiError;

/// A dynamic variable's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// One operand: an id, the clock, a field of the caller's record.
    One(Operand),
    /// Several values (`$CURRENT_ROLES`, `$CURRENT_POLICIES`): only inside lists.
    Many(Vec<String>),
}

/// Whether `var` (the text after `$`) names a dynamic variable: `NOW`, `NOW(...)`,
/// `CURRENT_USER`, `CURRENT_ROLE` (and their `.<path>` forms), `CURRENT_ROLES`,
/// `CURRENT_POLICIES`. Anything else is a plain value.
pub fn is_variable(var: &str) -> bool {
    let head = var.split(['.', '(']).next().unwrap_or_default();
    match head {
        "NOW" => var == "NOW" || var.starts_with("NOW("),
        "CURRENT_USER" | "CURRENT_ROLE" => true,
        "CURRENT_ROLES" | "CURRENT_POLICIES" => !var.contains(['.', '(']),
        _ => false,
    }
}

impl Planner<'_> {
    /// Resolves a dynamic variable (the text after `$`). Errors: INVALID_QUERY for an unknown
    /// variable or a path that does not fit; FORBIDDEN for an unknown field in a path.
    pub fn variable(&mut self, var: &str) -> Result<Resolved, ApiError> {
        if var == "NOW" {
            return Ok(Resolved::One(Operand::Now(None)));
        }
        if let Some(args) = var.strip_prefix("NOW(").and_then(|a| a.strip_suffix(')')) {
            return Ok(Resolved::One(Operand::Now(Some(interval(args)?))));
        }
        self.names_caller = true;
        let id = |v: &Option<String>| Resolved::One(Operand::Text(v.clone().unwrap_or_else(|| "00000000-0000-0000-0000-000000000000".into())));
        match var {
            "CURRENT_USER" => Ok(id(&self.vars.user)),
            "CURRENT_ROLE" => Ok(id(&self.vars.role)),
            "CURRENT_ROLES" => Ok(Resolved::Many(self.vars.roles.clone())),
            "CURRENT_POLICIES" => Ok(Resolved::Many(self.vars.policies.clone())),
            v => {
                if let Some(path) = v.strip_prefix("CURRENT_USER.") {
                    let user = self.vars.user.clone();
                    return self.record_field("directus_users", user, path).map(Resolved::One);
                }
                if let Some(path) = v.strip_prefix("CURRENT_ROLE.") {
                    let role = self.vars.role.clone();
                    return self.record_field("directus_roles", role, path).map(Resolved::One);
                }
                Err(ApiError::invalid_query(format!("Unknown dynamic variable \"${v}\"")))
            }
        }
    }

    /// `(SELECT <path> FROM <collection> WHERE id = <key>)` through the schema being planned
    /// against (the whole snapshot for permission rules, the caller's view for their filters);
    /// `NULL` without a key (the public role). FORBIDDEN for what that schema does not show.
    fn record_field(&mut self, collection: &str, key: Option<String>, path: &str) -> Result<Operand, ApiError> {
        let Some(key) = key else { return Ok(Operand::Null) };
        let record = self.collection(collection)?;
        let pk = record
            .primary_key
            .first()
            .and_then(|k| record.field(k))
            .ok_or_else(|| ApiError::internal_because(format!("\"{collection}\" has no primary key field")))?;
        let alias = self.sql.next_alias('v');
        let mut joins = Joins::default();
        // The path is part of a filter value (`$CURRENT_USER.role.name`): parsed by the one
        // path grammar.
        let path = query_language::paths::parse(path)?;
        let value = self.path_expr(record, &alias, &path, &mut joins, "compare with")?;
        let rows = self.source(record)?;
        let key_column = Column::new(&alias, &pk.name);
        Ok(Operand::Record(Box::new(RecordField { value, rows, alias, joins, key_column, key, key_type: pk.db_type.clone() })))
    }
}

/// `-1 year` / `+2 hours` / `3` (days) → a Postgres interval text (units as in Directus docs "Filter Rules").
pub fn interval(args: &str) -> Result<String, ApiError> {
    let bad = || ApiError::invalid_query(format!("\"$NOW({args})\" is not a valid adjustment, e.g. $NOW(-1 year)"));
    let s = args.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    let (num, unit) = (s[..split].trim().replace(' ', ""), s[split..].trim());
    let amount: f64 = num.parse().map_err(|_| bad())?;
    let unit = match unit {
        "" | "d" | "day" | "days" => "days",
        "ms" | "millisecond" | "milliseconds" => "milliseconds",
        "s" | "sec" | "secs" | "second" | "seconds" => "seconds",
        "m" | "min" | "mins" | "minute" | "minutes" => "minutes",
        "h" | "hr" | "hrs" | "hour" | "hours" => "hours",
        "w" | "week" | "weeks" => "weeks",
        "mo" | "month" | "months" => "months",
        "y" | "yr" | "yrs" | "year" | "years" => "years",
        _ => return Err(bad()),
    };
    Ok(format!("{amount} {unit}"))
}

#[cfg(test)]
mod tests {
    use super::interval;

    #[test]
    fn now_adjustments_become_intervals() {
        assert_eq!(interval("-1 year").as_deref(), Ok("-1 years"));
        assert_eq!(interval("+2 hours").as_deref(), Ok("2 hours"));
        assert_eq!(interval("3").as_deref(), Ok("3 days"));
        assert_eq!(interval("-90mo").as_deref(), Ok("-90 months"));
        assert!(interval("soon").is_err());
        assert!(interval("1 fortnight").is_err());
    }
}
