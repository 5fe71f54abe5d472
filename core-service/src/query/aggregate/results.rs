//! What an aggregate read computes per group: each requested function over a field (the
//! aggregate, its result's type and output form), and `having` over those results
//! ([`super::AggregatePlan`]; the result types are the parent module's docs).

use crate::query::Planner;
use crate::query::operators::Target;
use crate::query::predicate::{Aggregate, AggregateOf, Column, Expr, Predicate};
use crate::schema::{Field, FieldType};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{AggregateFunction, FieldFunction, Filter, Operator, filter};
use std::collections::HashMap;

/// An aggregate result `having` can compare: the aggregate, the type its operands are cast to
/// and checked as.
pub(super) struct HavingTarget {
    /// The aggregate.
    pub expr: Expr,
    /// Its Postgres type.
    pub db_type: String,
    /// The field type its operands are checked as.
    pub field_type: FieldType,
}

/// The field type of an aggregate's result: its own for min/max, else by the result's SQL type.
pub(super) fn result_type(db_type: &str, field: &Field) -> FieldType {
    match db_type {
        "bigint" => FieldType::BigInteger,
        "numeric" => FieldType::Decimal,
        "double precision" => FieldType::Float,
        _ => field.field_type,
    }
}

/// How an aggregate's result is written (see the parent module's docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum ResultForm {
    /// As text (`int8` and `numeric` results).
    Text,
    /// A timestamp or date in ISO form ([`crate::query::values::iso_datetime`]).
    Iso(FieldType),
    /// As it is.
    AsIs,
}

/// An aggregate's result as the reply writes it.
pub(super) fn result_output(aggregate: &AggregateOf, form: ResultForm) -> String {
    let raw = aggregate.render();
    match form {
        ResultForm::Text => format!("{raw}::text"),
        ResultForm::Iso(t) => crate::query::values::iso_datetime(t, &raw).unwrap_or(raw),
        ResultForm::AsIs => raw,
    }
}

impl Planner<'_> {
    /// Plans `having` over the aggregate results in `targets` (keys `count`,
    /// `<function>.<field>`); `prefix` joins nested keys (`{"sum": {"amount": ...}}`). An empty
    /// group holds (`_or: []` too).
    pub(super) fn having(&mut self, f: &Filter, prefix: &str, targets: &HashMap<String, HavingTarget>) -> Result<Predicate, ApiError> {
        let key = |name: &str| if prefix.is_empty() { name.to_owned() } else { format!("{prefix}.{name}") };
        match &f.node {
            None => Ok(Predicate::Const(true)),
            Some(filter::Node::And(g)) | Some(filter::Node::Or(g)) => {
                let parts = g.filters.iter().map(|c| self.having(c, prefix, targets)).collect::<Result<Vec<_>, _>>()?;
                Ok(match (parts.is_empty(), &f.node) {
                    (true, _) => Predicate::Const(true),
                    (false, Some(filter::Node::And(_))) => Predicate::And(parts),
                    (false, _) => Predicate::Or(parts),
                })
            }
            Some(filter::Node::Relation(r)) => match &r.filter {
                Some(inner) => self.having(inner, &key(&r.field), targets),
                None => Ok(Predicate::Const(true)),
            },
            Some(filter::Node::Condition(c)) => {
                let name = if c.function() == FieldFunction::Unspecified { key(&c.field) } else { String::new() };
                let t = targets.get(&name).ok_or_else(|| {
                    ApiError::invalid_query(format!("\"having\" can only use requested aggregates (count, <function>.<field>); \"{name}\" is not one"))
                })?;
                let op = Operator::try_from(c.operator).unwrap_or(Operator::Unspecified);
                // The filters' own operator table, on the aggregate's expression.
                let target = Target { expr: t.expr.clone(), field_type: t.field_type, db_type: t.db_type.clone(), is_enum: false, name };
                self.compare(&target, op, c.value.as_ref())
            }
        }
    }
}

/// The key a function's results appear under (Directus's names).
pub(super) fn function_key(f: AggregateFunction) -> Result<&'static str, ApiError> {
    Ok(match f {
        AggregateFunction::Count => "count",
        AggregateFunction::CountDistinct => "countDistinct",
        AggregateFunction::Sum => "sum",
        AggregateFunction::SumDistinct => "sumDistinct",
        AggregateFunction::Avg => "avg",
        AggregateFunction::AvgDistinct => "avgDistinct",
        AggregateFunction::Min => "min",
        AggregateFunction::Max => "max",
        AggregateFunction::CountAll => "countAll",
        AggregateFunction::Unspecified => return Err(ApiError::invalid_query("An aggregate call has no function")),
    })
}

