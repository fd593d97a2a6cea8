//! `mpirun -n R wgpipe run CONFIG` for a single run of a 3-D field kernel: one domain split
//! over the ranks.
//!
//! The ranks form a periodic Cartesian topology (`grid.decomposition`, or `MPI_Dims_create`);
//! each computes its block of the grid on one device with a one-cell ghost layer
//! ([`BlockSim`]). Every step: the block's boundary layers are read back (`read_faces`), sent
//! to the six neighbours and the neighbours' received (all twelve messages posted at once with
//! `MPI_Isend`/`MPI_Irecv`, then waited for; a rank that is its own neighbour along an axis
//! copies), written into the ghost layers, and the step runs. Every frame the ranks agree that all went well, then write their blocks
//! collectively as hyperslabs of one dataset per field ([`MpiBlockSink`]). Noise is drawn
//! from the global cell index, so the file is bit-identical to the same config run on one
//! rank.
//!
//! A rank whose device fails keeps joining the exchanges until the frame ends (its
//! neighbours would otherwise wait forever), then every rank learns of it, the file is
//! closed marked incomplete, and the job ends with an error naming the rank.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, anyhow, bail};
use wgpipe::compute::{Block, BlockSim, Faces, Grid, Side};
use wgpipe::config::Config;
use wgpipe::storage::mpi::collective::SystemOperation;
use wgpipe::storage::mpi::request::multiple_scope;
use wgpipe::storage::mpi::topology::CartesianCommunicator;
use wgpipe::storage::mpi::traits::{Communicator, CommunicatorCollectives, Destination, Source};
use wgpipe::storage::{DType, MpiBlockSink, NullSink, Sink, StreamLayout};
use wgpipe::{Job, Producer};

use super::decompose;
use super::{World, agree_on_output};
use crate::progress::ProgressMode;
use crate::run::{INTERRUPTED, Plan, RunArgs};

/// Seconds each rank spent per part of the run, reduced (max) over the ranks for the report.
#[derive(Default, Clone, Copy)]
struct Times {
    /// The kernel's steps (waited for) and reading the frame's block back.
    compute: f64,
    /// The halo: reading the faces back (one GPU round trip), the MPI exchange, queueing the
    /// ghosts' upload.
    halo: f64,
    /// The MPI exchange alone (part of `halo`).
    mpi: f64,
    /// The collective writes of the frames.
    write: f64,
    /// Closing the file (collective: frame counts, attributes, close).
    close: f64,
    /// From the first step to the closed file.
    wall: f64,
}

impl Times {
    fn to_array(self) -> [f64; 6] {
        [self.compute, self.halo, self.mpi, self.write, self.close, self.wall]
    }
    fn from_array(a: [f64; 6]) -> Self {
        Times { compute: a[0], halo: a[1], mpi: a[2], write: a[3], close: a[4], wall: a[5] }
    }
}

/// The rule under `mpirun`: a config without `[[runs]]` or `[sweep]` (one run) is one domain
/// split over the ranks; a batch is shared out run by run (part 1, [`super::run`]).
pub fn is_split(config: &Config) -> bool {
    config.runs().is_empty()
}

/// The checks only a split run has, alike on every rank.
fn check(config: &Config, args: &RunArgs, ranks: usize) -> anyhow::Result<()> {
    let shape = config.grid_shape();
    if shape.len() != 3 {
        bail!(
            "{}: grid.shape: under mpirun a single run is split over the ranks, which needs a 3-D grid \
             ([nz, ny, nx]); this one is {}-D: run it without mpirun, or give [[runs]] or a [sweep] to share \
             runs over the ranks",
            config.origin("grid.shape"),
            shape.len()
        );
    }
    config.check_ranks(ranks)?;
    if args.resume {
        bail!("--resume: a split run cannot be resumed (its frames are written by every rank together): run it again");
    }
    match config.sink_name() {
        "hdf5" | "null" => Ok(()),
        other => bail!(
            "{}: output.sink = {other:?} cannot hold a domain split over MPI ranks: use hdf5 (one file, every \
             rank writing its block) or null",
            config.origin("output.sink")
        ),
    }
}

