//! Progress of an MPI job, shown by rank 0 for every rank: the counts gathered across the
//! ranks by the library ([`wgpipe::ranks::ProgressGather`]), printed here.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wgpipe::Progress;
use wgpipe::ranks::{ProgressGather, RankCounts};
use wgpipe::storage::mpi::traits::Communicator;

use super::World;
use crate::progress::ProgressMode;

/// Starts gathering every rank's progress (every 0.2 s with `--progress frames`, else 2 s):
/// rank 0 prints a line per gather (`frames`: per frame written), the other ranks nothing.
pub fn start(world: &World, progress: Arc<Progress>, mode: ProgressMode) -> ProgressGather {
    let period = if mode == ProgressMode::Frames { Duration::from_millis(200) } else { Duration::from_secs(2) };
    let show = world.rank() == 0 && mode != ProgressMode::None;
    let (start, mut shown) = (Instant::now(), None);
    ProgressGather::start(world.comm.duplicate(), progress, period, move |counts: &[RankCounts]| {
        let written: u64 = counts.iter().map(|c| c.written).sum();
        let total: u64 = counts.iter().map(|c| c.total).sum();
        if !show || (mode == ProgressMode::Frames && shown == Some(written)) {
            return;
        }
        shown = Some(written);
        if mode == ProgressMode::Frames {
            say!("written {written}/{total} frames");
            return;
        }
        let per_rank: Vec<String> = counts.iter().map(|c| format!("{}/{}", c.written, c.total)).collect();
        let at = start.elapsed().as_secs_f64();
        say!("[{at:>6.1} s] written {written}/{total} frames (per rank: {})", per_rank.join(", "));
    })
}