/// One aggregate over one field: (its output form, the aggregate, its Postgres type). Sums and
/// averages need a numeric field. `int8` and `numeric` results are output as text, timestamps
/// as ISO text (see the parent module's docs).
pub(super) fn aggregate_expr(f: AggregateFunction, field: &Field, alias: &str) -> Result<(ResultForm, AggregateOf, String), ApiError> {
    if field.is_alias() {
        return Err(ApiError::invalid_query(format!("\"{}\" is a one-to-many field; aggregate over the related collection instead", field.name)));
    }
    let float = field.field_type == FieldType::Float;
    let numeric = float || matches!(field.field_type, FieldType::Integer | FieldType::BigInteger | FieldType::Decimal);
    let need_numeric = || {
        if numeric {
            Ok(())
        } else {
            Err(ApiError::invalid_query(format!("\"{}\" of type {} cannot be summed or averaged", field.name, field.field_type.as_str())))
        }
    };
    let distinct = matches!(f, AggregateFunction::CountDistinct | AggregateFunction::SumDistinct | AggregateFunction::AvgDistinct);
    // (function, its result's type, whether the output is its text)
    let (function, db_type, text) = match f {
        AggregateFunction::Count | AggregateFunction::CountDistinct => (Aggregate::Count, "bigint".to_owned(), true),
        AggregateFunction::Sum | AggregateFunction::SumDistinct => {
            need_numeric()?;
            // sum(int2/int4) is int8, sum(int8/numeric) numeric, sum(float) float.
            (Aggregate::Sum, "numeric".to_owned(), !float)
        }
        AggregateFunction::Avg | AggregateFunction::AvgDistinct => {
            need_numeric()?;
            // avg of integers and numeric is numeric, of floats float8.
            (Aggregate::Avg, "numeric".to_owned(), !float)
        }
        AggregateFunction::Min | AggregateFunction::Max => {
            if matches!(field.field_type, FieldType::Json | FieldType::Csv | FieldType::Unknown | FieldType::Binary | FieldType::Boolean) {
                return Err(ApiError::invalid_query(format!("\"{}\" of type {} has no minimum or maximum", field.name, field.field_type.as_str())));
            }
            let function = if f == AggregateFunction::Min { Aggregate::Min } else { Aggregate::Max };
            (function, field.db_type.clone(), matches!(field.field_type, FieldType::BigInteger | FieldType::Decimal))
        }
        AggregateFunction::CountAll | AggregateFunction::Unspecified => {
            return Err(ApiError::invalid_query("countAll takes no field"));
        }
    };
    let aggregate = AggregateOf { function, distinct, column: Some(Column::new(alias, &field.name)) };
    let dated = matches!(field.field_type, FieldType::Timestamp | FieldType::DateTime | FieldType::Date);
    let form = match function {
        Aggregate::Min | Aggregate::Max if dated => ResultForm::Iso(field.field_type),
        _ if text => ResultForm::Text,
        _ => ResultForm::AsIs,
    };
    Ok((form, aggregate, db_type))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::test_schema::blog;
    use cdapi_proto::ErrorCode;

    fn field(collection: &str, name: &str) -> Result<Field, ApiError> {
        let schema = blog();
        let c = schema.collection(collection).ok_or_else(ApiError::internal)?;
        c.field(name).cloned().ok_or_else(ApiError::internal)
    }

    #[test]
    fn each_function_has_its_result_type_and_form() -> Result<(), ApiError> {
        let id = field("articles", "id")?;
        let (form, aggregate, db_type) = aggregate_expr(AggregateFunction::CountDistinct, &id, "t0")?;
        assert_eq!((form, aggregate.distinct, db_type.as_str()), (ResultForm::Text, true, "bigint"), "a count is an int8: text");
        assert_eq!(result_output(&aggregate, form), "count(DISTINCT t0.\"id\")::text");
        assert_eq!(result_type(&db_type, &id), FieldType::BigInteger);
        let (form, aggregate, db_type) = aggregate_expr(AggregateFunction::Avg, &id, "t0")?;
        assert_eq!((form, aggregate.function, result_type(&db_type, &id)), (ResultForm::Text, Aggregate::Avg, FieldType::Decimal));
        let (form, _, db_type) = aggregate_expr(AggregateFunction::Min, &id, "t0")?;
        assert_eq!((form, result_type(&db_type, &id)), (ResultForm::AsIs, FieldType::Integer), "min of an int4 is an int4");
        Ok(())
    }

    #[test]
    fn functions_that_do_not_apply_are_refused() -> Result<(), ApiError> {
        let title = field("articles", "title")?;
        let articles = field("authors", "articles")?;
        let code = |f, field: &Field| aggregate_expr(f, field, "t0").err().map(|e| e.code);
        assert_eq!(code(AggregateFunction::Sum, &title), Some(ErrorCode::InvalidQuery), "a text sum");
        assert_eq!(code(AggregateFunction::Count, &articles), Some(ErrorCode::InvalidQuery), "a to-many field");
        assert_eq!(code(AggregateFunction::CountAll, &title), Some(ErrorCode::InvalidQuery), "countAll takes no field");
        assert_eq!(code(AggregateFunction::Max, &title), None, "text has a maximum");
        assert_eq!(function_key(AggregateFunction::Unspecified).err().map(|e| e.code), Some(ErrorCode::InvalidQuery));
        Ok(())
    }
}
