//! The renderers of the page's regions, one per KIND: each turns its JSON files into a
//! Markdown table (or two), the machine they were measured on, and the headline figures the
//! at-a-glance table repeats.

mod costs;
mod io;
mod kernels;

use std::fmt::Write as _;

use anyhow::{Result, bail};

use super::json::{BenchJson, Summary};

/// What a region shows, and what of it the at-a-glance table repeats.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// The region's Markdown.
    pub body: String,
    /// Its headline figures.
    pub headlines: Vec<Headline>,
}

/// One row of the at-a-glance table.
#[derive(Debug, Clone)]
pub struct Headline {
    /// What the figure is.
    pub what: String,
    /// The figure.
    pub figure: String,
    /// The command that measured it.
    pub command: String,
    /// The machine, short.
    pub machine: String,
}

impl Headline {
    /// A headline of `file`'s: its command and machine.
    pub fn of(file: &BenchJson, what: impl Into<String>, figure: impl Into<String>) -> Result<Headline> {
        Ok(Headline {
            what: what.into(),
            figure: figure.into(),
            command: file.command()?.to_owned(),
            machine: file.machine().short(),
        })
    }
}

/// Renders a region of `kind` from `files`; `glance` picks the headlines where a kind offers
/// several (the kernel variants).
pub fn render(kind: &str, files: &[BenchJson], glance: Option<&str>) -> Result<Rendered> {
    let one = || match files {
        [file] => Ok(file),
        _ => bail!("{kind} renders one JSON file, {} given", files.len()),
    };
    let some = || if files.is_empty() { bail!("{kind} needs a JSON file") } else { Ok(files) };
    match kind {
        "overlap" => io::overlap(one()?),
        "sinks" => io::sinks(some()?),
        "sweep" => io::sweep(one()?),
        "overhead" => io::overhead(one()?),
        "micro" => io::micro(one()?),
        "compression-threads" => io::compression_threads(some()?),
        "compression" => io::compression(some()?),
        "posix" => io::posix(one()?),
        "h5py" => io::h5py(some()?),
        "python" => io::python(one()?),
        "live-readers" => io::live_readers(one()?),
        "copy-threads" => io::copy_threads(one()?),
        "kernel" => kernels::kernel(one()?, glance),
        "candidates" => kernels::candidates(one()?),
        "roofline" => kernels::roofline(one()?),
        "zfp-device" => costs::zfp_device(one()?),
        "zfp-encoder" => kernels::zfp_encoder(one()?),
        "gs-mpiio" => costs::gs_mpiio(one()?),
        "reserve-cost" => costs::reserve_cost(some()?),
        "layout-cost" => costs::layout_cost(some()?),
        "checkpoint-cost" => costs::checkpoint_cost(one()?),
        "analysis-cost" => costs::analysis_cost(one()?),
        other => bail!("no renderer is called {other:?}"),
    }
}

/// The at-a-glance table: every headline, its section linked by `anchor`.
pub fn glance(headlines: &[(String, Headline)]) -> String {
    let rows = headlines
        .iter()
        .map(|(anchor, h)| {
            let command = h.command.split(" --json ").next().unwrap_or(&h.command);
            vec![format!("[{}](#{anchor})", h.what), format!("`{command}`"), h.figure.clone(), h.machine.clone()]
        })
        .collect();
    table(&["what", "command", "figure (median [min–max])", "machine"], rows)
}

/// A Markdown table of `header` and `rows`.
pub fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "| {} |", header.join(" | "));
    let _ = writeln!(t, "|{}", "---|".repeat(header.len()));
    for row in rows {
        let _ = writeln!(t, "| {} |", row.join(" | "));
    }
    t
}

/// `body`, then each of `files`' command line and machine (with the file's name when there
/// are several).
pub fn with_machines(body: String, files: &[BenchJson]) -> String {
    let mut out = body;
    let about = |file: &BenchJson| {
        let command = file.find("command").and_then(|c| c.as_str()).map(|c| format!("`{c}`"));
        let machine = Some(file.machine().sentence()).filter(|s| !s.is_empty());
        [command, machine].into_iter().flatten().collect::<Vec<_>>().join(". ")
    };
    match files {
        [file] => {
            let about = about(file);
            if !about.is_empty() {
                let _ = write!(out, "\n{about}\n");
            }
        }
        _ => {
            out.push('\n');
            for file in files {
                let _ = writeln!(out, "- [{0}]({0}): {1}", file.name, about(file));
            }
        }
    }
    out
}

/// A region of `body` from `files`, with their machines and `headlines`.
pub fn region(files: &[BenchJson], body: String, headlines: Vec<Headline>) -> Rendered {
    Rendered { body: with_machines(body, files), headlines }
}

/// One row per file of `files`, from `row`, under `header`; and each file's headlines.
pub fn rows_of(
    files: &[BenchJson],
    header: &[&str],
    row: impl Fn(&BenchJson) -> Result<(Vec<String>, Vec<Headline>)>,
) -> Result<Rendered> {
    let (mut rows, mut headlines) = (Vec::new(), Vec::new());
    for file in files {
        let (r, h) = row(file)?;
        rows.push(r);
        headlines.extend(h);
    }
    Ok(region(files, table(header, rows), headlines))
}

/// `bytes` in MB with two decimals, or in KB below a megabyte.
pub fn megabytes(bytes: f64) -> String {
    if bytes < 1e6 { format!("{:.0} KB", bytes / 1e3) } else { format!("{:.2} MB", bytes / 1e6) }
}

/// `s` (seconds) in seconds, or in milliseconds below one second.
pub fn seconds(s: Summary) -> String {
    if s.median >= 1.0 { format!("{} s", s.text(3)) } else { format!("{} ms", figure(s.scaled(1e3))) }
}

/// `s` with as many decimals as a figure of its size needs (three significant digits or
/// more).
pub fn figure(s: Summary) -> String {
    let decimals = match s.median.abs() {
        m if m >= 100.0 => 0,
        m if m >= 10.0 => 1,
        _ => 2,
    };
    s.text(decimals)
}
