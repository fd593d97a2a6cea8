//! `wgpipe render`: frames of an output (HDF5 or raw, via `open_output`) to PNG images,
//! through the viridis colormap, scaled per frame or to a fixed `--range`. Fields of any
//! element type; a 3-D field is shown as one plane (`--slice z=32`, by default the middle of
//! the first axis) or as its maximum along an axis (`--max z`).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use wgpipe::storage::{Output, open_output};

use crate::colormap::viridis_lut;

/// Arguments of `wgpipe render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Output to read: an HDF5 file, a raw output directory or a Zarr store.
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
    /// 3-D fields: the plane to show, AXIS=INDEX with AXIS z, y or x (default: the middle of z).
    #[arg(long, value_name = "AXIS=INDEX", value_parser = parse_slice, conflicts_with = "max")]
    slice: Option<(Axis, usize)>,
    /// 3-D fields: show the maximum along AXIS (z, y or x) instead of one plane.
    #[arg(long, value_name = "AXIS", value_parser = parse_axis)]
    max: Option<Axis>,
    /// Fixed value range LO,HI mapped onto the colormap (default: each frame's min and max).
    #[arg(long, value_name = "LO,HI", value_parser = parse_range, allow_hyphen_values = true)]
    range: Option<(f32, f32)>,
    /// PNG file (with --frame) or directory (with --all, created if missing).
    #[arg(short, long)]
    output: PathBuf,
}

/// An axis of a 3-D field, named as the output's dimensions are (`z, y, x`, C order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    Z = 0,
    Y = 1,
    X = 2,
}

fn parse_axis(s: &str) -> Result<Axis, String> {
    match s.trim() {
        "z" => Ok(Axis::Z),
        "y" => Ok(Axis::Y),
        "x" => Ok(Axis::X),
        other => Err(format!("{other:?} is not an axis: use z, y or x")),
    }
}

fn parse_slice(s: &str) -> Result<(Axis, usize), String> {
    let bad = || format!("{s:?} is not AXIS=INDEX, e.g. --slice z=32");
    let (axis, index) = s.split_once('=').ok_or_else(bad)?;
    Ok((parse_axis(axis)?, index.trim().parse().map_err(|_| bad())?))
}

/// How a 3-D field becomes a picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Slice(Axis, usize),
    Max(Axis),
}

/// The picture of `values`, a C-order `[nz, ny, nx]` field, under `view`: `(rows, cols, values)`
/// with the remaining axes in their order (a z slice is `ny × nx`, an x slice `nz × ny`).
fn plane(values: &[f32], [nz, ny, nx]: [usize; 3], view: View) -> anyhow::Result<(usize, usize, Vec<f32>)> {
    let dims = [nz, ny, nx];
    let axis = match view {
        View::Slice(a, _) | View::Max(a) => a as usize,
    };
    if let View::Slice(a, k) = view
        && k >= dims[axis]
    {
        let name = ["z", "y", "x"][a as usize];
        bail!("--slice {name}={k} is outside the field: {name} runs from 0 to {}", dims[axis] - 1);
    }
    let [rows, cols] = match axis {
        0 => [ny, nx],
        1 => [nz, nx],
        _ => [nz, ny],
    };
    let at = |k: usize, r: usize, c: usize| {
        let (z, y, x) = match axis {
            0 => (k, r, c),
            1 => (r, k, c),
            _ => (r, c, k),
        };
        values[(z * ny + y) * nx + x]
    };
    let mut out = Vec::with_capacity(rows * cols);
    for r in 0..rows {
        for c in 0..cols {
            out.push(match view {
                View::Slice(_, k) => at(k, r, c),
                View::Max(_) => (0..dims[axis]).map(|k| at(k, r, c)).fold(f32::NEG_INFINITY, f32::max),
            });
        }
    }
    Ok((rows, cols, out))
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
    let spec = &out.fields()[field];
    let view = match (spec.shape.len(), args.slice, args.max) {
        (3, Some((axis, index)), _) => Some(View::Slice(axis, index)),
        (3, None, Some(axis)) => Some(View::Max(axis)),
        (3, None, None) => Some(View::Slice(Axis::Z, spec.shape[0] / 2)),
        (_, None, None) => None,
        _ => bail!("--slice and --max are for 3-D fields; field {:?} is {}", spec.name, spec.describe()),
    };
    let frames = out.streams()[stream].frames;
    if args.all {
        std::fs::create_dir_all(&args.output)
            .with_context(|| format!("cannot create directory {}", args.output.display()))?;
        for i in 0..frames {
            write_frame(&out, stream, field, i, view, args.range, &args.output.join(format!("frame_{i:05}.png")))?;
        }
        say!("wrote {frames} PNG files to {}", args.output.display());
    } else {
        let i = args.frame.unwrap_or(0);
        if i >= frames {
            bail!(
                "frame {i} does not exist: stream {:?} holds frames 0 to {}",
                out.streams()[stream].name,
                frames.saturating_sub(1)
            );
        }
        write_frame(&out, stream, field, i, view, args.range, &args.output)?;
        say!("wrote {}", args.output.display());
    }
    Ok(())
}

