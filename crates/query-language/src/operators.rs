//! The operator catalog: one row per filter operator ([`Operator`], `query.proto`) saying its
//! name, its family (which fixes its operand's shape), what it negates, the field types it is
//! refused on and where it may be used. Everything else is derived from it: the names the
//! parsers read ([`from_name`]), the SQL forms of the core's filter compiler (one per family),
//! which operators a validation rule lets through on a missing value ([`OperatorInfo::negates`]),
//! the GraphQL filter inputs (per family), the OpenAPI `filter` description and the operator
//! table of docs/query-language.md (checked against [`markdown_table`] by a test).
//!
//! Adding an operator: its enum value in `query.proto`, its row in [`CATALOG`], and its SQL in
//! the core's filter compiler when its family is new (docs/architecture.md "Adding a filter
//! operator"). Semantics follow Directus's "Filter Rules" documentation.

use cdapi_proto::v1::{FieldType, Operator};

/// Where a text operator looks for its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// Anywhere in the value (`_contains`).
    Anywhere,
    /// At its start (`_starts_with`).
    Start,
    /// At its end (`_ends_with`).
    End,
}

/// How an ordering operator compares the value with its operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The value is less than the operand.
    Less,
    /// Less than or equal.
    LessOrEqual,
    /// Greater than.
    Greater,
    /// Greater than or equal.
    GreaterOrEqual,
}

/// An operator's family: its operand's shape and its SQL form. The GraphQL filter inputs list
/// operators family by family, so a new operator of an existing family appears in every input
/// that takes the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Equal to one value of the field's type; `null` means "is null" (`_eq`, `_neq`).
    Equality,
    /// Ordered against one value (`_lt`, `_lte`, `_gt`, `_gte`).
    Ordering(Order),
    /// A text found in the value's text (LIKE), anchored, optionally ignoring case.
    Text {
        /// Where the text must be.
        anchor: Anchor,
        /// ILIKE rather than LIKE.
        case_insensitive: bool,
    },
    /// One of a list of values: a JSON array or a comma-separated string (`_in`, `_nin`).
    Membership,
    /// Between two values, both included: a list of exactly two (`_between`, `_nbetween`).
    Range,
    /// Is null, given `true` (`_null`, `_nnull`).
    Null,
    /// Is null or the empty text, given `true` (`_empty`, `_nempty`).
    Empty,
    /// Intersects a GeoJSON geometry or its bounding box (geometry fields only).
    Geometry,
    /// Matches a regular expression, bare or as `/pattern/flags` (`i` ignores case).
    Pattern,
}

impl Family {
    /// Whether the operator only asks if a value is there (`_null`, `_empty`...): the only ones
    /// a concealed field takes (Directus's `conceal` special).
    pub fn is_presence(self) -> bool {
        matches!(self, Self::Null | Self::Empty)
    }

    /// The operand as the docs describe it.
    pub fn operand(self) -> &'static str {
        match self {
            Self::Equality | Self::Ordering(_) => "a value of the field's type",
            Self::Text { .. } => "a text",
            Self::Membership => "a list (array or comma-separated)",
            Self::Range => "a list of two values",
            Self::Null | Self::Empty => "`true` or `false`",
            Self::Geometry => "a GeoJSON geometry",
            Self::Pattern => "a regular expression",
        }
    }
}

/// Where an operator may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Read filters, `deep`, `having`, permission rules and validation rules.
    Everywhere,
    /// Validation rules only (Directus evaluates `_regex` on payloads, never in a query: a
    /// pattern from a caller would be a cost the query budgets do not bound).
    Validation,
}

/// One row of the catalog.
#[derive(Debug, Clone, Copy)]
pub struct OperatorInfo {
    /// The operator.
    pub operator: Operator,
    /// Its name in filter documents (`_eq`).
    pub name: &'static str,
    /// Its family: operand shape and SQL form.
    pub family: Family,
    /// The operator whose result this one negates (`_neq` → `_eq`). In a validation rule a
    /// negated operator holds for a missing value ("not equal to x" is true of nothing), as in
    /// Directus.
    pub negates: Option<Operator>,
    /// Field types the operator is refused on (INVALID_QUERY naming the type).
    pub refused_on: &'static [FieldType],
    /// Where it may be used.
    pub scope: Scope,
    /// One line for the docs and the OpenAPI document.
    pub summary: &'static str,
}

