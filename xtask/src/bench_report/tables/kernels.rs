//! The renderers of `bench kernel`: the shipped kernels against their variants, candidates'
//! rates, and the roofline.

use anyhow::{Context, Result};
use serde_json::Value;

use super::super::json::{BenchJson, Summary};
use super::{Headline, Rendered, figure, region, table};

/// What each kept variant of the kernel bench is, for the at-a-glance table.
const VARIANTS: [(&str, &str); 6] = [
    ("baseline", "the `%`-wrapped shader it replaced"),
    ("one-cell", "one cell per invocation (the 3-D shader it replaced)"),
    ("other-width", "the cells per invocation the adapter did not get"),
    ("other-shapes", "the workgroup shapes the adapter did not get"),
    ("row-of-8", "a row of 8 cells per invocation (before the brick)"),
    ("scalar-brick", "the brick's scalar loads (before its vec4 rows)"),
];

/// The cases of a kernel report.
fn cases(f: &BenchJson) -> Result<&Vec<Value>> {
    f.get("kernel.cases")?.as_array().context("kernel.cases is no list")
}

/// A case's grid as the page writes it: `1024²`, `64³`, or `70x64`.
fn grid(case: &Value) -> String {
    let shape: Vec<u64> =
        case.get("grid").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_u64).collect();
    match shape.as_slice() {
        [a, b] if a == b => format!("{a}²"),
        [a, b, c] if a == b && b == c => format!("{a}³"),
        _ => shape.iter().rev().map(u64::to_string).collect::<Vec<_>>().join("x"),
    }
}

/// A case's kernel name and grid.
fn case_name(case: &Value) -> String {
    format!("{} {}", case.get("kernel").and_then(Value::as_str).unwrap_or("?"), grid(case))
}

/// The variant labels of `cases` other than the shipped one, in the order they appear.
fn labels(cases: &[Value], candidates: bool) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for case in cases {
        for label in case.get("variants").and_then(Value::as_object).into_iter().flat_map(|v| v.keys()) {
            let wanted = label != "current" && label.starts_with("candidate") == candidates;
            if wanted && !labels.contains(label) {
                labels.push(label.clone());
            }
        }
    }
    labels
}

/// The unit the rates of `cases` read best in: (divisor, name).
fn rate_unit(cases: &[Value]) -> (f64, &'static str) {
    let fastest = cases
        .iter()
        .filter_map(|c| c.pointer("/variants/current/cell_steps_per_s/median").and_then(Value::as_f64))
        .fold(0.0, f64::max);
    if fastest >= 1e10 { (1e9, "Gcell-steps/s") } else { (1e6, "Mcell-steps/s") }
}

/// The summary at JSON pointer `pointer` of `v`.
fn summary_at(v: &Value, pointer: &str) -> Option<Summary> {
    v.pointer(pointer).and_then(Summary::of)
}

