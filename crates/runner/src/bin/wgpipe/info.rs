//! `wgpipe info`: what an output (HDF5 file, raw directory or Zarr store, via `open_output`) holds: its
//! fields, streams and how far each got (and from which checkpoint an incomplete one would
//! resume), the parameters and the wgpipe version that wrote it.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use wgpipe::checkpoint;
use wgpipe::storage::{AttrValue, Attributes, Output, open_output};

/// Arguments of `wgpipe info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Output to describe: an HDF5 file, a raw output directory or a Zarr store.
    file: PathBuf,
}

pub fn info(args: &InfoArgs) -> anyhow::Result<()> {
    let out = open_output(&args.file).with_context(|| format!("cannot describe {}", args.file.display()))?;
    print!("{}", describe(&out)?);
    Ok(())
}

/// An attribute value as written in a config: numbers plain (an f32 with its own shortest
/// decimal), text quoted.
fn value(v: &AttrValue) -> String {
    match v {
        AttrValue::Int(i) => i.to_string(),
        AttrValue::UInt(u) => u.to_string(),
        AttrValue::Float(f) => f.to_string(),
        AttrValue::Float32(f) => format!("{f} (float32)"),
        AttrValue::Text(t) => format!("{t:?}"),
    }
}

/// One `key = value` line per attribute, indented by `indent`.
fn attributes(text: &mut String, attrs: &Attributes, indent: &str) {
    for (k, v) in attrs {
        let _ = writeln!(text, "{indent}{k} = {}", value(v));
    }
}

/// The whole description.
fn describe(out: &Output) -> anyhow::Result<String> {
    let mut t = String::new();
    let _ = writeln!(t, "{} ({})", out.path().display(), out.format().describe());
    let version = match out.attributes().get("wgpipe_version") {
        Some(AttrValue::Text(v)) => v.clone(),
        _ => "not recorded".to_owned(),
    };
    let _ = writeln!(t, "written by wgpipe {version}");
    let _ = writeln!(t, "complete: {}", if out.complete() { "yes" } else { "no" });
    let _ = writeln!(t, "fields ({}):", out.fields().len());
    for (i, f) in out.fields().iter().enumerate() {
        let _ = write!(t, "  {}: {} ({})", f.name, f.describe(), f.dims.join(", "));
        if let wgpipe::storage::Encoding::Zfp(rate) = out.stored_encoding(i) {
            let _ = write!(t, ", stored as ZFP fixed-rate streams at {rate} bits per value");
        }
        if let Some(l) = &f.long_name {
            let _ = write!(t, ", {l:?}");
        }
        if let Some(u) = &f.units {
            let _ = write!(t, ", units {u:?}");
        }
        t.push('\n');
    }
    let _ = writeln!(t, "streams ({}):", out.streams().len());
    for (i, s) in out.streams().iter().enumerate() {
        let expected = s.expected_frames.map_or_else(|| "?".to_owned(), |e| e.to_string());
        let state = if s.complete { "complete" } else { "incomplete" };
        let _ = write!(t, "  {}: {} of {expected} frames, {state}", s.name, s.frames);
        let steps = out.steps(i).with_context(|| format!("cannot read the steps of stream {:?}", s.name))?;
        if let (Some(first), Some(last)) = (steps.first(), steps.last()) {
            let _ = write!(t, ", steps {first} to {last}");
        }
        t.push('\n');
        if !s.complete {
            let dir = checkpoint::dir_beside(out.path());
            match checkpoint::read(&dir, &s.name) {
                Ok(Some(saved)) => {
                    let (n, step) = (saved.frames, saved.step);
                    let _ = writeln!(t, "    checkpoint: after {n} frames (step {step}); --resume continues from it");
                }
                Ok(None) => {}
                Err(e) => {
                    let _ = writeln!(t, "    checkpoint: {e}");
                }
            }
        }
        attributes(&mut t, &s.attributes, "    ");
    }
    let _ = writeln!(t, "run attributes:");
    attributes(&mut t, out.attributes(), "  ");
    Ok(t)
}
