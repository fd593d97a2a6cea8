//! Range checks on a deserialized config, each naming the key and where it was set.

use std::str::FromStr;

use wgpipe_compute::{DeviceSelector, OutputDType};
use wgpipe_storage::{Compression, SINK_NAMES, SinkOptions};

use super::model::{CheckpointMode, ConfigFile, DEFAULT_GRID_EDGE, SELECT_ACCEPTS, Select};
use super::source::Source;
use crate::MAX_DEVICE_COPIES;
use crate::analysis::Analysis;
use crate::config_error::Result;
use crate::thinning::{Thinning, Trigger};

/// `[analysis]`: its sizes, and no sizes without fields to apply them to.
fn analysis(file: &ConfigFile, src: &Source) -> Result<()> {
    let a = &file.analysis;
    if a.pdf_bins > wgpipe_compute::MAX_PDF_BINS {
        return Err(src.invalid(
            "analysis.pdf_bins",
            format!(
                "{} is out of range: use 0 (no PDF) to {} (one workgroup's histogram)",
                a.pdf_bins,
                wgpipe_compute::MAX_PDF_BINS
            ),
        ));
    }
    let largest = grid_shape(file, src)?.into_iter().max().unwrap_or(1);
    if a.downsample as usize > largest {
        return Err(src.invalid(
            "analysis.downsample",
            format!(
                "{} is out of range: a block larger than the grid's longest axis ({largest}) is the whole grid; use \
                 0 or 1 (none) to {largest}",
                a.downsample
            ),
        ));
    }
    if a.fields.is_empty() {
        for (key, set) in [("analysis.pdf_bins", a.pdf_bins > 0), ("analysis.downsample", a.downsample > 1)] {
            if set {
                return Err(
                    src.invalid(key, "applies to analysis.fields, which lists none: name the fields to analyse")
                );
            }
        }
    }
    Ok(())
}

/// Errors on the first out-of-range value (kernel-dependent checks are in `kernel.rs`).
pub(crate) fn check(file: &ConfigFile, src: &Source) -> Result<()> {
    grid_shape(file, src)?;
    check_counts(file, src)?;
    check_run(file, src)?;
    analysis(file, src)?;
    selector(file, src)?;
    check_output(file, src)
}

/// Errors unless every count is at least 1 (and `devices.count` at most [`MAX_DEVICE_COPIES`]).
fn check_counts(file: &ConfigFile, src: &Source) -> Result<()> {
    let at_least_one = |key: &str, value: u64| -> Result<()> {
        if value == 0 { Err(src.invalid(key, "0 is out of range: use 1 or more")) } else { Ok(()) }
    };
    at_least_one("run.frames", file.run.frames)?;
    at_least_one("run.steps_per_frame", u64::from(file.run.steps_per_frame))?;
    at_least_one("devices.count", file.devices.count as u64)?;
    if file.devices.count > MAX_DEVICE_COPIES {
        return Err(src.invalid(
            "devices.count",
            format!(
                "{} is out of range: use 1 to {MAX_DEVICE_COPIES} (each copy is a device and a thread)",
                file.devices.count
            ),
        ));
    }
    at_least_one("io.staging_buffers", file.io.staging_buffers as u64)?;
    if let Some(n) = file.io.copy_threads {
        at_least_one("io.copy_threads", n as u64)?;
    }
    at_least_one("output.chunk_frames", file.output.chunk_frames as u64)?;
    at_least_one("output.shard_frames", file.output.shard_frames as u64)?;
    at_least_one("output.open_timeout", file.output.open_timeout)?;
    if let Some(threads) = file.output.compression_threads {
        at_least_one("output.compression_threads", threads as u64)?;
    }
    Ok(())
}

