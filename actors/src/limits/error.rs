//! Reports why a set of limits was refused, naming the field, its value and the bound.
//! Invariant: every variant names exactly one offending field, returned by `LimitsError::field`.
//! Invariant: values are those of `Limits::get` (counts as is, durations in milliseconds rounded up).

use thiserror::Error;

use super::LimitField;

/// Why [`Limits::validate`](super::Limits::validate) or
/// [`Limits::check_lowering`](super::Limits::check_lowering) refused a set of limits.
///
/// Values and bounds are as reported by [`Limits::get`](super::Limits::get); messages
/// add an ` ms` suffix to duration values.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LimitsError {
    /// The field is zero, which is meaningless for every limit.
    #[error("limit {field} must not be zero")]
    Zero {
        /// The zero field.
        field: LimitField,
    },
    /// The field is above its absolute ceiling ([`Limits::CEILING`](super::Limits::CEILING)).
    #[error("limit {field} = {value}{unit} exceeds its ceiling {ceiling}{unit}", unit = unit(field))]
    AboveCeiling {
        /// The field above its ceiling.
        field: LimitField,
        /// Its value.
        value: u64,
        /// Its absolute ceiling.
        ceiling: u64,
    },
    /// The field is larger than another limit that bounds it.
    #[error(
        "limit {field} = {value}{unit} must not exceed {bound_field} = {bound}{unit}",
        unit = unit(field)
    )]
    Relation {
        /// The field that is too large.
        field: LimitField,
        /// Its value.
        value: u64,
        /// The field that bounds it.
        bound_field: LimitField,
        /// The value of the bounding field.
        bound: u64,
    },
    /// The field would be raised: `lower_limits` never raises a limit above
    /// the one in force, nor an own running ceiling above the startup share.
    #[error("cannot raise {field} from {bound}{unit} to {value}{unit}", unit = unit(field))]
    Raised {
        /// The raised field.
        field: LimitField,
        /// The requested (higher) value.
        value: u64,
        /// The value it may not exceed: the limit in force for
        /// `lower_limits`, the startup limit for an own running ceiling.
        bound: u64,
    },
    /// Lowering the limits would change a field that is fixed for the registry generation.
    #[error("{field} is fixed for the registry generation")]
    Fixed {
        /// The fixed field that was changed.
        field: LimitField,
    },
}

impl LimitsError {
    /// The offending field: the zero, too large, raised or changed one.
    pub fn field(&self) -> LimitField {
        match self {
            Self::Zero { field }
            | Self::AboveCeiling { field, .. }
            | Self::Relation { field, .. }
            | Self::Raised { field, .. }
            | Self::Fixed { field } => *field,
        }
    }
}

/// The unit suffix printed after a value of `field` (relations only pair like units).
fn unit(field: &LimitField) -> &'static str {
    if field.is_duration() {
        " ms"
    } else {
        ""
    }
}
