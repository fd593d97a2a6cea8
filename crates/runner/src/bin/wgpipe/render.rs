//! `wgpipe render`: frames of an output (HDF5 or raw, via `open_output`) to PNG images,
//! through the viridis colormap, scaled per frame or to a fixed `--range`.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use wgpipe::storage::{Output, open_output};

use crate::colormap::viridis_lut;

/// Arguments of `wgpipe render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Output to read: an HDF5 file or a raw output directory.
    file: PathBuf,
    /// Frame index to render (0-based).
    #[arg(long, conflicts_with = "all", required_unless_present = "all")]
    frame: Option<u64>,
    /// Render every frame of the stream into the directory given by -o (frame_00000.png, ...).
    #[arg(long)]
    all: bool,
    /// Field to render (default: the first stored field).
    #[arg(long)]
    field: Option<String>,
    /// Stream to render (default: the first stream).
    #[arg(long)]
    stream: Option<String>,
    /// Fixed value range LO,HI mapped onto the colormap (default: each frame's min and max).
    #[arg(long, value_name = "LO,HI", value_parser = parse_range, allow_hyphen_values = true)]
    range: Option<(f32, f32)>,
    /// PNG file (with --frame) or directory (with --all, created if missing).
    #[arg(short, long)]
    output: PathBuf,
}

fn parse_range(s: &str) -> Result<(f32, f32), String> {
    let bad = || format!("{s:?} is not LO,HI with LO < HI, e.g. --range 0,0.5");
    let (lo, hi) = s.split_once(',').ok_or_else(bad)?;
    let (lo, hi) = (lo.trim().parse::<f32>().map_err(|_| bad())?, hi.trim().parse::<f32>().map_err(|_| bad())?);
    if lo.is_finite() && hi.is_finite() && lo < hi { Ok((lo, hi)) } else { Err(bad()) }
}

pub fn render(args: &RenderArgs) -> anyhow::Result<()> {
    let out = open_output(&args.file).with_context(|| format!("cannot render {}", args.file.display()))?;
    let stream = match &args.stream {
        None if out.streams().is_empty() => bail!("{} holds no streams", args.file.display()),
        None => 0,
        Some(name) => out.stream_index(name).with_context(|| {
            let names: Vec<&str> = out.streams().iter().map(|s| s.name.as_str()).collect();
            format!("{} has no stream {name:?}; its streams: {}", args.file.display(), names.join(", "))
        })?,
    };
    let field = match &args.field {
        None => 0,
        Some(name) => out.field_index(name).with_context(|| {
            let names: Vec<&str> = out.fields().iter().map(|f| f.name.as_str()).collect();
            format!("{} has no field {name:?}; its fields: {}", args.file.display(), names.join(", "))
        })?,
    };
    let frames = out.streams()[stream].frames;
    if args.all {
        std::fs::create_dir_all(&args.output)
            .with_context(|| format!("cannot create directory {}", args.output.display()))?;
        for i in 0..frames {
            write_frame(&out, stream, field, i, args.range, &args.output.join(format!("frame_{i:05}.png")))?;
        }
        eprintln!("wrote {frames} PNG files to {}", args.output.display());
    } else {
        let i = args.frame.unwrap_or(0);
        if i >= frames {
            bail!(
                "frame {i} does not exist: stream {:?} holds frames 0 to {}",
                out.streams()[stream].name,
                frames.saturating_sub(1)
            );
        }
        write_frame(&out, stream, field, i, args.range, &args.output)?;
        eprintln!("wrote {}", args.output.display());
    }
    Ok(())
}

/// Maps values to RGB through the colormap, `range` or the values' own min/max.
fn colorize(values: &[f32], range: Option<(f32, f32)>) -> Vec<u8> {
    let (lo, hi) = range.unwrap_or_else(|| {
        values
            .iter()
            .filter(|v| v.is_finite())
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)))
    });
    let span = if hi > lo { hi - lo } else { 1.0 };
    let lut = viridis_lut();
    values
        .iter()
        .flat_map(|&v| {
            let t = if v.is_finite() { ((v - lo) / span).clamp(0.0, 1.0) } else { 0.0 };
            lut[(t * 255.0).round() as usize]
        })
        .collect()
}

fn write_frame(
    out: &Output,
    stream: usize,
    field: usize,
    index: u64,
    range: Option<(f32, f32)>,
    path: &Path,
) -> anyhow::Result<()> {
    let spec = &out.fields()[field];
    let [rows, cols] = match spec.shape[..] {
        [cols] => [1, cols],
        [rows, cols] => [rows, cols],
        _ => bail!("field {:?} is {}: render shows 1-D and 2-D fields", spec.name, spec.describe()),
    };
    // Every element type as f32 for the colormap (exact for all but the extremes of u32/i32).
    let values: Vec<f32> = out.read_field(stream, field, index)?.to_f64().into_iter().map(|v| v as f32).collect();
    let rgb = colorize(&values, range);
    let too_big = || format!("a {rows}×{cols} frame is too large for PNG");
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut encoder = png::Encoder::new(
        BufWriter::new(file),
        u32::try_from(cols).ok().with_context(too_big)?,
        u32::try_from(rows).ok().with_context(too_big)?,
    );
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().with_context(|| format!("cannot write {}", path.display()))?;
    writer.write_image_data(&rgb).with_context(|| format!("cannot write {}", path.display()))?;
    writer.finish().with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