/// json has no equality or order in Postgres.
const NOT_JSON: &[FieldType] = &[FieldType::Json];
/// ... and arrays (csv) compare as whole arrays, so a list of candidates makes no sense.
const NOT_JSON_CSV: &[FieldType] = &[FieldType::Json, FieldType::Csv];

const fn row(operator: Operator, name: &'static str, family: Family, negates: Option<Operator>, summary: &'static str) -> OperatorInfo {
    let refused_on = match family {
        Family::Equality | Family::Ordering(_) | Family::Range => NOT_JSON,
        Family::Membership => NOT_JSON_CSV,
        _ => &[],
    };
    OperatorInfo { operator, name, family, negates, refused_on, scope: Scope::Everywhere, summary }
}

const fn text(anchor: Anchor, case_insensitive: bool) -> Family {
    Family::Text { anchor, case_insensitive }
}

use Anchor::{Anywhere, End, Start};
use Operator as O;

/// Every operator, family by family, each family in the order GraphQL filter inputs list it.
pub const CATALOG: &[OperatorInfo] = &[
    row(O::Eq, "_eq", Family::Equality, None, "Equals"),
    row(O::Neq, "_neq", Family::Equality, Some(O::Eq), "Doesn't equal"),
    row(O::Lt, "_lt", Family::Ordering(Order::Less), None, "Less than"),
    row(O::Lte, "_lte", Family::Ordering(Order::LessOrEqual), None, "Less than or equal to"),
    row(O::Gt, "_gt", Family::Ordering(Order::Greater), None, "Greater than"),
    row(O::Gte, "_gte", Family::Ordering(Order::GreaterOrEqual), None, "Greater than or equal to"),
    row(O::Contains, "_contains", text(Anywhere, false), None, "Contains the text"),
    row(O::Icontains, "_icontains", text(Anywhere, true), None, "Contains the text, ignoring case"),
    row(O::Ncontains, "_ncontains", text(Anywhere, false), Some(O::Contains), "Doesn't contain the text"),
    row(O::Nicontains, "_nicontains", text(Anywhere, true), Some(O::Icontains), "Doesn't contain the text, ignoring case"),
    row(O::StartsWith, "_starts_with", text(Start, false), None, "Starts with"),
    row(O::IstartsWith, "_istarts_with", text(Start, true), None, "Starts with, ignoring case"),
    row(O::NstartsWith, "_nstarts_with", text(Start, false), Some(O::StartsWith), "Doesn't start with"),
    row(O::NistartsWith, "_nistarts_with", text(Start, true), Some(O::IstartsWith), "Doesn't start with, ignoring case"),
    row(O::EndsWith, "_ends_with", text(End, false), None, "Ends with"),
    row(O::IendsWith, "_iends_with", text(End, true), None, "Ends with, ignoring case"),
    row(O::NendsWith, "_nends_with", text(End, false), Some(O::EndsWith), "Doesn't end with"),
    row(O::NiendsWith, "_niends_with", text(End, true), Some(O::IendsWith), "Doesn't end with, ignoring case"),
    row(O::In, "_in", Family::Membership, None, "Is one of"),
    row(O::Nin, "_nin", Family::Membership, Some(O::In), "Is none of"),
    row(O::Between, "_between", Family::Range, None, "Is between the two values (inclusive)"),
    row(O::Nbetween, "_nbetween", Family::Range, Some(O::Between), "Is not between the two values"),
    row(O::Null, "_null", Family::Null, None, "Is null"),
    row(O::Nnull, "_nnull", Family::Null, Some(O::Null), "Isn't null"),
    row(O::Empty, "_empty", Family::Empty, None, "Is null or empty"),
    row(O::Nempty, "_nempty", Family::Empty, Some(O::Empty), "Is neither null nor empty"),
    row(O::Intersects, "_intersects", Family::Geometry, None, "Intersects the geometry"),
    row(O::Nintersects, "_nintersects", Family::Geometry, Some(O::Intersects), "Doesn't intersect the geometry"),
    row(O::IntersectsBbox, "_intersects_bbox", Family::Geometry, None, "Intersects the geometry's bounding box"),
    row(O::NintersectsBbox, "_nintersects_bbox", Family::Geometry, Some(O::IntersectsBbox), "Doesn't intersect the bounding box"),
    OperatorInfo {
        operator: O::Regex,
        name: "_regex",
        family: Family::Pattern,
        negates: None,
        refused_on: &[],
        scope: Scope::Validation,
        summary: "Matches the regular expression (validation rules only)",
    },
];