/// Errors unless the run's noise and checkpoint settings are usable together with the sink.
fn check_run(file: &ConfigFile, src: &Source) -> Result<()> {
    if !(0.0..=1.0).contains(&file.run.noise) {
        return Err(src.invalid("run.noise", format!("{} is out of range: use a value from 0 to 1", file.run.noise)));
    }
    if !(file.run.mtbf.is_finite() && file.run.mtbf > 0.0) {
        return Err(
            src.invalid("run.mtbf", format!("{} is out of range: use a number of seconds above 0", file.run.mtbf))
        );
    }
    if file.run.checkpoint == CheckpointMode::Auto && file.run.checkpoint_every > 0 {
        return Err(src.invalid(
            "run.checkpoint_every",
            "run.checkpoint = \"auto\" chooses the interval itself: remove run.checkpoint_every, or set \
             run.checkpoint = \"fixed\"",
        ));
    }
    let checkpoints = file.run.checkpoint == CheckpointMode::Auto || file.run.checkpoint_every > 0;
    if checkpoints && ["null", "adios2"].contains(&file.output.sink.as_str()) {
        let key = if file.run.checkpoint_every > 0 { "run.checkpoint_every" } else { "run.checkpoint" };
        return Err(src.invalid(
            key,
            format!(
                "checkpoints restart the streams of an output that --resume continues, which the {} sink cannot: \
                 use output.sink = \"hdf5\", \"raw\" or \"zarr\", or no checkpoints",
                file.output.sink
            ),
        ));
    }
    Ok(())
}

/// Errors unless `[output]` names a sink, a path and options that sink has.
fn check_output(file: &ConfigFile, src: &Source) -> Result<()> {
    if !SINK_NAMES.contains(&file.output.sink.as_str()) {
        return Err(src.invalid(
            "output.sink",
            format!("unknown sink {:?}: use one of {}", file.output.sink, SINK_NAMES.join(", ")),
        ));
    }
    if file.output.sink != "null" && file.output.path.as_os_str().is_empty() {
        return Err(src.invalid("output.path", "the path is empty: give a file (hdf5) or directory (raw, zarr)"));
    }
    compression(file, src)?;
    output_dtype(file, src)?;
    adios2_engine(file, src)?;
    queue_full_policy(file, src)?;
    if file.output.sink == "zarr" && file.output.chunk_frames != 1 {
        return Err(src.invalid(
            "output.chunk_frames",
            "the zarr sink stores one frame per chunk: remove output.chunk_frames and group frames into shard \
             files with output.shard_frames",
        ));
    }
    if file.output.sink != "zarr" && file.output.shard_frames != 1 {
        return Err(src.invalid(
            "output.shard_frames",
            format!(
                "only the zarr sink has shards, and output.sink is {:?}: set output.sink = \"zarr\" or remove \
                 output.shard_frames (hdf5 groups frames with output.chunk_frames)",
                file.output.sink
            ),
        ));
    }
    for (key, on) in [("output.xdmf", file.output.xdmf), ("output.swmr", file.output.swmr)] {
        if on && file.output.sink != "hdf5" {
            return Err(src.invalid(
                key,
                format!(
                    "only the hdf5 sink has it, and output.sink is {:?}: set output.sink = \"hdf5\" or remove {key}",
                    file.output.sink
                ),
            ));
        }
    }
    // With an analysis, the reductions alone may be stored.
    if let Some(fields) = &file.output.fields
        && fields.is_empty()
        && file.analysis.fields.is_empty()
    {
        return Err(src.invalid(
            "output.fields",
            "the list is empty: store at least one field, e.g. [\"v\"], or list analysis.fields to store their \
             reductions alone",
        ));
    }
    Ok(())
}

