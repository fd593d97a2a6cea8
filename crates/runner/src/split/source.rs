//! A rank's block of a split domain as a [`FrameSource`]: each frame runs its steps with the
//! halo exchange, then records the copy of the block's stored fields into the staging ring,
//! so the device thread reads it back like any other frame.

use std::sync::Arc;
use std::time::Instant;

use wgpipe_compute::zfp::ZfpRate;
use wgpipe_compute::{BlockAnalysis, BlockSim, BlockStatistics, Faces, FrameSource, GpuDevice, wgpu};

use super::exchange::{exchange, neighbours};
use super::reductions::{combine_counts, combine_statistics};
use super::{HaloTimes, Topology};
use crate::job::BoxError;

/// One rank's block simulation, its place in the topology, and the first error it met.
pub(crate) struct BlockFrames {
    sim: BlockSim,
    topology: Arc<Topology>,
    near: [(i32, i32); 3],
    ghosts: Faces,
    /// Fields of the kernel (all exchanged).
    fields: usize,
    /// Stored fields (indices into the kernel's).
    stored: Vec<usize>,
    steps_per_frame: u32,
    times: Arc<HaloTimes>,
    /// The first error of this frame: the rank goes on joining the exchanges (with zero
    /// faces) until the frame ends, so its neighbours never wait forever.
    failed: Option<String>,
    /// The frame's analysis, combined over the ranks (`reductions.rs`): the whole grid's
    /// reductions follow the block's fields in every rank's frame.
    analysis: Option<BlockAnalysis>,
    /// The rate the stored fields leave the device at as ZFP streams of the block, if they do.
    zfp: Option<ZfpRate>,
}

impl BlockFrames {
    pub(crate) fn new(
        sim: BlockSim,
        topology: Arc<Topology>,
        stored: Vec<usize>,
        steps_per_frame: u32,
        times: Arc<HaloTimes>,
    ) -> Self {
        let fields = sim.spec().fields.len();
        let ghosts = Faces::new(sim.block(), fields);
        let near = neighbours(&topology.cart);
        BlockFrames {
            sim,
            topology,
            near,
            ghosts,
            fields,
            stored,
            steps_per_frame,
            times,
            failed: None,
            analysis: None,
            zfp: None,
        }
    }

    /// Stores the fields as ZFP streams of the block at `rate` (`None`: as values), encoded on
    /// the device after the frame's steps and analysis.
    pub(crate) fn with_zfp(mut self, rate: Option<ZfpRate>) -> Result<Self, wgpipe_compute::Error> {
        if let Some(rate) = rate {
            self.sim = self.sim.with_zfp(&self.stored, rate)?;
        }
        self.zfp = rate;
        Ok(self)
    }

    /// Adds the analysis of each frame (the same on every rank: each rank makes its
    /// collective calls).
    pub(crate) fn with_analysis(mut self, analysis: Option<BlockAnalysis>) -> Self {
        self.analysis = analysis;
        self
    }

    /// The whole grid's PDF counts of the frame the block holds now, after the whole grid's
    /// statistics are given to the analysis; `None` without an analysis. A rank that failed
    /// still joins both combinations (with nothing of its own), so that no rank waits.
    fn analyse(&mut self) -> Option<Vec<Vec<u32>>> {
        let analysis = self.analysis.as_ref()?;
        let n = analysis.fields();
        let mine = match self.failed {
            None => analysis.statistics(&self.sim).unwrap_or_else(|e| {
                self.failed.get_or_insert(format!("analysing the block: {e}"));
                vec![BlockStatistics::NONE; n]
            }),
            Some(_) => vec![BlockStatistics::NONE; n],
        };
        let whole = combine_statistics(&self.topology.cart, &mine);
        let cells = self.sim.block().global().cells() as u64;
        let counts = match self.failed {
            None => analysis.set_whole(&whole, cells).and_then(|()| analysis.counts()).unwrap_or_else(|e| {
                self.failed.get_or_insert(format!("analysing the block: {e}"));
                vec![vec![0; analysis.pdf_len()]; n]
            }),
            Some(_) => vec![vec![0; analysis.pdf_len()]; n],
        };
        Some(combine_counts(&self.topology.cart, &counts))
    }