/// The smallest and largest finite value: what a picture's colours span unless `--range`
/// says otherwise (the live view labels its colour scale with them); `None` if none is finite.
pub fn value_range(values: &[f32]) -> Option<(f32, f32)> {
    values.iter().filter(|v| v.is_finite()).fold(None, |range, &v| match range {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// Maps values to RGB through the colormap, `range` or the values' own min/max.
fn colorize(values: &[f32], range: Option<(f32, f32)>) -> Vec<u8> {
    // Without a finite value every pixel is the colormap's first colour, whatever the range.
    let (lo, hi) = range.or_else(|| value_range(values)).unwrap_or((0.0, 1.0));
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

/// A field of `shape` holding `values` as `(rows, cols, RGB bytes)`: a 3-D field as `view`
/// shows it, colours from `range` or the values' own min and max.
pub fn picture(
    shape: &[usize],
    values: Vec<f32>,
    view: Option<View>,
    range: Option<(f32, f32)>,
) -> anyhow::Result<(usize, usize, Vec<u8>)> {
    let (rows, cols, values) = match (shape, view) {
        ([cols], _) => (1, *cols, values),
        ([rows, cols], _) => (*rows, *cols, values),
        ([nz, ny, nx], Some(view)) => plane(&values, [*nz, *ny, *nx], view)?,
        _ => bail!("a field of shape {shape:?} is no picture: render shows fields of rank 1 to 3"),
    };
    Ok((rows, cols, colorize(&values, range)))
}

/// `rgb` (`rows × cols` pixels) encoded as a PNG file's bytes.
pub fn png_bytes(rows: usize, cols: usize, rgb: &[u8]) -> anyhow::Result<Vec<u8>> {
    let too_big = || format!("a {rows}×{cols} frame is too large for PNG");
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(
        &mut bytes,
        u32::try_from(cols).ok().with_context(too_big)?,
        u32::try_from(rows).ok().with_context(too_big)?,
    );
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(bytes)
}

fn write_frame(
    out: &Output,
    stream: usize,
    field: usize,
    index: u64,
    view: Option<View>,
    range: Option<(f32, f32)>,
    path: &Path,
) -> anyhow::Result<()> {
    let spec = &out.fields()[field];
    // Every element type as f32 for the colormap (exact for all but the extremes of u32/i32).
    let values: Vec<f32> = out.read_field(stream, field, index)?.to_f64().into_iter().map(|v| v as f32).collect();
    let (rows, cols, rgb) =
        picture(&spec.shape, values, view, range).with_context(|| format!("field {:?}", spec.name))?;
    let png = png_bytes(rows, cols, &rgb)?;
    std::fs::write(path, png).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[2, 3, 4]` holding its own index, so every picked value says where it came from.
    fn field() -> Vec<f32> {
        (0..24).map(|i| i as f32).collect()
    }

    #[test]
    fn slices_keep_the_other_axes_in_order_and_max_takes_the_largest() -> anyhow::Result<()> {
        let f = field();
        assert_eq!(plane(&f, [2, 3, 4], View::Slice(Axis::Z, 1))?, (3, 4, (12..24).map(|i| i as f32).collect()));
        let y = plane(&f, [2, 3, 4], View::Slice(Axis::Y, 2))?;
        assert_eq!(y, (2, 4, vec![8.0, 9.0, 10.0, 11.0, 20.0, 21.0, 22.0, 23.0]));
        let x = plane(&f, [2, 3, 4], View::Slice(Axis::X, 3))?;
        assert_eq!(x, (2, 3, vec![3.0, 7.0, 11.0, 15.0, 19.0, 23.0]));
        assert_eq!(plane(&f, [2, 3, 4], View::Max(Axis::Z))?, plane(&f, [2, 3, 4], View::Slice(Axis::Z, 1))?);
        assert_eq!(plane(&f, [2, 3, 4], View::Max(Axis::X))?, x);
        let e = plane(&f, [2, 3, 4], View::Slice(Axis::Y, 3)).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(e, "--slice y=3 is outside the field: y runs from 0 to 2");
        assert_eq!(parse_slice("z=32"), Ok((Axis::Z, 32)));
        assert!(parse_slice("w=1").is_err() && parse_slice("z").is_err() && parse_axis("q").is_err());
        Ok(())
    }
}
