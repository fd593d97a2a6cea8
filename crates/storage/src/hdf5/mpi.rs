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
//!   write ever changes metadata. A stream whose count is known only at the end (a run's
//!   `output.when`) is sized for its most frames (`StreamInfo::max_frames`).
//! - `write` (independent): a rank writes the frames of the streams it runs, whenever they
//!   arrive, with independent I/O into space allocated at `begin` (and flushed then), so a
//!   frame written is in the file: nothing is left to flush (`H5Fflush` is collective). A
//!   frame's step is written after its fields; steps never written read as `NO_STEP`, which
//!   is how a reader of a killed job's file counts its frames.
//! - `finish` (collective): the frame counts of all ranks are summed, streams that fell short
//!   (or kept fewer than their most) are shrunk to what they hold, `frames`/`complete`
//!   attributes are written, and the file closes. Before the shrink the file is closed and
//!   opened again, so that every rank's metadata cache starts empty (see `close`).
//!
//! Independent writes cannot go through HDF5 filters, so compression is refused.

use std::path::{Path, PathBuf};

use hdf5::File;
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{AsRaw, Communicator, CommunicatorCollectives, Root};

use super::format::{chunk_shapes, h5err, with_elem_type, write_frame_slab};
use super::schema::{Plan, StreamSets};
use crate::error::{Error, Result};
use crate::frame::Fields;
use crate::frame::Frame;
use crate::options::{Compression, SinkOptions};
use crate::prepare::OutputKind;
use crate::protocol::{Backend, Checked, Outcome};
use crate::ranks::{agree, failed_ranks, short_streams};
use crate::read::OutputFormat;
use crate::schema::StreamLayout;
use crate::time::now_rfc3339;

/// Bytes of the `created` timestamp broadcast from rank 0 (RFC 3339 is far shorter).
const TIMESTAMP_BYTES: usize = 64;

/// State between `begin` and `finish` (shared with [`super::mpi_block`], which writes into
/// the same datasets collectively).
pub(super) struct Shared {
    pub(super) file: File,
    pub(super) layout: StreamLayout,
    pub(super) streams: Vec<StreamSets>,
    pub(super) scratch: Vec<u64>,
    others_complete: bool,
}

/// The backend of [`MpiHdf5Sink`]: writes the streams of every MPI rank into one HDF5 file
/// with the MPI-IO driver.
///
/// Every rank builds one with the same options and calls `begin` with the same layout (all
/// streams of the job, each with `expected_frames` or, when the count is known only at the
/// end, `max_frames`); each rank then writes the frames of
/// its own streams only; every rank calls `finish`. The file holds what
/// [`super::Hdf5Sink`] writes for the same layout, so [`crate::open_output`] and h5py read
/// it. Unlike the serial sink the file is created in place (there is no staging name every
/// rank agrees on), and a killed job leaves a file marked `complete = false` whose datasets
/// keep their full expected length; the steps of frames never written read as `u64::MAX`,
/// and [`crate::open_output`] counts a stream's frames up to the first of them.
pub struct MpiHdf5Backend {
    options: SinkOptions,
    comm: SimpleCommunicator,
    open: Option<Shared>,
}

/// The HDF5 sink shared by the ranks of an MPI job: [`MpiHdf5Backend`] driven through the
/// sink protocol.
pub type MpiHdf5Sink = Checked<MpiHdf5Backend>;

impl MpiHdf5Sink {
    /// A sink writing `options.path` together with the other ranks of `comm`. Give it a
    /// communicator of its own (`world.duplicate()`): its collective calls must not mix with
    /// the caller's on another thread.
    pub fn new(options: SinkOptions, comm: SimpleCommunicator) -> Self {
        Checked::from(MpiHdf5Backend::new(options, comm))
    }
}

impl std::fmt::Debug for MpiHdf5Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiHdf5Backend")
            .field("path", &self.options.path)
            .field("rank", &self.comm.rank())
            .field("ranks", &self.comm.size())
            .finish()
    }
}

