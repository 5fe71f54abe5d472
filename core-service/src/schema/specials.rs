//! Directus's field `meta.special` values that change what is stored or served (docs/history.md
//! "Automatic field values"): [`AutoValue`] (set by the server on writes) and [`ValueCast`]
//! (values shaped on reads and writes). Read from `cdapi.fields` with every snapshot
//! (`system_tables::metadata::special_fields`).

/// A value the server sets on a field on every write, whatever the payload says (Directus's
/// `meta.special`; docs/history.md "Automatic field values").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoValue {
    /// `date-created`: the time of the create.
    DateCreated,
    /// `date-updated`: the time of each update.
    DateUpdated,
    /// `user-created`: the creating user (null for the public).
    UserCreated,
    /// `user-updated`: the updating user.
    UserUpdated,
    /// `role-created`: the creating user's role.
    RoleCreated,
    /// `role-updated`: the updating user's role.
    RoleUpdated,
    /// `uuid`: a random UUID (v4) on create when the payload has none.
    Uuid,
}

impl AutoValue {
    /// The value of a `meta.special` entry, if it is one of these.
    pub fn from_special(special: &str) -> Option<Self> {
        Some(match special {
            "date-created" => Self::DateCreated,
            "date-updated" => Self::DateUpdated,
            "user-created" => Self::UserCreated,
            "user-updated" => Self::UserUpdated,
            "role-created" => Self::RoleCreated,
            "role-updated" => Self::RoleUpdated,
            "uuid" => Self::Uuid,
            _ => return None,
        })
    }

    /// Whether it is set on creates (else on updates).
    pub fn on_create(self) -> bool {
        matches!(self, Self::DateCreated | Self::UserCreated | Self::RoleCreated | Self::Uuid)
    }
}

/// How a field's values are shaped (Directus's `meta.special`, checked against 11.3.5's
/// `PayloadService` transformers): on reads by the query engine
/// (`crate::query::values::cast_output`), on writes by `crate::write::auto_values`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueCast {
    /// `conceal`: read as `"**********"` (null or empty as null); written as sent. Filters may
    /// only ask whether it is null or empty.
    Conceal,
    /// `cast-json`: text read as the JSON it holds (kept as text when it holds none); objects
    /// and arrays written as their JSON text.
    Json,
    /// `cast-csv`: text read as the list of its comma-separated parts (`""` as `[]`); a list
    /// written as its parts joined by commas.
    Csv,
    /// `cast-boolean`: `1`/`"1"` read as `true`, `0`/`"0"` as `false`, `""` as null.
    Boolean,
}

impl ValueCast {
    /// The value of a `meta.special` entry, if it is one of these.
    pub fn from_special(special: &str) -> Option<Self> {
        Some(match special {
            "conceal" => Self::Conceal,
            "cast-json" => Self::Json,
            "cast-csv" => Self::Csv,
            "cast-boolean" => Self::Boolean,
            _ => return None,
        })
    }
}
