//! One grid split over the ranks of an MPI communicator (feature `mpi`), run by the same
//! pipeline as every other run: [`crate::PipelineBuilder::split_domain`].
//!
//! The ranks form a periodic Cartesian topology (the decomposition given, or
//! `MPI_Dims_create`'s); each computes its [`Block`] of the grid on one device with a one-cell
//! ghost layer ([`BlockSim`]). The block is the job's [`wgpipe_compute::FrameSource`]: every
//! step its faces are read back, sent to the six neighbours and theirs received
//! (`MPI_Isend`/`MPI_Irecv`, all at once), written into the ghosts, and the step runs; at the
//! end of the frame the block's stored fields go through the staging ring to the writer
//! thread, whose sink writes them as the rank's hyperslab of the frame
//! ([`SplitDomain::block_sink`]: one HDF5 file, collective writes). Noise is drawn from the
//! global cell index, so the output is bit-identical to the same run in one process. With an
//! analysis, each rank reduces its block and the ranks combine the results before the frame
//! leaves the device thread (`reductions.rs`): every rank's frame ends with the whole grid's
//! reductions, which rank 0 writes.
//!
//! The ranks stop together: after each frame, before handing it off, they vote
//! ([`crate::lockstep`]): a stop on any rank ([`crate::StopHandle`]) ends every rank's run
//! after that frame ([`crate::Error::Interrupted`]); a device failure on any rank (which keeps
//! joining the exchanges until the frame ends, so its neighbours never wait) or a failed
//! write ends every rank's run before it ([`crate::Error::Failed`], naming the ranks).
//!
//! MPI must be initialised with `Threading::Multiple`: the device thread (exchange, votes)
//! and the writer thread (collective writes) call MPI at the same time, each on a
//! communicator of its own. A rank that panics leaves the others waiting unless a panic hook
//! calls `MPI_Abort`: [`crate::ranks::initialize`] does both.
//!
//! ```no_run
//! use wgpipe::compute::gray_scott_3d::GrayScott3dParams;
//! use wgpipe::split::SplitDomain;
//! use wgpipe::storage::SinkOptions;
//! use wgpipe::Pipeline;
//!
//! let universe = wgpipe::ranks::initialize()?;
//! let split = SplitDomain::new(&universe.world(), &[32, 32, 32], None)?;
//! let report = Pipeline::builder()
//!     .shape([32, 32, 32])
//!     .gray_scott_3d(GrayScott3dParams::default(), 1)
//!     .sink(split.block_sink(SinkOptions::new("split.h5")))
//!     .split_domain(split)
//!     .run()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod checkpoints;
mod decompose;
mod exchange;
mod figures;
mod reductions;
mod source;
mod votes;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mpi::Threading;
use mpi::topology::{CartesianCommunicator, SimpleCommunicator};
use mpi::traits::Communicator;
use wgpipe_compute::zfp::ZfpRate;
use wgpipe_compute::{
    AnalysisSpec, Block, BlockAnalysis, BlockSim, FieldEncoding, GpuDevice, Grid, KernelSpec, OutputDType,
};
use wgpipe_storage::{Attributes, DType, FieldSpec, MpiBlockSink, SinkOptions, StreamLayout};

use crate::analysis::Analysis;
use crate::checkpoint::{SavedState, Saver};
use crate::error::{Error, Result};
use crate::job::{InitFn, Job, Producer};
use crate::lockstep::Lockstep;
use checkpoints::GatherToRankZero;
pub use figures::{SplitFigures, SplitSeconds};
use source::BlockFrames;
use votes::MpiVotes;

/// One grid split over the ranks of a communicator: the decomposition, this rank's block
/// and the communicators its run uses. Built collectively by every rank
/// ([`SplitDomain::new`]), given to [`crate::PipelineBuilder::split_domain`]; a clone kept
/// by the caller reads the halo's times after the run ([`SplitDomain::halo_seconds`]).
#[derive(Clone)]
pub struct SplitDomain {
    topology: Arc<Topology>,
    times: Arc<HaloTimes>,
}

impl std::fmt::Debug for SplitDomain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SplitDomain")
            .field("rank", &self.rank())
            .field("decomposition", &self.topology.dims)
            .field("block", &self.topology.block)
            .finish()
    }
}

/// What a split domain makes of a run: this rank's one job (its block), the votes with the
/// other ranks, and how checkpoints are gathered.
pub(crate) struct SplitRun {
    pub(crate) jobs: Vec<Job>,
    /// The layout of the frames this rank produces: its block of the grid's fields, the
    /// whole grid's reductions.
    pub(crate) produced: StreamLayout,
    pub(crate) lockstep: Lockstep,
    pub(crate) saver: Box<dyn Saver>,
}