impl MpiHdf5Backend {
    /// See [`MpiHdf5Sink::new`].
    pub(super) fn new(options: SinkOptions, comm: SimpleCommunicator) -> Self {
        MpiHdf5Backend { options, comm, open: None }
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
        if let Some(s) = layout.streams.iter().find(|s| s.capacity().is_none()) {
            return Err(Error::InvalidLayout(format!(
                "stream {:?} has neither an expected frame count nor a most: the MPI sink sizes every dataset up \
                 front (give StreamInfo::with_expected_frames or with_max_frames)",
                s.name
            )));
        }
        chunk_shapes(layout, self.options.chunk_frames)
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
        b.with_fapl(|p| super::swmr::file_formats(p, false).mpio(comm, None));
        if appending {
            b.open_rw(self.path())
        } else if self.options.overwrite {
            b.create(self.path())
        } else {
            b.create_excl(self.path())
        }
    }

    /// Whether `begin` appends to an existing file (and so may continue its streams).
    pub(super) fn appending(&self) -> bool {
        self.options.append
    }

    /// The communicator of the collective calls.
    pub(super) fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// The collective creation of the file, its groups and datasets, each stream's datasets
    /// holding its expected frames (`full_length`) or none.
    pub(super) fn create(&mut self, layout: &StreamLayout, full_length: bool) -> Result<Shared> {
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
        let created = self.created();
        let file = agree(
            &self.comm,
            self.open_file(existing.is_some()).map_err(|e| h5err("cannot create (MPI-IO) HDF5 file", &path, e)),
            || format!("opening {}", path.display()),
        )?;
        // From here on every call is collective and takes the same arguments on every rank:
        // HDF5 fails them alike, so each rank returns the same error. Independent writes
        // cannot go through filters (refused above) and must find their chunks allocated.
        let plan = Plan {
            full_length,
            early_allocation: true,
            compression: Compression::None,
            raw_chunks: false,
            chunks,
            in_place: Vec::new(),
            counts_frames: false,
        };
        let streams = super::schema::create(&file, &path, layout, existing.as_ref(), &created, &plan)?;
        Ok(Shared {
            file,
            layout: layout.clone(),
            streams,
            scratch: Vec::new(),
            others_complete: existing.is_none_or(|e| e.others_complete),
        })
    }
}

/// Writes one frame (`fields`) into its stream's datasets, created full length.
fn store(open: &mut Shared, frame: &Frame, fields: Fields<'_>, path: &Path) -> Result<()> {
    let l = &open.layout;
    let n = frame.index;
    let name = &l.streams[frame.stream].name;
    let room = l.streams[frame.stream].capacity().unwrap_or(0);
    if n >= room {
        return Err(Error::FrameMismatch {
            stream: frame.stream,
            index: n,
            reason: format!("stream {name:?} was created for {room} frames"),
        });
    }
    let n = n as usize;
    let sets = &open.streams[frame.stream];
    for ((ds, spec), bytes) in sets.fields.iter().zip(&l.fields).zip(fields.iter()) {
        with_elem_type!(spec.dtype, T => write_frame_slab::<T>(ds, spec, bytes, n, &mut open.scratch))
            .map_err(|e| h5err(format!("cannot write frame {n} of {name}/{} to", spec.name), path, e))?;
    }
    super::schema::write_step(sets, n, frame.step)
        .map_err(|e| h5err(format!("cannot write step of frame {n} of {name} to"), path, e))
}

