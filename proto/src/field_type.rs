//! Directus's names of the field types ([`FieldType`], `schema.proto`): how they appear in
//! `/fields`, the OpenAPI document and error messages (Directus docs "Fields"; docs/data-model.md).

use crate::v1::FieldType;

impl FieldType {
    /// The Directus type name (`integer`, `bigInteger`, `dateTime`, `csv`, `alias`...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Integer => "integer",
            Self::BigInteger => "bigInteger",
            Self::Float => "float",
            Self::Decimal => "decimal",
            Self::String => "string",
            Self::Text => "text",
            Self::Boolean => "boolean",
            Self::Json => "json",
            Self::Uuid => "uuid",
            Self::Date => "date",
            Self::DateTime => "dateTime",
            Self::Timestamp => "timestamp",
            Self::Time => "time",
            Self::Binary => "binary",
            Self::Csv => "csv",
            Self::Hash => "hash",
            Self::Alias => "alias",
            Self::Unknown => "unknown",
        }
    }

    /// Text-like types: searched by `search`, compared with LIKE without a cast.
    pub fn is_textual(self) -> bool {
        matches!(self, Self::String | Self::Text)
    }

    /// Whole-number types (values are checked before they reach SQL).
    pub fn is_integer(self) -> bool {
        matches!(self, Self::Integer | Self::BigInteger)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_has_its_own_directus_name() {
        let names: std::collections::HashSet<&str> = (0..=17).filter_map(|i| FieldType::try_from(i).ok()).map(FieldType::as_str).collect();
        assert_eq!(names.len(), 18);
        assert_eq!(FieldType::DateTime.as_str(), "dateTime");
        assert_eq!(FieldType::BigInteger.as_str(), "bigInteger");
    }
}
