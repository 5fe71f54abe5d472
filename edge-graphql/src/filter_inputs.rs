//! The operator inputs of GraphQL filters (`string_filter_operators`, `id_filter_operators`...,
//! Directus's names), derived from the operator catalog ([`query_language::operators`]): each input
//! lists the catalog's operators of the families it takes, family by family, in catalog order.
//! A new operator of an existing family appears in every input taking the family; a new family
//! must be placed here (the compiler points at [`kind`]).

use async_graphql::dynamic::{InputObject, InputValue, TypeRef};
use query_language::operators::{CATALOG, Family, Scope};

/// The families an input can take (the catalog's [`Family`] without its parameters).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Equality,
    Ordering,
    Text,
    Membership,
    Range,
    Null,
    Empty,
}

/// The kind of a family; `None` for families no GraphQL input takes (geometry: no geometry
/// type is served; patterns: validation rules only).
fn kind(family: Family) -> Option<Kind> {
    match family {
        Family::Equality => Some(Kind::Equality),
        Family::Ordering(_) => Some(Kind::Ordering),
        Family::Text { .. } => Some(Kind::Text),
        Family::Membership => Some(Kind::Membership),
        Family::Range => Some(Kind::Range),
        Family::Null => Some(Kind::Null),
        Family::Empty => Some(Kind::Empty),
        Family::Geometry | Family::Pattern => None,
    }
}

/// One operator input: its name, the GraphQL types of its operands and its families in order.
struct Input {
    name: &'static str,
    /// Type of a single value (`_eq`, `_lt`).
    scalar: &'static str,
    /// Type of the items of a list (`_in`).
    list: &'static str,
    /// Type of the two values of a range (`_between`).
    range: &'static str,
    kinds: &'static [Kind],
}

const STRING: &str = TypeRef::STRING;
const COMPARED: &[Kind] = &[Kind::Equality, Kind::Ordering, Kind::Membership, Kind::Range, Kind::Null];

/// Directus's operator inputs, each with the families it takes.
const INPUTS: &[Input] = &[
    Input {
        name: "string_filter_operators",
        scalar: STRING,
        list: STRING,
        range: STRING,
        kinds: &[Kind::Equality, Kind::Text, Kind::Membership, Kind::Null, Kind::Empty],
    },
    Input { name: "number_filter_operators", scalar: "GraphQLStringOrFloat", list: "GraphQLStringOrFloat", range: "GraphQLStringOrFloat", kinds: COMPARED },
    Input { name: "big_int_filter_operators", scalar: "GraphQLBigInt", list: "GraphQLBigInt", range: "GraphQLBigInt", kinds: COMPARED },
    Input { name: "date_filter_operators", scalar: STRING, list: STRING, range: "GraphQLStringOrFloat", kinds: COMPARED },
    Input { name: "boolean_filter_operators", scalar: TypeRef::BOOLEAN, list: TypeRef::BOOLEAN, range: TypeRef::BOOLEAN, kinds: &[Kind::Equality, Kind::Null] },
    Input {
        name: "id_filter_operators",
        scalar: TypeRef::ID,
        list: TypeRef::ID,
        range: TypeRef::ID,
        kinds: &[Kind::Equality, Kind::Text, Kind::Membership, Kind::Null, Kind::Empty, Kind::Ordering, Kind::Range],
    },
    Input { name: "hash_filter_operators", scalar: STRING, list: STRING, range: STRING, kinds: &[Kind::Null, Kind::Empty] },
];

/// The operator inputs, ready to register.
pub fn all() -> Vec<InputObject> {
    INPUTS.iter().map(input).collect()
}

fn input(spec: &Input) -> InputObject {
    let mut object = InputObject::new(spec.name);
    for wanted in spec.kinds {
        for row in CATALOG.iter().filter(|r| r.scope == Scope::Everywhere && kind(r.family) == Some(*wanted)) {
            let ty = match wanted {
                Kind::Equality | Kind::Ordering => TypeRef::named(spec.scalar),
                Kind::Text => TypeRef::named(STRING),
                Kind::Membership => TypeRef::named_list(spec.list),
                Kind::Range => TypeRef::named_list(spec.range),
                Kind::Null | Kind::Empty => TypeRef::named(TypeRef::BOOLEAN),
            };
            object = object.field(InputValue::new(row.name, ty));
        }
    }
    object
}
