//! The HDF5 sink shared by every rank of an MPI job (cargo feature `mpi`): one file opened
//! with the MPI-IO driver, the same format as [`super::Hdf5Sink`]'s.
//!
//! Parallel HDF5 requires every metadata operation (file create/open/close, group and dataset
//! creation, resize, attribute writes) to be called by all ranks with the same arguments, in
//! the same order; a rank that skips one hangs the job. This module holds that whole
//! collective schedule: `begin` and `finish` are collective, `write` is not.
//!
//! - `begin` (collective): every rank creates the same groups and datasets for the *whole*
//!   layout, sized for every expected frame up front (chunk space allocated early), so that no
//!   write ever changes metadata.
//! - `write` (independent): a rank writes the frames of the streams it runs, whenever they
//!   arrive, with independent I/O (no flush: `H5Fflush` is collective).
//! - `finish` (collective): the frame counts of all ranks are summed, streams that fell short
//!   are shrunk to what they hold, `frames`/`complete` attributes are written, and the file
//!   closes.
//!
//! Independent writes cannot go through HDF5 filters, so compression is refused.

use std::path::{Path, PathBuf};
use std::time::Instant;

use hdf5::dataset::{AllocTime, FillTime};
use hdf5::{Dataset, Extent, File, Group, Location};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{AsRaw, Communicator, CommunicatorCollectives, Root};
use ndarray::ArrayView1;

use super::format::{
    AXIS_ORDER_ATTR, DIMS_ATTR, FIELDS_ATTR, FORMAT, FRAME_DIM, chunk_shape, h5err, set_attr, set_bool, set_strings,
    with_elem_type, with_frames, write_frame_slab,
};
use super::sink::STEPS_CHUNK;
use crate::error::{Error, Result};
use crate::frame::Frame;
use crate::options::{Compression, SinkOptions};
use crate::prepare::OutputKind;
use crate::read::OutputFormat;
use crate::schema::{AXIS_ORDER, AttrValue, StreamLayout};
use crate::sink::{Sink, SinkSummary};
use crate::time::now_rfc3339;
use crate::validate::{STEPS_NAME, Validator};

/// Bytes of the `created` timestamp broadcast from rank 0 (RFC 3339 is far shorter).
const TIMESTAMP_BYTES: usize = 64;

/// The datasets of one stream.
pub(super) struct StreamSets {
    group: Group,
    pub(super) fields: Vec<Dataset>,
    pub(super) steps: Dataset,
}

/// State between `begin` and `finish` (shared with [`super::mpi_block`], which writes into
/// the same datasets collectively).
pub(super) struct Shared {
    pub(super) file: File,
    pub(super) validator: Validator,
    pub(super) streams: Vec<StreamSets>,
    /// Frames each stream's datasets were created for.
    pub(super) expected: Vec<u64>,
    pub(super) scratch: Vec<u64>,
    pub(super) failed: bool,
    others_complete: bool,
}

/// Writes the streams of every MPI rank into one HDF5 file with the MPI-IO driver.
///
/// Every rank builds one with the same options and calls `begin` with the same layout (all
/// streams of the job, each with `expected_frames`); each rank then writes the frames of
/// its own streams only; every rank calls `finish`. The file holds what
/// [`super::Hdf5Sink`] writes for the same layout, so [`crate::open_output`] and h5py read
/// it. Unlike the serial sink the file is created in place (there is no staging name every
/// rank agrees on) and frames are not flushed one by one: a killed job leaves a file marked
/// `complete = false` whose datasets still have their full expected length.
pub struct MpiHdf5Sink {
    options: SinkOptions,
    comm: SimpleCommunicator,
    open: Option<Shared>,
    summary: SinkSummary,
}

impl std::fmt::Debug for MpiHdf5Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiHdf5Sink")
            .field("path", &self.options.path)
            .field("rank", &self.comm.rank())
            .field("ranks", &self.comm.size())
            .finish()
    }
}

/// The ranks where `ok` is false, gathered on every rank (collective).
pub(super) fn failed_ranks(comm: &SimpleCommunicator, ok: bool) -> Vec<usize> {
    let mut all = vec![0u8; comm.size().max(0) as usize];
    comm.all_gather_into(&u8::from(ok), &mut all[..]);
    all.iter().enumerate().filter(|(_, ok)| **ok == 0).map(|(r, _)| r).collect()
}