/// The ranks' layout and the communicators of one split domain.
pub(crate) struct Topology {
    /// The caller's ranks (duplicated): sinks get duplicates of it.
    comm: SimpleCommunicator,
    /// The periodic Cartesian topology: the halo exchange.
    pub(crate) cart: CartesianCommunicator,
    /// The votes at frame boundaries (the device thread's).
    pub(crate) votes: SimpleCommunicator,
    /// The gathers of checkpoints (the writer thread's, beside the sink's own).
    pub(crate) checkpoints: SimpleCommunicator,
    dims: [usize; 3],
    block: Block,
}

/// Seconds this rank spent on the halo, summed over the steps.
#[derive(Debug, Default)]
pub(crate) struct HaloTimes(Mutex<[f64; 2]>);

impl HaloTimes {
    /// One step's halo: the whole of it, and the MPI exchange within it.
    pub(crate) fn add(&self, halo: Duration, mpi: Duration) {
        let mut t = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        t[0] += halo.as_secs_f64();
        t[1] += mpi.as_secs_f64();
    }

    fn get(&self) -> [f64; 2] {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SplitDomain {
    /// Splits the 3-D grid `shape` (`[nz, ny, nx]`) over the ranks of `comm`: `decomposition`
    /// ranks along z, y and x (their product the communicator's size), or `None` for
    /// `MPI_Dims_create`'s balanced choice. Collective: every rank of `comm` calls it with the
    /// same arguments (it creates the Cartesian topology and the run's communicators).
    /// Errors, alike on every rank, for a grid that is not 3-D, a decomposition that does not
    /// fit the ranks or the grid, or MPI initialised without `Threading::Multiple`.
    pub fn new(comm: &SimpleCommunicator, shape: &[usize], decomposition: Option<[usize; 3]>) -> Result<Self> {
        if mpi::environment::threading_support() != Threading::Multiple {
            return Err(Error::Invalid(
                "a split domain needs MPI initialised with Threading::Multiple (its device and writer threads call \
                 MPI at the same time): use mpi::initialize_with_threading(Threading::Multiple)"
                    .to_owned(),
            ));
        }
        if shape.len() != 3 {
            return Err(Error::Invalid(format!(
                "a split domain needs a 3-D grid ([nz, ny, nx]); {shape:?} is {}-D",
                shape.len()
            )));
        }
        let grid = Grid::new(shape)?;
        let ranks = comm.size().max(1) as usize;
        let dims = decompose::dims(&grid, ranks, decomposition)?;
        let counts = dims.map(|d| d as i32);
        // No reordering: a rank's Cartesian rank is its rank in `comm`, as messages name it.
        let cart = comm.create_cartesian_communicator(&counts, &[true; 3], false).ok_or_else(|| {
            Error::Invalid(format!("MPI_Cart_create gave rank {} no place in the {dims:?} topology", comm.rank()))
        })?;
        let coords: Vec<usize> = cart.rank_to_coordinates(cart.rank()).iter().map(|&c| c.max(0) as usize).collect();
        let block = Block::of_decomposition(&grid, &dims, &coords)?;
        let (comm, votes, checkpoints) = (comm.duplicate(), cart.duplicate(), comm.duplicate());
        let topology = Topology { comm, cart, votes, checkpoints, dims, block };
        Ok(SplitDomain { topology: Arc::new(topology), times: Arc::default() })
    }

    /// This rank's block of the grid.
    pub fn block(&self) -> &Block {
        &self.topology.block
    }

    /// Ranks along z, y and x.
    pub fn decomposition(&self) -> [usize; 3] {
        self.topology.dims
    }

    /// This rank (in the communicator given to [`SplitDomain::new`]).
    pub fn rank(&self) -> usize {
        self.topology.comm.rank().max(0) as usize
    }

    /// Ranks in the split.
    pub fn ranks(&self) -> usize {
        self.topology.dims.iter().product()
    }

    /// A line for people: the grid, the split and the blocks (the largest when they differ),
    /// e.g. `domain 23x20x16 split 2x1x1 over 2 ranks, blocks up to 12x20x16`.
    pub fn describe(&self) -> String {
        let (global, dims) = (self.topology.block.global(), &self.topology.dims);
        decompose::describe(global, dims)
            .unwrap_or_else(|_| format!("domain {global} split {}", self.decomposition_text()))
    }

    /// The decomposition as the output records it (attribute `decomposition`): `2x1x1`.
    pub fn decomposition_text(&self) -> String {
        decompose::text(&self.topology.dims)
    }

    /// The sink that writes this rank's block of every frame into one HDF5 file shared by
    /// every rank (`options.path`). Collective: every rank calls it (it duplicates the
    /// communicator for the sink's own collective calls).
    pub fn block_sink(&self, options: SinkOptions) -> MpiBlockSink {
        let block = &self.topology.block;
        MpiBlockSink::new(options, self.topology.comm.duplicate(), block.offset(), block.shape())
    }

    /// The sink that stores nothing of this rank's block of every frame (`output.sink =
    /// "null"`: the run measured without storage).
    pub fn null_block_sink(&self) -> wgpipe_storage::NullBlockSink {
        let block = &self.topology.block;
        wgpipe_storage::NullBlockSink::new(block.offset(), block.shape())
    }

    /// The sink that writes this rank's block of every frame into one Zarr store shared by
    /// every rank (`options.path`), each rank its own chunks (one frame of one block each).
    /// Collective, like [`SplitDomain::block_sink`].
    #[cfg(feature = "zarr")]
    pub fn zarr_block_sink(&self, options: SinkOptions) -> wgpipe_storage::ZarrBlockSink {
        let block = &self.topology.block;
        wgpipe_storage::ZarrBlockSink::new(options, self.topology.comm.duplicate(), block.offset(), block.shape())
    }

    /// Seconds this rank spent on the halo so far (reading faces back, the exchange, writing
    /// the ghosts), and within that the MPI exchange alone. Part of the report's compute time.
    pub fn halo_seconds(&self) -> (f64, f64) {
        let [halo, mpi] = self.times.get();
        (halo, mpi)
    }

    /// The block's grid, for the sizes `build` checks, after checking that the builder's
    /// grid is the split's.
    pub(crate) fn sized_grid(&self, shape: &[usize]) -> Result<Grid> {
        let global = self.topology.block.global();
        if shape != global.shape() {
            return Err(Error::Invalid(format!(
                "the grid {shape:?} is not the split domain's {:?}: give .shape(..) the shape given to SplitDomain::new",
                global.shape()
            )));
        }
        Ok(*self.topology.block.grid())
    }

    /// Turns a run's one kernel job into this rank's block source (resuming from this rank's
    /// block of the job's checkpoint, which holds the whole grid), and `layout` (computed for
    /// the block, see [`SplitDomain::sized_grid`]; its first `grid_fields` fields the grid's,
    /// then `analysis`'s reductions) into the whole grid's, as every rank writes it: the
    /// serial run's, with attributes `mpi_ranks` and `decomposition`, without the adapters
    /// (ranks may differ there). Also returns the layout of the frames the rank produces and
    /// how checkpoints are saved: the ranks' blocks gathered into one file.
    pub(crate) fn into_run(
        self,
        encoding: FieldEncoding,
        steps_per_frame: u32,
        jobs: Vec<Job>,
        devices: usize,
        (analysis, grid_fields): (&Analysis, usize),
        layout: &mut StreamLayout,
    ) -> Result<SplitRun> {
        let zfp = check_split_run(devices, encoding)?;
        let KernelJob { name, kernel, init, mut attributes, resume } = one_kernel_job(jobs)?;
        let fields = kernel.fields.len();
        let block_of = |saved: SavedState| -> Result<SavedState> {
            let state = self.topology.block.extract(&checkpoints::values(&saved.state), fields)?;
            Ok(SavedState { state: checkpoints::bytes(&state), ..saved })
        };
        let resume = resume.map(block_of).transpose()?;
        let names: Vec<String> = layout.fields.iter().take(grid_fields).map(|f| f.name.clone()).collect();
        let stored = kernel.field_indices(&names)?;
        let block = self.topology.block.clone();
        // The grid's fields are the whole grid's, written block by block; the reductions are
        // the whole grid's (combined over the ranks, see `source.rs`), every rank holding them.
        // The axes' names as a whole grid's layout names them (`layout.rs`).
        let dims = FieldSpec::new("grid", DType::F32, block.global().shape()).dims;
        let reductions =
            if analysis.is_empty() { Vec::new() } else { analysis.stored_fields(&kernel, block.global(), &dims)? };
        let analysis = if analysis.is_empty() { None } else { Some(analysis.spec(&kernel)?) };
        if let Some(spec) = analysis.as_ref() {
            self.check_coarse_cells(spec)?;
        }
        layout.fields.truncate(grid_fields);
        let produced = block_layout(layout, &reductions, analysis.as_ref(), &block);
        let frame_bytes = produced.frame_bytes()?;
        for f in &mut layout.fields {
            f.shape = block.global().shape().to_vec();
        }
        layout.fields.extend(reductions);
        self.shared_attributes(layout);
        attributes.remove("device");

        let votes = MpiVotes { topology: Arc::clone(&self.topology) };
        let saver = Box::new(GatherToRankZero { topology: Arc::clone(&self.topology), fields });
        let lockstep = Lockstep { agreement: Arc::new(votes), frame_bytes, cells: block.cells() as u64 };
        let (topology, times) = (self.topology, self.times);
        let job = Job::from_source(name, move |gpu: &GpuDevice| {
            let initial = block.extract(&init(block.global()), fields)?;
            let sim = BlockSim::new(gpu, &kernel, &block, &initial)?;
            let analysis = analysis.as_ref().map(|spec| BlockAnalysis::new(&sim, spec)).transpose()?;
            let frames =
                BlockFrames::new(sim, topology, stored, steps_per_frame, times).with_zfp(zfp)?.with_analysis(analysis);
            Ok(Box::new(frames) as Box<dyn wgpipe_compute::FrameSource>)
        });
        Ok(SplitRun { jobs: vec![Job { attributes, resume, ..job }], produced, lockstep, saver })
    }

    /// Errors unless every coarse cell of `spec`'s downsampling lies in one block: the
    /// block starts at a multiple of the factor on every axis.
    fn check_coarse_cells(&self, spec: &AnalysisSpec) -> Result<()> {
        let block = &self.topology.block;
        if spec.starts_coarse_cells(block.offset()) {
            return Ok(());
        }
        let k = spec.factor();
        Err(Error::Invalid(format!(
            "analysis.downsample = {k} with a domain split over MPI ranks needs every block to start at a \
             multiple of {k} on every axis (so that each coarse cell lies in one block); the block at {:?} of \
             the decomposition {} does not: choose a grid.decomposition whose blocks do, or another factor",
            block.offset(),
            self.decomposition_text()
        )))
    }

    /// `layout`'s attributes as every rank writes them: what differs between ranks (their
    /// adapters and devices) left out, the ranks and the decomposition added.
    fn shared_attributes(&self, layout: &mut StreamLayout) {
        layout.attributes.remove("adapters");
        for s in &mut layout.streams {
            s.attributes.remove("device");
        }
        layout.attributes.insert("mpi_ranks".to_owned(), (self.ranks() as u64).into());
        layout.attributes.insert("decomposition".to_owned(), self.decomposition_text().into());
    }
}

/// Errors unless a split run has what it needs: one device per rank, and fields stored as
/// float32 values or as ZFP streams of each rank's block; returns the rate of those.
fn check_split_run(devices: usize, encoding: FieldEncoding) -> Result<Option<ZfpRate>> {
    if devices != 1 {
        return Err(Error::Invalid(format!(
            "a split domain runs its block on one device per rank, and {devices} were given: open one \
             (.devices(selector, 1) or .gpus(vec![gpu]))"
        )));
    }
    match encoding {
        FieldEncoding::Values(OutputDType::F32) => Ok(None),
        FieldEncoding::Values(output_dtype) => Err(Error::Invalid(format!(
            "fields would be stored as {output_dtype}: a run split over MPI ranks writes float32 fields; \
             use .output_dtype(OutputDType::F32) (or run it in one process)"
        ))),
        // Each rank encodes its block; the sink stores each block's stream as its chunk.
        FieldEncoding::Zfp(rate) => Ok(Some(rate)),
    }
}

/// The parts of a split run's one job: a field kernel's.
struct KernelJob {
    name: String,
    kernel: KernelSpec,
    init: InitFn,
    attributes: Attributes,
    resume: Option<SavedState>,
}

/// The one kernel job of `jobs`, or why a split domain cannot run them.
fn one_kernel_job(mut jobs: Vec<Job>) -> Result<KernelJob> {
    let (Some(job), true) = (jobs.pop(), jobs.is_empty()) else {
        return Err(Error::Invalid(
            "a split domain runs one stream: give one kernel job (.gray_scott_3d(..), .kernel(..) or one job)"
                .to_owned(),
        ));
    };
    let Job { name, producer: Producer::Kernel { kernel, init }, attributes, resume } = job else {
        return Err(Error::Invalid("a split domain runs a field kernel on its blocks, not a frame source".to_owned()));
    };
    Ok(KernelJob { name, kernel, init, attributes, resume })
}

/// The layout of the frames a rank produces: `layout`'s grid fields (its block's shape,
/// [`SplitDomain::sized_grid`]), then the `reductions`, a downsampled field as the block's
/// own coarse cells (`BlockAnalysis`): its block of the whole grid's coarse field, told apart
/// by that field's shape, as the block sinks tell it (`MpiBlockSink::downsampled`).
fn block_layout(
    layout: &StreamLayout,
    reductions: &[FieldSpec],
    analysis: Option<&AnalysisSpec>,
    block: &Block,
) -> StreamLayout {
    let mut produced = layout.clone();
    let coarse = analysis.filter(|s| s.factor() > 1).map(|s| (s.coarse_shape(block.global()), s));
    produced.fields.extend(reductions.iter().cloned().map(|mut f| {
        if let Some((whole, spec)) = &coarse
            && f.shape == *whole
        {
            f.shape = spec.coarse_shape(block.grid());
        }
        f
    }));
    produced
}