/// The stream's layout, exactly as the serial run of the same config on one device makes it
/// (the pipeline's own preflight), plus the split's attributes.
fn layout(
    config: &Config,
    gpu: &wgpipe::compute::GpuDevice,
    ranks: usize,
    dims: &[usize; 3],
) -> anyhow::Result<StreamLayout> {
    let pipeline = config
        .builder()
        .gpus(vec![gpu.clone()])
        .jobs(config.jobs(1, |_| false))
        // As a shard, the layout leaves out this rank's adapter (ranks may differ there).
        .shard(0, ranks)
        .sink(NullSink::default())
        .build()?;
    let mut layout = pipeline.layout().clone();
    layout.attributes.insert("mpi_ranks".to_owned(), (ranks as u64).into());
    layout.attributes.insert("decomposition".to_owned(), decompose::text(dims).into());
    if let Some(f) = layout.fields.iter().find(|f| f.dtype != DType::F32) {
        bail!(
            "field {} would be stored as {}: a run split over MPI ranks writes float32 fields; set output.dtype = \"f32\" \
             (or run it in one process)",
            f.name,
            f.dtype
        );
    }
    Ok(layout)
}

/// The Cartesian neighbours of this rank: `(low, high)` per axis.
fn neighbours(cart: &CartesianCommunicator) -> [(i32, i32); 3] {
    let me = cart.rank();
    std::array::from_fn(|axis| {
        let (low, high) = cart.shift(axis as i32, 1);
        (low.unwrap_or(me), high.unwrap_or(me))
    })
}

/// Sends each face to the neighbour on its side and receives the neighbours' faces into the
/// ghost layers: `ghosts(a, Low)` is the low neighbour's `faces(a, High)`, and the other way.
/// Every receive and send of the step is posted at once (`MPI_Irecv`/`MPI_Isend`, tagged by
/// axis and direction) and waited for together, so a step costs one round of messages rather
/// than one per face; a rank that is its own neighbour along an axis copies instead.
fn exchange(cart: &CartesianCommunicator, near: &[(i32, i32); 3], faces: &Faces, ghosts: &mut Faces) {
    let me = cart.rank();
    // The ghost layers as disjoint slices, in `Faces`' order: axis 0 low, axis 0 high, ...
    let mut slots: Vec<&mut [f32]> = Vec::with_capacity(6);
    let lens = ghosts.lens();
    let mut rest = ghosts.as_mut_slice();
    for len in lens {
        let (slot, tail) = rest.split_at_mut(len);
        slots.push(slot);
        rest = tail;
    }
    let mut slots = slots.into_iter();
    multiple_scope(4 * near.len(), |scope, requests| {
        for (axis, &(low, high)) in near.iter().enumerate() {
            let (Some(ghost_low), Some(ghost_high)) = (slots.next(), slots.next()) else {
                break;
            };
            if low == me && high == me {
                ghost_low.copy_from_slice(faces.get(axis, Side::High));
                ghost_high.copy_from_slice(faces.get(axis, Side::Low));
                continue;
            }
            let (up, down) = (2 * axis as i32, 2 * axis as i32 + 1);
            let (to_low, to_high) = (cart.process_at_rank(low), cart.process_at_rank(high));
            requests.add(to_low.immediate_receive_into_with_tag(scope, ghost_low, up));
            requests.add(to_high.immediate_receive_into_with_tag(scope, ghost_high, down));
            requests.add(to_high.immediate_send_with_tag(scope, faces.get(axis, Side::High), up));
            requests.add(to_low.immediate_send_with_tag(scope, faces.get(axis, Side::Low), down));
        }
        let mut done = Vec::with_capacity(4 * near.len());
        requests.wait_all(&mut done);
    });
}

/// What a rank tells the others at the end of a frame.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Going = 0,
    Stopping = 1,
    Failed = 2,
}