/// Makes every rank agree on the outcome of a step they all took (collective): a rank that
/// failed returns its own error, the others an [`Error::OtherRank`] naming it. Without this,
/// the ranks that succeeded would go on to the next collective call and wait forever.
pub(super) fn agree<T>(comm: &SimpleCommunicator, result: Result<T>, action: impl FnOnce() -> String) -> Result<T> {
    let ranks = failed_ranks(comm, result.is_ok());
    match result {
        Err(e) => Err(e),
        Ok(_) if !ranks.is_empty() => Err(Error::OtherRank { action: action(), ranks }),
        Ok(v) => Ok(v),
    }
}

impl MpiHdf5Sink {
    /// A sink writing `options.path` together with the other ranks of `comm`. Give it a
    /// communicator of its own (`world.duplicate()`): its collective calls must not mix with
    /// the caller's on another thread.
    pub fn new(options: SinkOptions, comm: SimpleCommunicator) -> Self {
        MpiHdf5Sink { options, comm, open: None, summary: SinkSummary::default() }
    }

    pub(super) fn path(&self) -> &Path {
        &self.options.path
    }

    /// What this sink cannot do that the serial one can, checked on every rank alike.
    fn check_supported(&self, layout: &StreamLayout) -> Result<Vec<Vec<usize>>> {
        self.options.check()?;
        if self.options.compression != Compression::None {
            return Err(Error::InvalidOptions(format!(
                "compression {} is not available with MPI: ranks write independently and HDF5 \
                 filters need collective writes; use compression none",
                self.options.compression
            )));
        }
        crate::validate::check_layout(layout)?;
        if let Some(s) = layout.streams.iter().find(|s| s.expected_frames.is_none()) {
            return Err(Error::InvalidLayout(format!(
                "stream {:?} has no expected frame count: the MPI sink sizes every dataset up front",
                s.name
            )));
        }
        let cf = self.options.chunk_frames.max(1);
        layout
            .fields
            .iter()
            .map(|f| {
                chunk_shape(&f.shape, f.dtype.size(), cf).map_err(|message| Error::ChunkTooLarge {
                    field: format!("{} ({})", f.name, f.describe()),
                    chunk_frames: cf,
                    message,
                })
            })
            .collect()
    }

    /// Rank 0's creation time, the same text on every rank (collective).
    fn created(&self) -> String {
        let mut buf = [0u8; TIMESTAMP_BYTES];
        if self.comm.rank() == 0 {
            let now = now_rfc3339();
            let n = now.len().min(TIMESTAMP_BYTES);
            buf[..n].copy_from_slice(&now.as_bytes()[..n]);
        }
        self.comm.process_at_rank(0).broadcast_into(&mut buf[..]);
        String::from_utf8_lossy(&buf).trim_end_matches('\0').to_owned()
    }

    /// Creates (or, appending, opens) the file collectively.
    fn open_file(&self, appending: bool) -> hdf5::Result<File> {
        let comm = self.comm.as_raw();
        let mut b = File::with_options();
        b.with_fapl(|p| p.mpio(comm, None));
        if appending {
            b.open_rw(self.path())
        } else if self.options.overwrite {
            b.create(self.path())
        } else {
            b.create_excl(self.path())
        }
    }

