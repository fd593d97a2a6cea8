//! A finished run's timeline in Chrome's trace event format: the [`Span`]s each thread
//! recorded (`trace.rs`), as they come back in the [`RunReport`].

use std::fmt::Write as _;

use crate::report::RunReport;
use crate::trace::Span;

fn escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if c.is_control() => vec![' '],
            c => vec![c],
        })
        .collect()
}

/// The run's spans in Chrome's trace event format (JSON), one track per thread: open it at
/// <https://ui.perfetto.dev> or `chrome://tracing`.
pub fn chrome_trace(report: &RunReport) -> String {
    let mut threads: Vec<(String, &[Span])> =
        report.devices.iter().map(|d| (format!("device {}", d.device), d.spans.as_slice())).collect();
    threads.push(("writer".to_owned(), report.writer.spans.as_slice()));
    let mut out = String::from("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    let mut first = true;
    for (tid, (name, spans)) in threads.iter().enumerate() {
        if !first {
            out.push_str(",\n");
        }
        first = false;
        let _ = write!(
            out,
            "{{\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\"name\":\"thread_name\",\"args\":{{\"name\":\"{}\"}}}}",
            escape(name)
        );
        for s in spans.iter() {
            let _ = write!(
                out,
                ",\n{{\"ph\":\"X\",\"pid\":1,\"tid\":{tid},\"name\":\"{}\",\"ts\":{:.3},\"dur\":{:.3}}}",
                s.kind.name(),
                s.start.as_secs_f64() * 1e6,
                s.duration.as_secs_f64() * 1e6
            );
        }
    }
    out.push_str("\n]}\n");
    out
}
