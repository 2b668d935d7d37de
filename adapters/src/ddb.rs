//! DynamoDB outcomes as the ports see them: a failed condition is an answer
//! ("not applied"), anything else a storage failure with its context.

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use hookgate_core::ports::StoreError;

/// A storage error of any DynamoDB operation, with its context.
pub(crate) fn unavailable<E, R>(e: SdkError<E, R>) -> StoreError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    StoreError::Unavailable(DisplayErrorContext(e).to_string())
}

/// Whether `e` is DynamoDB refusing a write because its condition failed.
pub(crate) fn is_condition_failure<E: ProvideErrorMetadata, R>(e: &SdkError<E, R>) -> bool {
    matches!(e, SdkError::ServiceError(ctx) if ctx.err().code() == Some("ConditionalCheckFailedException"))
}

/// A conditional write's result: `true` applied, `false` condition failed.
pub(crate) fn applied<O, E, R>(result: Result<O, SdkError<E, R>>) -> Result<bool, StoreError>
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match result {
        Ok(_) => Ok(true),
        Err(e) if is_condition_failure(&e) => Ok(false),
        Err(e) => Err(unavailable(e)),
    }
}

/// A fresh token naming one write (128 random bits, hex): stored with the
/// item, it lets the SDK's retry of a committed conditional write recognise
/// the item as its own (the condition then fails against it).
pub(crate) fn write_token() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}