/// The row of `op`; `None` for [`Operator::Unspecified`] only (a test checks every other value
/// has exactly one row).
pub fn info(op: Operator) -> Option<&'static OperatorInfo> {
    CATALOG.iter().find(|r| r.operator == op)
}

/// `_eq` → [`Operator::Eq`]. `None` for names that are not comparison operators (including
/// `_and`, `_or`, `_some`, `_none`).
pub fn from_name(name: &str) -> Option<Operator> {
    CATALOG.iter().find(|r| r.name == name).map(|r| r.operator)
}

/// The name of `op` in filter documents (`_eq`); `"(none)"` for [`Operator::Unspecified`].
pub fn name(op: Operator) -> &'static str {
    info(op).map_or("(none)", |r| r.name)
}

/// The operators of a scope, by name, comma-separated (the OpenAPI `filter` description).
pub fn names_in(scope: Scope) -> String {
    CATALOG.iter().filter(|r| r.scope == scope).map(|r| r.name).collect::<Vec<_>>().join(", ")
}

/// The catalog as the Markdown table of docs/query-language.md.
pub fn markdown_table() -> String {
    let mut out = String::from("| Operator | Meaning | Operand | Negates | Refused on | Where |\n|---|---|---|---|---|---|\n");
    for r in CATALOG {
        let negates = r.negates.map_or(String::new(), |o| format!("`{}`", name(o)));
        let refused = r.refused_on.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ");
        let scope = match r.scope {
            Scope::Everywhere => "filters, rules",
            Scope::Validation => "validation rules",
        };
        out.push_str(&format!("| `{}` | {} | {} | {negates} | {refused} | {scope} |\n", r.name, r.summary, r.family.operand()));
    }
    out
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn every_operator_has_exactly_one_row() {
        let mut values = 0;
        for value in 0..=i32::from(u8::MAX) {
            let Ok(op) = Operator::try_from(value) else { continue };
            values += 1;
            let rows = CATALOG.iter().filter(|r| r.operator == op).count();
            assert_eq!(rows, usize::from(op != Operator::Unspecified), "{op:?}");
        }
        assert_eq!(values, CATALOG.len() + 1);
    }

    #[test]
    fn names_are_the_protobuf_names_and_unique() {
        for r in CATALOG {
            let upper = r.operator.as_str_name().trim_start_matches("OPERATOR_");
            assert_eq!(r.name, format!("_{}", upper.to_ascii_lowercase()));
            assert_eq!(from_name(r.name), Some(r.operator));
        }
        for not_one in ["_some", "_none", "_and", "_EQ", "eq", ""] {
            assert_eq!(from_name(not_one), None, "{not_one}");
        }
    }

    /// docs/query-language.md carries [`markdown_table`] between its `operator-catalog` markers.
    #[test]
    fn the_docs_table_is_the_catalog() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/query-language.md");
        let doc = std::fs::read_to_string(&path).expect("docs/query-language.md");
        let (start, end) = ("<!-- operator-catalog:start -->\n", "<!-- operator-catalog:end -->");
        let from = doc.find(start).expect("start marker") + start.len();
        let to = doc.find(end).expect("end marker");
        let table = markdown_table();
        if doc.get(from..to) != Some(table.as_str()) {
            if std::env::var_os("CDAPI_UPDATE_DOCS").is_some() {
                std::fs::write(&path, format!("{}{table}{}", &doc[..from], &doc[to..])).expect("rewrite the docs");
            } else {
                panic!("docs/query-language.md's operator table is not the catalog's (CDAPI_UPDATE_DOCS=1 rewrites it):\n{table}");
            }
        }
    }

    #[test]
    fn a_negation_is_of_its_own_family_and_named_with_n() {
        for r in CATALOG {
            if let Some(positive) = r.negates {
                let p = info(positive).expect("row");
                assert_eq!(p.family, r.family, "{}", r.name);
                assert_eq!(p.negates, None, "{}", r.name);
                assert_eq!(r.name.replacen("_n", "_", 1), p.name);
            } else {
                assert!(!r.name.starts_with("_n") || r.name == "_null", "{} negates nothing", r.name);
            }
        }
    }
}