/// `output.every` and `output.when` as a [`Thinning`]: a count of at least 1, a condition
/// that parses and reads only one-value reductions of `analysis.fields`, and reductions to
/// keep (an analysis) beside fields to thin.
pub(crate) fn thinning(file: &ConfigFile, src: &Source) -> Result<Thinning> {
    let out = &file.output;
    let when =
        match &out.when {
            None => None,
            Some(text) => Some(Trigger::parse(text).map_err(|e| {
                src.invalid("output.when", format!("{text:?}, {e}; e.g. output.when = \"v_max > 0.3\""))
            })?),
        };
    let thinning = Thinning { every: out.every, when };
    if out.every == Some(0) {
        return Err(src.invalid("output.every", "0 is out of range: use 1 (every frame) or more"));
    }
    if out.every == Some(1) && thinning.when.is_some() {
        return Err(src.invalid(
            "output.every",
            "1 keeps every frame, whatever output.when says: remove output.every, or give 2 or more to keep every \
             k-th frame besides those output.when keeps",
        ));
    }
    if !thinning.thins() {
        return Ok(thinning);
    }
    let key = if thinning.when.is_some() { "output.when" } else { "output.every" };
    let analysis = Analysis::of(file.analysis.fields.clone());
    if analysis.is_empty() {
        return Err(src.invalid(
            key,
            "it keeps the analysis's reductions of every frame, and analysis.fields lists none: name the fields to \
             reduce (analysis.fields = [\"v\"]), or store fewer frames altogether with a larger run.steps_per_frame",
        ));
    }
    if out.fields.as_ref().is_some_and(Vec::is_empty) {
        return Err(src.invalid(
            key,
            "output.fields is empty, so no frame stores fields: remove it, or list the fields to store on the frames \
             it keeps",
        ));
    }
    if let Some(when) = &thinning.when {
        let names = analysis.scalar_names();
        if let Some(unknown) = when.names().iter().find(|n| !names.contains(n)) {
            return Err(src.invalid(
                "output.when",
                format!(
                    "{unknown:?} is not a one-value reduction of analysis.fields: choose from {}",
                    names.join(", ")
                ),
            ));
        }
    }
    Ok(thinning)
}

/// The grid's shape from `grid.shape`, or from the 2-D spelling `grid.rows`/`grid.cols`
/// (each 256 when not given); giving both spellings is an error.
pub(crate) fn grid_shape(file: &ConfigFile, src: &Source) -> Result<Vec<usize>> {
    let g = &file.grid;
    let Some(shape) = &g.shape else {
        let rows = g.rows.unwrap_or(DEFAULT_GRID_EDGE);
        let cols = g.cols.unwrap_or(DEFAULT_GRID_EDGE);
        for (key, n) in [("grid.rows", rows), ("grid.cols", cols)] {
            if n == 0 {
                return Err(src.invalid(key, "0 is out of range: use 1 or more"));
            }
        }
        return Ok(vec![rows, cols]);
    };
    if g.rows.is_some() || g.cols.is_some() {
        let key = if g.rows.is_some() { "grid.rows" } else { "grid.cols" };
        return Err(src.invalid(
            key,
            "grid.shape is given too: give the shape once, as grid.shape = [rows, cols] (or [nz, ny, nx]), \
             or as grid.rows and grid.cols",
        ));
    }
    if !(1..=3).contains(&shape.len()) {
        return Err(src.invalid(
            "grid.shape",
            format!("{} sizes: give [nx], [ny, nx] or [nz, ny, nx] (slowest axis first)", shape.len()),
        ));
    }
    if let Some(axis) = shape.iter().position(|n| *n == 0) {
        return Err(src.invalid("grid.shape", format!("axis {axis} has size 0: use 1 or more cells on every axis")));
    }
    Ok(shape.clone())
}

/// `devices.select` as a selector.
pub(crate) fn selector(file: &ConfigFile, src: &Source) -> Result<DeviceSelector> {
    match &file.devices.select {
        Select::Indices(ix) if ix.is_empty() => Err(src
            .invalid("devices.select", "the index list is empty: list adapters from `wgpipe devices`, or use \"all\"")),
        Select::Indices(ix) => Ok(DeviceSelector::Indices(ix.clone())),
        Select::Index(i) => Ok(DeviceSelector::Indices(vec![*i])),
        Select::Text(t) => DeviceSelector::parse(t)
            .map_err(|_| src.invalid("devices.select", format!("{t:?} is not a selection: use {SELECT_ACCEPTS}"))),
    }
}

/// `output.dtype`: the element type the fields are stored as.
pub(crate) fn output_dtype(file: &ConfigFile, src: &Source) -> Result<OutputDType> {
    let given = file.output.dtype.as_str();
    OutputDType::ALL.into_iter().find(|d| d.name() == given).ok_or_else(|| {
        src.invalid(
            "output.dtype",
            format!(
                "{given:?} is not an output type: use \"f32\" (the default, the values as computed) or \"f16\" \
                 (IEEE half, converted on the GPU: half the bytes, about 3 significant digits)"
            ),
        )
    })
}