/// Every rank's state at the end of a frame (collective).
fn vote(world: &World, mine: State) -> Vec<u8> {
    let mut all = vec![0u8; world.size()];
    world.comm.all_gather_into(&(mine as u8), &mut all[..]);
    all
}

/// The split run on every rank; `plan` is checked and agreed on by every rank.
pub fn run(args: &RunArgs, world: &World, plan: Plan) -> anyhow::Result<ExitCode> {
    let (rank, size) = (world.rank(), world.size());
    let config = &plan.config;
    let prepared = (|| {
        check(config, args, size)?;
        let dims = decompose::dims(config, size)?;
        let gpu = plan.gpus.first().ok_or_else(|| anyhow!("no device opened"))?.clone();
        let layout = layout(config, &gpu, size, &dims)?;
        Ok((dims, gpu, layout))
    })();
    let (dims, gpu, layout) = world.agree("planning the split domain", prepared)?;
    agree_on_output(world, config, &layout)?;

    let counts = dims.map(|d| d as i32);
    // No reordering: a rank's Cartesian rank is its world rank, as messages name it.
    let cart = world.comm.create_cartesian_communicator(&counts, &[true; 3], false).ok_or_else(|| {
        anyhow!("MPI_Cart_create gave rank {rank} no place in the {} topology", decompose::text(&dims))
    })?;
    let coords: Vec<usize> = cart.rank_to_coordinates(cart.rank()).iter().map(|&c| c.max(0) as usize).collect();
    let shape = config.grid_shape().to_vec();
    let placed = Grid::new(&shape).map_err(anyhow::Error::from).and_then(|grid| {
        let line = decompose::describe(&grid, &dims)?;
        Ok((Block::of_decomposition(&grid, &dims, &coords)?, line))
    });
    let (block, line) = world.agree("placing its block", placed)?;
    if rank == 0 {
        println!("{line}");
    }
    let (offset, block_shape) = (block.offset().to_vec(), block.shape().to_vec());

    let started = start_block(config, &gpu, &block);
    let (sim, stored) = world.agree("starting the block simulation", started)?;
    let mut sink = match config.sink_name() {
        "hdf5" => Some(MpiBlockSink::new(config.sink_options().clone(), world.comm.duplicate(), &offset, &block_shape)),
        _ => None,
    };
    if let Some(s) = &mut sink {
        let begun = s.begin(&layout).with_context(|| format!("{}: output.path", config.origin("output.path")));
        world.agree("creating the shared file", begun)?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let on_ctrl_c = Arc::clone(&stop);
    ctrlc::set_handler(move || on_ctrl_c.store(true, Ordering::Relaxed))
        .context("cannot install the Ctrl-C handler")?;

    let mut stepper = Stepper::new(sim, cart, stored);
    let start = Instant::now();
    let (written, interrupted) = run_frames(args, world, config, &mut stepper, sink.as_mut(), &stop);
    // A write that failed on the last frame is known to its rank only: `finish` (collective)
    // tells the others, and the file is not marked complete.
    let finished = match &mut sink {
        Some(s) => {
            if stepper.failed.is_some() {
                s.fail();
            }
            let t = Instant::now();
            let r = s.finish().map(drop);
            stepper.times.close = t.elapsed().as_secs_f64();
            r
        }
        None => Ok(()),
    };
    stepper.times.wall = start.elapsed().as_secs_f64();
    let outcome = match (stepper.failed.take(), finished) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(anyhow::Error::from(e).context("closing the shared file")),
        (None, Ok(())) => Ok(()),
    };

    let mut slowest = [0f64; 6];
    world.comm.all_reduce_into(&stepper.times.to_array()[..], &mut slowest[..], SystemOperation::max());
    let mut all_written = 0u64;
    world.comm.all_reduce_into(&written, &mut all_written, SystemOperation::min());
    if rank == 0 {
        report(config, &shape, all_written, Times::from_array(slowest), size);
    }
    let outcome =
        outcome.with_context(|| format!("block {} at {}", decompose::text(&block_shape), decompose::text(&offset)));
    world.agree("running the split domain", outcome)?;
    if interrupted {
        if rank == 0 {
            eprintln!(
                "interrupted: {all_written} of {} frames written; the file was closed cleanly (a split run is not \
                 resumable)",
                config.file.run.frames
            );
        }
        return Ok(ExitCode::from(INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}

/// Every frame: its steps, the block read back, the ranks' vote, the collective write.
/// Returns the frames this rank wrote and whether a stop ended the run early.
fn run_frames(
    args: &RunArgs,
    world: &World,
    config: &Config,
    stepper: &mut Stepper,
    mut sink: Option<&mut MpiBlockSink>,
    stop: &AtomicBool,
) -> (u64, bool) {
    let frames = config.file.run.frames;
    let mut progress = Lines::new(args.progress);
    let start = Instant::now();
    let mut written = 0u64;
    for frame in 0..frames {
        for _ in 0..config.file.run.steps_per_frame {
            stepper.step();
        }
        let block = stepper.read_frame(frame);
        let mine = match (&stepper.failed, stop.load(Ordering::Relaxed)) {
            (Some(_), _) => State::Failed,
            (None, true) => State::Stopping,
            (None, false) => State::Going,
        };
        let all = vote(world, mine);
        if all.contains(&(State::Failed as u8)) {
            break;
        }
        if let Some(s) = sink.as_deref_mut() {
            let t = Instant::now();
            let cells = block.len() / stepper.stored.len().max(1);
            let parts: Vec<&[f32]> = block.chunks(cells.max(1)).collect();
            if let Err(e) = s.write_block_f32(stepper.sim.steps(), &parts) {
                stepper.fail(e, format!("writing frame {frame}"));
            }
            stepper.times.write += t.elapsed().as_secs_f64();
        }
        if stepper.failed.is_none() {
            written += 1;
        }
        if world.rank() == 0 {
            progress.frame_done(written, frames, start.elapsed().as_secs_f64());
        }
        if all.contains(&(State::Stopping as u8)) && frame + 1 < frames {
            return (written, true);
        }
    }
    (written, false)
}

/// This rank's block of the job's initial state on its device, and the indices of the stored
/// fields.
fn start_block(
    config: &Config,
    gpu: &wgpipe::compute::GpuDevice,
    block: &Block,
) -> anyhow::Result<(BlockSim, Vec<usize>)> {
    let Some(Job { producer: Producer::Kernel { kernel, init }, .. }) = config.jobs(1, |_| false).into_iter().next()
    else {
        bail!("a split run needs a field kernel");
    };
    let fields = kernel.field_indices(config.output_fields())?;
    let initial = block.extract(&init(block.global()), kernel.fields.len())?;
    let sim = BlockSim::new(gpu, &kernel, block, &initial)?;
    Ok((sim, fields))
}

/// This rank's part of the run between the start and the file's end: its block simulation,
/// its place in the topology, its times, and the first error it met.
struct Stepper {
    sim: BlockSim,
    cart: CartesianCommunicator,
    near: [(i32, i32); 3],
    ghosts: Faces,
    /// Fields of the kernel (all exchanged).
    nfields: usize,
    /// Stored fields (indices into the kernel's).
    stored: Vec<usize>,
    times: Times,
    failed: Option<anyhow::Error>,
}

impl Stepper {
    fn new(sim: BlockSim, cart: CartesianCommunicator, stored: Vec<usize>) -> Self {
        let nfields = sim.spec().fields.len();
        let ghosts = Faces::new(sim.block(), nfields);
        let near = neighbours(&cart);
        Stepper { sim, cart, near, ghosts, nfields, stored, times: Times::default(), failed: None }
    }

    fn fail(&mut self, e: impl Into<anyhow::Error>, what: String) {
        self.failed = Some(e.into().context(what));
    }

    /// One step: faces out, ghosts in, the kernel. A rank that failed still joins the
    /// exchange (with zero faces) so that its neighbours do not wait forever.
    fn step(&mut self) {
        let t = Instant::now();
        let faces = match &self.failed {
            None => match self.sim.read_faces() {
                Ok(f) => f,
                Err(e) => {
                    self.fail(e, "reading the faces back".to_owned());
                    Faces::new(self.sim.block(), self.nfields)
                }
            },
            Some(_) => Faces::new(self.sim.block(), self.nfields),
        };
        let m = Instant::now();
        exchange(&self.cart, &self.near, &faces, &mut self.ghosts);
        self.times.mpi += m.elapsed().as_secs_f64();
        if self.failed.is_none()
            && let Err(e) = self.sim.write_ghosts(&self.ghosts)
        {
            self.fail(e, "writing the ghost layers".to_owned());
        }
        self.times.halo += t.elapsed().as_secs_f64();
        if self.failed.is_none() {
            let t = Instant::now();
            // `run_step` only queues the step: waiting for it here charges the kernel to
            // compute rather than to the next `read_faces`, which would wait for it anyway.
            let gpu = self.sim.gpu().clone();
            if let Err(e) = self.sim.run_step().and_then(|()| gpu.wait(gpu.queue().submit([]))) {
                let step = self.sim.steps();
                self.fail(e, format!("step {step}"));
            }
            self.times.compute += t.elapsed().as_secs_f64();
        }
    }

    /// The stored fields of the block after `frame`'s steps (empty after a failure).
    fn read_frame(&mut self, frame: u64) -> Vec<f32> {
        if self.failed.is_some() {
            return Vec::new();
        }
        let t = Instant::now();
        let block = self.sim.read_block(&self.stored).unwrap_or_else(|e| {
            self.fail(e, format!("reading frame {frame} back"));
            Vec::new()
        });
        self.times.compute += t.elapsed().as_secs_f64();
        block
    }
}

/// Prints the run's figures (rank 0): the slowest rank's time per frame in each part.
fn report(config: &Config, shape: &[usize], frames: u64, t: Times, ranks: usize) {
    let cells: f64 = shape.iter().map(|&n| n as f64).product();
    let steps = frames as f64 * f64::from(config.file.run.steps_per_frame);
    let per = |s: f64| if frames == 0 { 0.0 } else { s * 1e3 / frames as f64 };
    let rate = if t.wall > 0.0 { cells * steps / t.wall } else { 0.0 };
    println!(
        "frames {frames}, steps {steps}, wall {:.3} s, {rate:.3e} cell-steps/s over {ranks} rank{}",
        t.wall,
        if ranks == 1 { "" } else { "s" }
    );
    println!(
        "per frame, slowest rank: compute {:.2} ms, halo {:.2} ms (MPI exchange {:.2} ms), write {:.2} ms; \
         closing the file {:.3} s",
        per(t.compute),
        per(t.halo),
        per(t.mpi),
        per(t.write),
        t.close
    );
    let shown = if config.sink_name() == "null" {
        "null sink (nothing stored)".to_owned()
    } else {
        config.output_path().display().to_string()
    };
    println!("output: {shown}");
}

/// Rank 0's progress lines during a split run (frames are written by all ranks together, so
/// rank 0's count is the job's): `--progress frames` a line per frame, `plain` (and `auto`)
/// a line every 2 s, `json` and `none` nothing.
struct Lines {
    mode: ProgressMode,
    last: f64,
}

impl Lines {
    fn new(mode: ProgressMode) -> Self {
        Lines { mode, last: 0.0 }
    }

    fn frame_done(&mut self, written: u64, frames: u64, seconds: f64) {
        let due = match self.mode {
            ProgressMode::Frames => true,
            ProgressMode::Auto | ProgressMode::Plain => seconds - self.last >= 2.0 || written == frames,
            ProgressMode::Json | ProgressMode::None => false,
        };
        if due {
            self.last = seconds;
            eprintln!("[{seconds:>6.1} s] written {written}/{frames} frames");
        }
    }
}