    /// The communicator of the collective calls.
    pub(super) fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// The collective creation of the file, its groups and datasets.
    pub(super) fn create(&mut self, layout: &StreamLayout) -> Result<Shared> {
        let path = self.path().to_path_buf();
        let checked = self.check_supported(layout).and_then(|chunks| {
            let existing = if self.options.append {
                crate::append::check(&path, layout, OutputFormat::Hdf5, super::read::open)?
            } else {
                crate::prepare::check(&path, self.options.overwrite, OutputKind::File)?;
                None
            };
            Ok((chunks, existing))
        });
        let (chunks, existing) = agree(&self.comm, checked, || format!("checking {}", path.display()))?;
        let validator = Validator::new(layout)?;
        let err = |what: String| {
            let path = path.clone();
            move |e: hdf5::Error| h5err(what.clone(), &path, e)
        };
        let created = self.created();
        let file = agree(
            &self.comm,
            self.open_file(existing.is_some()).map_err(err("cannot create (MPI-IO) HDF5 file".into())),
            || format!("opening {}", path.display()),
        )?;
        // From here on every call is collective and takes the same arguments on every rank:
        // HDF5 fails them alike, so each rank returns the same error.
        let mut first_index = 0;
        let mut others_complete = true;
        let root: &Location = &file;
        match &existing {
            None => {
                for (k, v) in [
                    ("format", AttrValue::from(FORMAT)),
                    ("created", created.into()),
                    ("wgpipe_storage_version", env!("CARGO_PKG_VERSION").into()),
                    (AXIS_ORDER_ATTR, AXIS_ORDER.into()),
                ] {
                    set_attr(root, k, &v).map_err(err(format!("cannot write attribute {k:?} to")))?;
                }
                let names: Vec<String> = layout.fields.iter().map(|f| f.name.clone()).collect();
                set_strings(root, FIELDS_ATTR, &names).map_err(err("cannot write attribute \"fields\" to".into()))?;
            }
            Some(existing) => {
                for name in &existing.replace {
                    file.unlink(name).map_err(err(format!("cannot delete incomplete stream {name:?} of")))?;
                }
                let groups = file.groups().map_err(err("cannot list groups of".into()))?;
                let next = groups.iter().filter_map(|g| super::read::u64_attr(g, "stream_index")).max();
                first_index = next.map_or(0, |n| n + 1);
                others_complete = existing.others_complete;
            }
        }
        for (k, v) in &layout.attributes {
            set_attr(root, k, v).map_err(err(format!("cannot write attribute {k:?} to")))?;
        }
        set_bool(root, "complete", false).map_err(err("cannot write attribute to".into()))?;

        let dims = super::netcdf::Dimensions::of(layout);
        let mut streams = Vec::with_capacity(layout.streams.len());
        let mut expected = Vec::with_capacity(layout.streams.len());
        for (si, s) in layout.streams.iter().enumerate() {
            let frames = s.expected_frames.unwrap_or(0);
            let n = usize::try_from(frames).map_err(|_| {
                Error::InvalidLayout(format!("stream {:?}: {frames} frames do not fit this host", s.name))
            })?;
            let group = file.create_group(&s.name).map_err(err(format!("cannot create group {:?} in", s.name)))?;
            let mut attrs = s.attributes.clone();
            attrs.insert("stream_index".into(), AttrValue::from(first_index + si as u64));
            attrs.insert("expected_frames".into(), AttrValue::from(frames));
            for (k, v) in &attrs {
                set_attr(&group, k, v)
                    .map_err(err(format!("cannot write attribute {k:?} of stream {:?} to", s.name)))?;
            }
            set_bool(&group, "complete", false).map_err(err("cannot write attribute to".into()))?;
            let mut fields = Vec::with_capacity(layout.fields.len());
            for (f, chunk) in layout.fields.iter().zip(&chunks) {
                // Full length up front, still resizable (finish shrinks a stream that fell short).
                let extents: Vec<Extent> =
                    std::iter::once(Extent::from(n..)).chain(f.shape.iter().map(|&d| Extent::from(d))).collect();
                let name = &f.name;
                let ds = with_elem_type!(f.dtype, T => group.new_dataset::<T>())
                    .chunk(chunk.clone())
                    .shape(extents)
                    .alloc_time(Some(AllocTime::Early))
                    .fill_time(FillTime::Never)
                    .create(name.as_str())
                    .map_err(err(format!("cannot create dataset {}/{name} in", s.name)))?;
                let dims: Vec<String> = std::iter::once(FRAME_DIM.to_owned()).chain(f.dims.iter().cloned()).collect();
                set_strings(&ds, DIMS_ATTR, &dims)
                    .map_err(err(format!("cannot write attribute \"dims\" of {}/{name} to", s.name)))?;
                fields.push(ds);
            }
            let steps = group
                .new_dataset::<u64>()
                .chunk(STEPS_CHUNK)
                .shape(n..)
                .alloc_time(Some(AllocTime::Early))
                .fill_time(FillTime::Never)
                .create(STEPS_NAME)
                .map_err(err(format!("cannot create dataset {}/steps in", s.name)))?;
            // The serial sink's netCDF-4 dimensions, units and long names (every rank makes the
            // same calls: metadata changes are collective).
            super::netcdf::describe_stream(&group, layout, &dims, &fields, &steps)
                .map_err(err(format!("cannot write the netCDF-4 dimensions of stream {:?} to", s.name)))?;
            streams.push(StreamSets { group, fields, steps });
            expected.push(frames);
        }
        Ok(Shared { file, validator, streams, expected, scratch: Vec::new(), failed: false, others_complete })
    }
}