/// `output.compression` parsed, and refused when this build cannot write it.
/// `output.engine`, parsed.
pub(crate) fn adios2_engine(file: &ConfigFile, src: &Source) -> Result<wgpipe_storage::Adios2Engine> {
    wgpipe_storage::Adios2Engine::from_str(&file.output.engine).map_err(|e| src.invalid("output.engine", e.to_string()))
}

/// `output.queue_full_policy`, parsed.
pub(crate) fn queue_full_policy(file: &ConfigFile, src: &Source) -> Result<wgpipe_storage::QueueFullPolicy> {
    wgpipe_storage::QueueFullPolicy::from_str(&file.output.queue_full_policy)
        .map_err(|e| src.invalid("output.queue_full_policy", e.to_string()))
}

/// Where `zfp:rate=R` compresses (`output.compress_on`): the rate to encode at on the
/// device, or `None` for the host (and for every other compression); and the run summary's
/// line saying where and why (`None` without compression).
///
/// `split`: the grid's shape and the ranks along each of its axes, where it is split over MPI
/// ranks (`grid.decomposition`, or under `mpirun` the split chosen:
/// [`crate::config::Config::settle_split`]) and the device encodes each rank's block.
pub(crate) fn zfp_on_device(
    file: &ConfigFile,
    src: &Source,
    compression: Compression,
    split: Option<(&[usize], &[usize])>,
) -> Result<(Option<wgpipe_compute::zfp::ZfpRate>, Option<String>)> {
    let out = &file.output;
    let on = out.compress_on.as_str();
    if !["auto", "device", "host"].contains(&on) {
        return Err(
            src.invalid("output.compress_on", format!("{on:?} is not a place: use \"auto\", \"device\" or \"host\""))
        );
    }
    if on == "device" && !matches!(compression, Compression::ZfpRate(_)) {
        return Err(src.invalid(
            "output.compress_on",
            format!(
                "\"device\" encodes zfp:rate=R, and output.compression is {compression}: set output.compression = \
                 \"zfp:rate=8\" (say), or remove output.compress_on"
            ),
        ));
    }
    let Compression::ZfpRate(rate) = compression else {
        let note = (compression != Compression::None).then(|| format!("{compression}, by the {} sink", out.sink));
        return Ok((None, note));
    };
    let why_not = if !["hdf5", "raw", "zarr"].contains(&out.sink.as_str()) {
        Some(format!("the {} sink stores values only (the hdf5, zarr and raw sinks store encoded fields)", out.sink))
    } else if out.sink == "zarr" && out.shard_frames != 1 {
        Some(format!(
            "output.shard_frames is {} (the zarr sink stores encoded fields one frame per chunk, not in shards)",
            out.shard_frames
        ))
    } else if out.dtype != "f32" {
        Some(format!("output.dtype is {:?} (the encoder codes f32 fields)", out.dtype))
    } else if let Some(why) = split.and_then(|(shape, parts)| split_obstacle(&out.sink, shape, parts)) {
        Some(why)
    } else if out.chunk_frames != 1 {
        Some(format!("output.chunk_frames is {} (encoded fields are stored one frame per chunk)", out.chunk_frames))
    } else {
        None
    };
    // The raw sink compresses nothing itself: it stores device-encoded streams or values.
    if out.sink == "raw" {
        let fix = match (&why_not, on) {
            (Some(why), _) => Some(format!("the device cannot encode here: {why}")),
            (None, "host") => Some("output.compress_on is \"host\": set it to \"device\" (or \"auto\")".to_owned()),
            _ => None,
        };
        if let Some(fix) = fix {
            return Err(src.invalid(
                "output.compress_on",
                format!(
                    "the raw sink stores {compression} only as streams encoded on the device, and {fix}; or use the \
                     hdf5 or zarr sink, or remove output.compression"
                ),
            ));
        }
    }
    let host = |why: &str| Ok((None, Some(format!("{compression} on the host, by the {} sink ({why})", out.sink))));
    match (on, why_not) {
        ("device", Some(why)) => Err(src.invalid(
            "output.compress_on",
            format!("\"device\" cannot encode here: {why}; set output.compress_on = \"host\" (or \"auto\")"),
        )),
        ("host", _) => host("output.compress_on = \"host\""),
        (_, Some(why)) => host(&format!("output.compress_on = \"auto\": {why}")),
        _ => {
            let device = wgpipe_compute::zfp::ZfpRate::new(rate.bits())
                .map_err(|e| src.invalid("output.compression", e.to_string()))?;
            let note =
                format!("{compression} on the device, only the ZFP streams read back (output.compress_on = {on:?})");
            Ok((Some(device), Some(note)))
        }
    }
}

