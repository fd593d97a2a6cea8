//! Median and spread of repeated measurements: on a shared machine one run proves nothing,
//! so every figure is a median over alternating repetitions, with its min and max.

use serde_json::{Value, json};

/// Summary of repeated measurements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    /// Summarises `xs` (NaNs sorted last); all zeros when `xs` is empty.
    pub fn of(xs: &[f64]) -> Summary {
        if xs.is_empty() {
            return Summary { median: 0.0, min: 0.0, max: 0.0 };
        }
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        Summary { median, min: v[0], max: v[n - 1] }
    }

    /// `{median, min, max, samples}` for the JSON report.
    pub fn json(xs: &[f64]) -> Value {
        let s = Summary::of(xs);
        json!({ "median": s.median, "min": s.min, "max": s.max, "samples": xs })
    }

    /// `median [min–max]` for the tables.
    pub fn text(&self, precision: usize) -> String {
        format!("{:.p$} [{:.p$}–{:.p$}]", self.median, self.min, self.max, p = precision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(Summary::of(&[3.0, 1.0, 2.0]), Summary { median: 2.0, min: 1.0, max: 3.0 });
        assert_eq!(Summary::of(&[4.0, 1.0, 2.0, 3.0]).median, 2.5);
        assert_eq!(Summary::of(&[]).median, 0.0);
    }
}