/// Writes one frame into its stream's datasets.
fn store(open: &mut Shared, frame: &Frame, path: &Path) -> Result<()> {
    let l = open.validator.layout();
    let n = open.validator.frames()[frame.stream];
    let name = &l.streams[frame.stream].name;
    if n >= open.expected[frame.stream] {
        return Err(Error::FrameMismatch {
            stream: frame.stream,
            index: frame.index,
            reason: format!("stream {name:?} was created for {} frames", open.expected[frame.stream]),
        });
    }
    let n = n as usize;
    let sets = &open.streams[frame.stream];
    for (i, (ds, spec)) in sets.fields.iter().zip(&l.fields).enumerate() {
        let bytes = open.validator.field(frame, i);
        with_elem_type!(spec.dtype, T => write_frame_slab::<T>(ds, spec, bytes, n, &mut open.scratch))
            .map_err(|e| h5err(format!("cannot write frame {n} of {name}/{} to", spec.name), path, e))?;
    }
    sets.steps
        .write_slice(ArrayView1::from(&[frame.step][..]), n..n + 1)
        .map_err(|e| h5err(format!("cannot write step of frame {n} of {name} to"), path, e))
}

/// The collective end of a shared file: streams that hold fewer than their expected frames
/// (`frames`, the same on every rank) are shrunk to what they hold, the `frames`/`complete`
/// attributes are written (complete only if no rank failed), and the file closes.
pub(super) fn close(comm: &SimpleCommunicator, open: Shared, frames: &[u64], path: &Path) -> Result<()> {
    let failed_ranks = failed_ranks(comm, !open.failed);
    let l = open.validator.layout();
    let finished = (|| -> hdf5::Result<()> {
        let mut every_stream_complete = true;
        for (((sets, spec), &n), &expected) in open.streams.iter().zip(&l.streams).zip(frames).zip(&open.expected) {
            if n < expected {
                let rows = n as usize;
                for (ds, f) in sets.fields.iter().zip(&l.fields) {
                    let (dims, rank) = with_frames(rows, &f.shape);
                    ds.resize(&dims[..rank])?;
                }
                sets.steps.resize(rows)?;
            }
            set_attr(&sets.group, "frames", &AttrValue::from(n))?;
            let complete = failed_ranks.is_empty() && spec.expected_frames.is_none_or(|e| e == n);
            set_bool(&sets.group, "complete", complete)?;
            every_stream_complete &= complete;
        }
        set_bool(&open.file, "complete", every_stream_complete && open.others_complete)?;
        Ok(())
    })();
    // Under MPI-IO a file closes only when none of its objects is open.
    let Shared { file, streams, .. } = open;
    drop(streams);
    let closed = file.close();
    finished.map_err(|e| h5err("cannot finish", path, e))?;
    closed.map_err(|e| h5err("cannot close", path, e))
}

impl Sink for MpiHdf5Sink {
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        self.check_supported(layout).map(drop)
    }

    /// Collective: every rank calls it with the same layout.
    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        let start = Instant::now();
        if self.open.is_some() {
            return Err(Error::Usage("begin called twice"));
        }
        self.open = Some(self.create(layout)?);
        self.summary.write_seconds += start.elapsed().as_secs_f64();
        Ok(())
    }

    /// Independent: only the frames of this rank's streams.
    fn write(&mut self, frame: &Frame) -> Result<()> {
        let start = Instant::now();
        let path = self.options.path.clone();
        let open = self.open.as_mut().ok_or(Error::Usage("write called before begin"))?;
        if open.failed {
            return Err(Error::Usage("write called after a failed write: call finish"));
        }
        open.validator.check(frame)?;
        if let Err(e) = store(open, frame, &path) {
            open.failed = true;
            return Err(e);
        }
        open.validator.commit(frame);
        self.summary.record(frame, start);
        Ok(())
    }

    /// Collective: every rank calls it, whatever happened to its own frames.
    fn finish(&mut self) -> Result<SinkSummary> {
        let start = Instant::now();
        let path: PathBuf = self.options.path.clone();
        let open = self.open.take().ok_or(Error::Usage("finish called without begin"))?;
        // Each stream is written by one rank: the sum is its frame count.
        let mut frames = vec![0u64; open.expected.len()];
        self.comm.all_reduce_into(open.validator.frames(), &mut frames[..], SystemOperation::sum());
        close(&self.comm, open, &frames, &path)?;
        self.summary.write_seconds += start.elapsed().as_secs_f64();
        Ok(std::mem::take(&mut self.summary))
    }
}