/// The collective end of a shared file: streams whose datasets are longer than the frames
/// they hold (`frames`, the same on every rank) are shrunk to them, the `frames`/`complete`
/// attributes are written (complete only if no rank `failed`, and not for the streams
/// `short`, the same on every rank), and the file closes.
pub(super) fn close(
    comm: &SimpleCommunicator,
    open: Shared,
    frames: &[u64],
    short: &[usize],
    failed: bool,
    path: &Path,
) -> Result<()> {
    let failed_ranks = failed_ranks(comm, !failed);
    // Closed and opened again, by every rank, before the end's metadata changes: each rank
    // wrote its own streams' frames, so its metadata cache holds other entries than the
    // others' (their chunk index nodes), and the attribute writes below then made one rank
    // enter a collective step of the cache that the others never did: a resumed batch
    // thinned by `output.when` hung in the first one. Opened again, the caches are empty on
    // every rank and the calls below the same.
    // Each collective step agreed on by every rank before the next (a rank whose close or
    // open failed alone must not leave the others waiting in the next one).
    let Shared { file, streams, layout, others_complete, .. } = open;
    drop(streams);
    let closing = || format!("closing {}", path.display());
    agree(comm, file.close().map_err(|e| h5err("cannot close", path, e)), closing)?;
    let comm_raw = comm.as_raw();
    let opened = File::with_options().with_fapl(|p| p.mpio(comm_raw, None)).open_rw(path);
    let file = agree(comm, opened.map_err(|e| h5err("cannot open again", path, e)), || {
        format!("opening {} again", path.display())
    })?;
    let streams = layout
        .streams
        .iter()
        .map(|s| super::schema::open_stream(&file, &layout, &s.name))
        .collect::<hdf5::Result<Vec<_>>>()
        .map_err(|e| h5err("cannot open the streams again in", path, e));
    // Agreed while the file is still held; on an error the datasets close before the file.
    let streams = match agree(comm, streams, || format!("opening the streams of {} again", path.display())) {
        Ok(streams) => streams,
        Err(e) => {
            drop(file);
            return Err(e);
        }
    };
    let l = &layout;
    let finished = (|| -> hdf5::Result<()> {
        for (sets, &n) in streams.iter().zip(frames) {
            if sets.steps.shape().first().is_some_and(|&len| len as u64 > n) {
                super::schema::resize(sets, l, n as usize)?;
            }
        }
        let outcome = Outcome::new(l, frames, !failed_ranks.is_empty()).with_short(short);
        super::schema::mark_complete(&file, &streams, &outcome, others_complete, false)
    })();
    // Under MPI-IO a file closes only when none of its objects is open.
    drop(streams);
    let closed = file.close();
    finished.map_err(|e| h5err("cannot finish", path, e))?;
    closed.map_err(|e| h5err("cannot close", path, e))
}

impl Backend for MpiHdf5Backend {
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        self.check_supported(layout).map(drop)
    }

    /// Appending: a continued stream is cut to its kept frames in `begin` (collectively).
    fn continues_streams(&self) -> bool {
        self.appending()
    }

    /// Collective: every rank calls it with the same layout. The file's structure is flushed
    /// before any frame: from then on a frame is raw data written into space allocated for it
    /// (no metadata changes), so a job killed at any moment leaves a file that opens, holding
    /// every frame written (the step `NO_STEP` marks the others).
    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        // Every rank has the same layout: all refuse it, before any collective call.
        crate::validate::refuse_encoded_fields(layout, "MPI hdf5")?;
        let open = self.create(layout, true)?;
        let path = self.path().to_path_buf();
        let flushed = open.file.flush().map_err(|e| h5err("cannot flush", &path, e));
        self.open = Some(open);
        agree(&self.comm, flushed, || format!("flushing {}", path.display()))
    }

    /// Independent: only the frames of this rank's streams.
    fn write(&mut self, frame: &Frame, fields: Fields<'_>) -> Result<Option<u64>> {
        let path = self.options.path.clone();
        let open = self.open.as_mut().ok_or(Error::Usage("write called before begin"))?;
        store(open, frame, fields, &path).map(|()| None)
    }

    /// Collective: every rank calls it, whatever happened to its own frames.
    fn finish(&mut self, outcome: &Outcome<'_>) -> Result<()> {
        let path: PathBuf = self.options.path.clone();
        let open = self.open.take().ok_or(Error::Usage("finish called without begin"))?;
        // Each stream is written by one rank: its count is the frames it kept from an earlier
        // run (every rank's validator starts there) plus the sum of what the ranks wrote; a
        // stream its rank said ended short (a run thinning its fields stopped after its last
        // kept frame) is short on every rank.
        let n = open.streams.len();
        let kept: Vec<u64> = open.layout.streams.iter().map(|s| s.kept_frames).collect();
        let written: Vec<u64> = outcome.frames().iter().zip(&kept).map(|(f, k)| f.saturating_sub(*k)).collect();
        let mut frames = vec![0u64; n];
        self.comm.all_reduce_into(&written[..], &mut frames[..], SystemOperation::sum());
        for (f, k) in frames.iter_mut().zip(&kept) {
            *f += k;
        }
        let short = short_streams(&self.comm, n, outcome.short());
        close(&self.comm, open, &frames, &short, outcome.failed(), &path)
    }
}
