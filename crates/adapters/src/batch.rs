//! The answer of an SQS-fed handler under `ReportBatchItemFailures`: the ids
//! of the messages that must come back; the event source deletes the rest.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse};

/// A batch response reporting `failed` message ids.
pub fn failures(failed: impl IntoIterator<Item = String>) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failed
        .into_iter()
        .map(|id| {
            // Non-exhaustive upstream: built by field.
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            failure
        })
        .collect();
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_exactly_the_failed_ids() {
        let response = failures(["m-2".to_owned(), "m-5".to_owned()]);
        let ids: Vec<&str> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        assert_eq!(ids, ["m-2", "m-5"]);
        assert!(failures([]).batch_item_failures.is_empty());
    }
}