    /// Bytes of the block's stored fields (their values or their streams), which lead each
    /// frame.
    fn fields_bytes(&self) -> u64 {
        let field = self.sim.zfp_stream_bytes().unwrap_or((self.sim.block().cells() * 4) as u64);
        self.stored.len() as u64 * field
    }

    fn fail(&mut self, what: String) {
        self.failed.get_or_insert(what);
    }

    /// One step: faces out, ghosts in, the kernel (waited for, so that its time is the
    /// kernel's and not the next exchange's). A rank that failed still joins the exchange.
    fn step(&mut self) {
        let start = Instant::now();
        let faces = match self.failed {
            None => self.sim.read_faces().unwrap_or_else(|e| {
                self.fail(format!("reading the faces back: {e}"));
                Faces::new(self.sim.block(), self.fields)
            }),
            Some(_) => Faces::new(self.sim.block(), self.fields),
        };
        let mpi = Instant::now();
        exchange(&self.topology.cart, &self.near, &faces, &mut self.ghosts);
        let mpi = mpi.elapsed();
        if self.failed.is_none()
            && let Err(e) = self.sim.write_ghosts(&self.ghosts)
        {
            self.fail(format!("writing the ghost layers: {e}"));
        }
        self.times.add(start.elapsed(), mpi);
        if self.failed.is_none() {
            let gpu: GpuDevice = self.sim.gpu().clone();
            if let Err(e) = self.sim.run_step().and_then(|()| gpu.wait(gpu.queue().submit([]))) {
                self.fail(format!("step {}: {e}", self.sim.steps()));
            }
        }
    }
}

impl FrameSource for BlockFrames {
    fn frame_bytes(&self) -> u64 {
        self.fields_bytes() + self.analysis.as_ref().map_or(0, BlockAnalysis::frame_bytes)
    }

    fn encode_frame(
        &mut self,
        index: u64,
        encoder: &mut wgpu::CommandEncoder,
        staging: &wgpu::Buffer,
    ) -> Result<u64, BoxError> {
        for _ in 0..self.steps_per_frame {
            self.step();
        }
        let counts = self.analyse();
        if let Some(e) = self.failed.take() {
            return Err(format!("block at {:?} of frame {index}: {e}", self.sim.block().offset()).into());
        }
        if self.zfp.is_some() {
            self.sim.encode_block_streams(encoder, staging)?;
        } else {
            self.sim.encode_block_copy(encoder, &self.stored, staging);
        }
        if let (Some(analysis), Some(counts)) = (&self.analysis, counts) {
            analysis.encode_results(encoder, &counts, staging, self.fields_bytes())?;
        }
        Ok(self.sim.steps())
    }

    /// The block's own cells of every field (the ghosts are exchanged again before each step).
    fn state_bytes(&self) -> u64 {
        (self.fields * self.sim.block().cells() * 4) as u64
    }

    fn encode_state(&mut self, encoder: &mut wgpu::CommandEncoder, staging: &wgpu::Buffer) -> Result<(), BoxError> {
        let all: Vec<usize> = (0..self.fields).collect();
        self.sim.encode_block_copy(encoder, &all, staging);
        Ok(())
    }

    /// A new simulation of the block from the saved cells, at the step after frame `next - 1`.
    fn restore_state(&mut self, state: &[u8], next: u64) -> Result<(), BoxError> {
        if state.len() as u64 != self.state_bytes() {
            return Err(format!(
                "a saved block state of {} bytes cannot restore block {:?} ({} bytes)",
                state.len(),
                self.sim.block().shape(),
                self.state_bytes()
            )
            .into());
        }
        let values = super::checkpoints::values(state);
        let sim = BlockSim::new(self.sim.gpu(), self.sim.spec(), self.sim.block(), &values)?;
        let sim = match self.zfp {
            Some(rate) => sim.with_zfp(&self.stored, rate)?,
            None => sim,
        };
        self.sim = sim.starting_at_step(next.saturating_mul(u64::from(self.steps_per_frame)));
        Ok(())
    }
}