/// Why the device cannot encode the blocks of `shape` split into `parts` ranks per axis for
/// `sink`, or `None` where it can: the zarr sink stores each rank's stream as the chunk of its
/// block, which needs blocks of one shape; the hdf5 sink's ranks write one file through
/// MPI-IO, which takes no chunks encoded before the sink.
fn split_obstacle(sink: &str, shape: &[usize], parts: &[usize]) -> Option<String> {
    if sink != "zarr" {
        return Some(format!(
            "the grid is split over MPI ranks, and the {sink} sink's ranks write one file through MPI-IO, which takes \
             no chunks encoded before the sink (the zarr sink stores each rank's block as its chunk)"
        ));
    }
    shape.iter().zip(parts).any(|(&n, &p)| p == 0 || n % p != 0).then(|| {
        format!(
            "the decomposition {parts:?} does not divide the grid {shape:?} evenly (each rank's stream is stored as a \
             whole Zarr chunk, so every block needs one shape)"
        )
    })
}

pub(crate) fn compression(file: &ConfigFile, src: &Source) -> Result<Compression> {
    let invalid = |e: wgpipe_storage::Error| src.invalid("output.compression", e.to_string());
    let compression = Compression::from_str(&file.output.compression).map_err(invalid)?;
    if compression.is_zfp() && file.output.dtype == "f16" {
        return Err(src.invalid(
            "output.compression",
            format!(
                "{compression} codes f32 and f64 values, and output.dtype = \"f16\" fields would be stored \
                 uncompressed: set output.dtype = \"f32\", or use deflate"
            ),
        ));
    }
    // The raw sink stores zfp:rate=R as the device's streams (`zfp_on_device` checks where).
    let raw_streams = matches!(compression, Compression::ZfpRate(_)) && file.output.sink == "raw";
    if compression.is_zfp() && !raw_streams && !["hdf5", "zarr"].contains(&file.output.sink.as_str()) {
        return Err(src.invalid(
            "output.compression",
            format!(
                "{compression} is written by the hdf5 and zarr sinks: set output.sink = \"hdf5\" or \"zarr\", or \
                 remove output.compression"
            ),
        ));
    }
    // Only the HDF5 sink's blosc (a cargo feature) and ZFP (a filter plugin), and the Zarr
    // sink's ZFP (a cargo feature), need more than the build; zstd is the Zarr sink's alone.
    if file.output.sink == "zarr" {
        compression.check_available_in_zarr().map_err(invalid)?;
    }
    if file.output.sink == "hdf5" {
        compression.check_available().map_err(invalid)?;
        if let Compression::Zstd(_) = compression {
            return Err(src.invalid(
                "output.compression",
                format!(
                    "{compression} is a Zarr codec: use blosc-zstd or deflate with hdf5, or output.sink = \"zarr\""
                ),
            ));
        }
    }
    Ok(compression)
}

/// The sink's options as the `[output]` table gives them, with `compression` (checked).
pub(crate) fn sink_options(file: &ConfigFile, src: &Source, compression: Compression) -> Result<SinkOptions> {
    let o = &file.output;
    Ok(SinkOptions::new(o.path.clone())
        .with_overwrite(o.overwrite)
        .with_compression(compression)
        .with_chunk_frames(o.chunk_frames)
        .with_shard_frames(o.shard_frames)
        .with_adios2_engine(adios2_engine(file, src)?)
        .with_queue(o.queue_limit, queue_full_policy(file, src)?)
        .with_open_timeout(std::time::Duration::from_secs(o.open_timeout))
        .with_compression_threads(o.compression_threads.unwrap_or_else(wgpipe_storage::default_compression_threads))
        .with_fsync(o.fsync)
        .with_xdmf(o.xdmf)
        .with_swmr(o.swmr))
}