/// `kernel`: every case's shipped rate and its speedup over each kept variant, bit for bit
/// checked; `glance` names the variants whose speedups the at-a-glance table repeats.
pub fn kernel(f: &BenchJson, glance: Option<&str>) -> Result<Rendered> {
    let cases = cases(f)?;
    let labels = labels(cases, false);
    let (unit, unit_name) = rate_unit(cases);
    let mut header = vec!["kernel, grid".to_owned(), format!("shipped, {unit_name}"), "effective GB/s".to_owned()];
    header.extend(labels.iter().map(|l| format!("/ {l}")));
    let (mut rows, mut differing) = (Vec::new(), Vec::new());
    for case in cases {
        let rate = summary_at(case, "/variants/current/cell_steps_per_s").context("no shipped rate")?;
        let gbps = summary_at(case, "/variants/current/effective_gb_per_s").context("no shipped GB/s")?;
        let mut row = vec![case_name(case), figure(rate.scaled(1.0 / unit)), figure(gbps)];
        for label in &labels {
            let key = label.replace('-', "_");
            row.push(summary_at(case, &format!("/speedup_over_{key}")).map_or("—".to_owned(), |s| s.text(2)));
            if let Some(check) = case.get(format!("check_{key}")).and_then(Value::as_str)
                && check != "bit-identical"
            {
                differing.push(format!("{} {label}: {check}", case_name(case)));
            }
        }
        rows.push(row);
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let checks = if differing.is_empty() {
        "Every variant ended in the shipped kernel's bits.".to_owned()
    } else {
        format!("Bits differed: {}.", differing.join("; "))
    };
    let body = format!(
        "{}\nEach `/ variant` column is that variant's time over the shipped kernel's, per repetition (above 1: \
         the shipped kernel is faster), median [min–max] of {}. {checks}\n",
        table(&header, rows),
        f.num("kernel.reps")?
    );
    let headlines = glance
        .into_iter()
        .flat_map(|g| g.split(','))
        .map(|label| speedup_headline(f, cases, label))
        .collect::<Result<_>>()?;
    Ok(region(std::slice::from_ref(f), body, headlines))
}

/// The at-a-glance row of the shipped kernels' speedup over `label`: per kernel, the one
/// case's figure or the range of the cases' medians.
fn speedup_headline(f: &BenchJson, cases: &[Value], label: &str) -> Result<Headline> {
    let key = format!("/speedup_over_{}", label.replace('-', "_"));
    let mut kernels: Vec<(&str, Vec<(String, Summary)>)> = Vec::new();
    for case in cases {
        let Some(s) = summary_at(case, &key) else { continue };
        let kernel = case.get("kernel").and_then(Value::as_str).unwrap_or("?");
        match kernels.iter_mut().find(|(k, _)| *k == kernel) {
            Some((_, v)) => v.push((grid(case), s)),
            None => kernels.push((kernel, vec![(grid(case), s)])),
        }
    }
    anyhow::ensure!(!kernels.is_empty(), "{}: no case measured {label:?}", f.name);
    let figure = kernels
        .iter()
        .map(|(kernel, v)| match v.as_slice() {
            [(g, s)] => format!("{kernel} {g}: {}×", s.text(2)),
            _ => {
                let (lo, hi) =
                    v.iter().fold((f64::INFINITY, 0.0f64), |(l, h), (_, s)| (l.min(s.median), h.max(s.median)));
                let grids: Vec<&str> = v.iter().map(|(g, _)| g.as_str()).collect();
                format!("{kernel} {lo:.2}–{hi:.2}× ({})", grids.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let what = VARIANTS.iter().find(|(l, _)| *l == label).map_or(label, |(_, w)| w);
    Headline::of(f, format!("shipped kernel step / {what}"), figure)
}

/// `candidates`: the rate of every candidate beside the shipped kernel, per kernel.
pub fn candidates(f: &BenchJson) -> Result<Rendered> {
    let cases = cases(f)?;
    let (unit, unit_name) = rate_unit(cases);
    let mut body = String::new();
    let mut kernels: Vec<&str> = Vec::new();
    for case in cases {
        let kernel = case.get("kernel").and_then(Value::as_str).unwrap_or("?");
        if !kernels.contains(&kernel) && !labels(std::slice::from_ref(case), true).is_empty() {
            kernels.push(kernel);
        }
    }
    for kernel in kernels {
        let of_kernel: Vec<Value> =
            cases.iter().filter(|c| c.get("kernel").and_then(Value::as_str) == Some(kernel)).cloned().collect();
        let labels = labels(&of_kernel, true);
        let mut header = vec![format!("{kernel}, {unit_name}"), "shipped".to_owned()];
        header.extend(labels.iter().map(|l| l.trim_start_matches("candidate-").to_owned()));
        let rows = of_kernel
            .iter()
            .map(|case| {
                let rate = |label: &str| {
                    case.pointer(&format!("/variants/{label}/cell_steps_per_s/median"))
                        .and_then(Value::as_f64)
                        .map_or("—".to_owned(), |r| format!("{:.1}", r / unit))
                };
                std::iter::once(grid(case))
                    .chain(std::iter::once(rate("current")))
                    .chain(labels.iter().map(|l| rate(l)))
                    .collect()
            })
            .collect();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        body += &table(&header, rows);
        body.push('\n');
    }
    body += &format!("Medians of {} alternating repetitions.\n", f.num("kernel.reps")?);
    Ok(region(std::slice::from_ref(f), body, Vec::new()))
}

/// `roofline`: the adapter's copy bandwidth and each shipped kernel's share of it.
pub fn roofline(f: &BenchJson) -> Result<Rendered> {
    let copy = |key: &str| f.summary(&format!("roofline.{key}")).map(figure);
    let mut rows = vec![vec![
        "buffer copy (`copy_buffer_to_buffer`), before; after the kernels".to_owned(),
        format!("{}; {}", copy("copy_gb_per_s_before")?, copy("copy_gb_per_s_after")?),
        String::new(),
    ]];
    if f.find("roofline.shader_copy_gb_per_s_before").is_some() {
        rows.push(vec![
            "a compute shader's copy, before; after".to_owned(),
            format!("{}; {}", copy("shader_copy_gb_per_s_before")?, copy("shader_copy_gb_per_s_after")?),
            String::new(),
        ]);
    }
    let roof = f.num("roofline.roof_gb_per_s")?;
    let cases = cases(f)?;
    let mut shares = Vec::new();
    for k in f.get("roofline.kernels")?.as_array().context("roofline.kernels is no list")? {
        let share = Summary::of(k.get("fraction_of_copy").unwrap_or(&Value::Null)).context("no fraction_of_copy")?;
        let gbps = cases
            .iter()
            .find(|c| c.get("kernel") == k.get("kernel") && c.get("grid") == k.get("grid"))
            .and_then(|c| summary_at(c, "/variants/current/effective_gb_per_s"))
            .map_or("?".to_owned(), figure);
        rows.push(vec![case_name(k), gbps, format!("{:.0} %", share.median * 100.0)]);
        shares.push(share.median * 100.0);
    }
    let body = format!(
        "{}\nThe roof is the faster copy, {roof:.0} GB/s (read plus write); a kernel's effective GB/s counts every \
         field read once and written once per cell-step.\n",
        table(&["", "GB/s, median [min–max]", "share of the roof"], rows)
    );
    let (lo, hi) = shares.iter().fold((f64::INFINITY, 0.0f64), |(l, h), s| (l.min(*s), h.max(*s)));
    let what = format!("shipped kernels' effective bandwidth / the adapter's copy bandwidth ({roof:.0} GB/s)");
    Ok(region(std::slice::from_ref(f), body, vec![Headline::of(f, what, format!("{lo:.0}–{hi:.0} %"))?]))
}

/// `zfp-encoder`: `bench zfp-encoder`, the device's ZFP encoder against zfp's on one core and
/// against the adapter's copy bandwidth.
pub fn zfp_encoder(f: &BenchJson) -> Result<Rendered> {
    let z = "zfp_encoder";
    let s = |key: &str| f.summary(&format!("{z}.{key}"));
    let n = |key: &str| f.num(&format!("{z}.{key}"));
    let roof = s("roof_gb_per_s.buffer_copy")?.median.max(s("roof_gb_per_s.shader_copy")?.median);
    let rows = vec![
        vec![
            "on the device (`ZfpEncoder`)".to_owned(),
            s("device_ms_per_field")?.text(3),
            format!("{} effective (field read, stream written)", figure(s("device_effective_gb_per_s")?)),
        ],
        vec![
            "on the host (`zfp_compress`, one core)".to_owned(),
            s("host_ms_per_field")?.text(3),
            format!("{} (field read)", figure(s("host_gb_per_s")?)),
        ],
    ];
    let ratio = s("time_ratio_device_over_host")?.text(3);
    let body = format!(
        "{}\nDevice / host: **{ratio}**; the device's effective bandwidth is {} of the faster device-local copy's \
         ({roof:.1} GB/s, read plus write). The 3-D model's v at {}³ after {} steps, rate {}, {} rotations; the \
         streams are equal byte for byte.\n",
        table(&["encoder", "ms per field", "GB/s"], rows),
        s("fraction_of_roof")?.text(3),
        n("edge")?,
        n("steps")?,
        n("rate")?,
        n("reps")?,
    );
    let what = format!("ZFP encoder at rate {}, {}³ field: device / zfp_compress on one core", n("rate")?, n("edge")?);
    Ok(region(std::slice::from_ref(f), body, vec![Headline::of(f, what, ratio)?]))
}
