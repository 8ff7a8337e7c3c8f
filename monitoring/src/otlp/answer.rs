//! What a collector says of an export it took (a 2xx): OTLP's partial
//! success, the data points or spans it rejected and why. The export is
//! not sent again (the specification forbids it), but what was rejected
//! is lost, so it is counted and told like a lost export.

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceResponse;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use prost::Message;

use super::settings::Signal;

/// What a collector rejected of an export it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// Data points (metrics) or spans (traces).
    pub items: u64,
    /// The line that tells it: how many, and the collector's reason.
    pub why: String,
}

/// What `answer`, the body of a collector's 2xx to a `signal` export,
/// says was rejected; `None` when nothing was. An empty body is a whole
/// success; a body that does not decode says nothing we can read, and
/// the export was taken. A partial success rejecting nothing carries a
/// warning only, and is not told.
pub fn rejected(signal: Signal, answer: &[u8]) -> Option<Rejected> {
    let (items, message, what) = match signal {
        Signal::Metrics => {
            let partial = ExportMetricsServiceResponse::decode(answer)
                .ok()?
                .partial_success?;
            (
                partial.rejected_data_points,
                partial.error_message,
                "data points",
            )
        }
        Signal::Traces => {
            let partial = ExportTraceServiceResponse::decode(answer)
                .ok()?
                .partial_success?;
            (partial.rejected_spans, partial.error_message, "spans")
        }
    };
    // An int64 on the wire: a negative count is a collector's bug, read
    // as nothing rejected.
    let items = u64::try_from(items).ok().filter(|&n| n > 0)?;
    let reason = if message.is_empty() {
        "no reason given".to_owned()
    } else {
        // The collector's text, kept to one line of readable length.
        message
            .chars()
            .take(300)
            .filter(|c| !c.is_control())
            .collect()
    };
    Some(Rejected {
        items,
        why: format!("the collector rejected {items} {what} of the export: {reason}"),
    })
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsPartialSuccess;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTracePartialSuccess;

    use super::*;

    fn metrics_answer(rejected: i64, message: &str) -> Vec<u8> {
        ExportMetricsServiceResponse {
            partial_success: Some(ExportMetricsPartialSuccess {
                rejected_data_points: rejected,
                error_message: message.into(),
            }),
        }
        .encode_to_vec()
    }

    #[test]
    fn a_partial_success_names_what_was_rejected_and_why() {
        let answer = metrics_answer(3, "unit\n\"bytes\" unknown");
        assert_eq!(
            rejected(Signal::Metrics, &answer),
            Some(Rejected {
                items: 3,
                why: "the collector rejected 3 data points of the export: unit\"bytes\" unknown"
                    .into()
            })
        );
        let answer = ExportTraceServiceResponse {
            partial_success: Some(ExportTracePartialSuccess {
                rejected_spans: 2,
                error_message: String::new(),
            }),
        }
        .encode_to_vec();
        assert_eq!(
            rejected(Signal::Traces, &answer).map(|r| r.why),
            Some("the collector rejected 2 spans of the export: no reason given".into())
        );
    }

    #[test]
    fn a_whole_success_a_warning_and_an_unreadable_answer_reject_nothing() {
        for answer in [
            Vec::new(),
            ExportMetricsServiceResponse::default().encode_to_vec(),
            metrics_answer(0, "a suggestion"),
            metrics_answer(-4, "a collector's bug"),
            b"{\"partialSuccess\":{}}".to_vec(),
        ] {
            assert_eq!(rejected(Signal::Metrics, &answer), None, "{answer:?}");
        }
    }
}
