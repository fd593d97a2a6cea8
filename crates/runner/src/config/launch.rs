//! A config made ready to run exactly as `wgpipe run` runs it: the checks of the output
//! path, what resuming finds in an existing output, the devices opened, the jobs still to
//! run. The binary and the Python package both start runs here, so they run the same thing.

use std::collections::BTreeMap;

use wgpipe_compute::{GpuDevice, open_devices};
use wgpipe_storage::Sink;

use super::{Config, resume};
use crate::config_error::ConfigError;
use crate::error::Result;
use crate::{Job, Pipeline, StopHandle};

/// A checked config with its devices open and the jobs it still has to run (see
/// [`Config::launch`]). Build its pipeline with [`Launch::pipeline`], or, for a sink of your
/// own around [`Launch::open_sink`]'s, with [`Config::build`].
#[derive(Debug)]
pub struct Launch {
    /// The checked config.
    pub config: Config,
    /// The devices `devices.select` and `devices.count` opened.
    pub gpus: Vec<GpuDevice>,
    /// The jobs to run: every stream, or when resuming those not complete in the output,
    /// continuing from their checkpoints where they can. Empty when a resume finds every
    /// stream complete: nothing to do.
    pub jobs: Vec<Job>,
    /// Per stream continuing from its checkpoint, the frames its fields output keeps.
    pub kept_fields: BTreeMap<String, u64>,
    /// Whether the run adds to an existing output (`wgpipe run --resume`).
    pub resume: bool,
    /// What resuming found, one sentence each (how many streams are complete, which continue
    /// from their checkpoints and which restart): for the caller to show.
    pub notes: Vec<String>,
}

impl Config {
    /// Makes this config ready to run as one of `ranks` MPI ranks (1 without `mpirun`):
    /// checks the ranks against `grid.decomposition` and the output path (an existing output
    /// is refused unless `output.overwrite` replaces it, or `resume` adds to it), reads what
    /// an output being resumed holds, opens the devices and lists the jobs still to run.
    /// Everything that can be checked without a device is checked before one opens.
    pub fn launch(self, resume: bool, ranks: usize) -> Result<Launch> {
        self.check_ranks(ranks)?;
        self.check_path(resume)?;
        self.check_output(resume)?;
        let held = if resume { resume::held_streams(&self)? } else { resume::Held::default() };
        let (selector, count) = self.devices();
        let gpus = open_devices(&selector, count).map_err(|source| ConfigError::Devices {
            origin: self.origin("devices.select"),
            source: Box::new(source),
        })?;
        let done = &held.complete;
        let jobs = self.jobs(gpus.len(), |name| done.contains(name));
        let mut notes = Vec::new();
        let (jobs, kept_fields) =
            if resume { resume::from_checkpoints(&self, &held, jobs, &mut notes)? } else { (jobs, BTreeMap::new()) };
        let path = self.output_path();
        if jobs.is_empty() {
            notes.push(format!("nothing to do: every run is already complete in {}", path.display()));
        } else if !done.is_empty() {
            notes
                .insert(0, format!("resuming {}: {} runs complete, {} to run", path.display(), done.len(), jobs.len()));
        }
        Ok(Launch { config: self, gpus, jobs, kept_fields, resume, notes })
    }

    /// Errors if an output is in the way: it exists and is neither replaced
    /// (`output.overwrite`) nor resumed; or a resume asks for SWMR, which a file enters only
    /// when it is created.
    fn check_path(&self, resume: bool) -> Result<(), ConfigError> {
        let overwrite = self.file.output.overwrite;
        for output in std::iter::once(self.output_path()).chain(self.analysis_output_path()) {
            if !resume && self.sink_name() != "null" && !overwrite && output.exists() {
                return Err(self.source.invalid(
                    "output.path",
                    format!(
                        "output {} already exists: remove it, choose another path (--set output.path=...), replace \
                         it (--set output.overwrite=true), or add the missing runs of a batch with --resume",
                        output.display()
                    ),
                ));
            }
        }
        if resume && self.file.output.swmr {
            return Err(self.source.invalid(
                "output.swmr",
                "--resume cannot use single-writer/multiple-reader mode (a file enters it only when it is created): \
                 resume with --set output.swmr=false",
            ));
        }
        Ok(())
    }
}

impl Launch {
    /// The sink of the config's output, adding to it when resuming, creating nothing yet
    /// (see [`Config::open_sink_resuming`]).
    pub fn open_sink(&self) -> Result<Box<dyn Sink>> {
        self.config
            .open_sink_resuming(self.resume, self.kept_fields.clone())
            .map_err(|e| self.config.source.invalid("output.sink", e.to_string()).into())
    }

    /// The pipeline of the launch, writing to `sink` ([`Launch::open_sink`]'s, or a decorator
    /// around it) and stopped by `stop`: its checks against the opened devices run here
    /// ([`Config::build`]). Returns the config with it.
    pub fn pipeline(self, sink: Box<dyn Sink>, stop: StopHandle) -> Result<(Config, Pipeline)> {
        let Launch { config, gpus, jobs, .. } = self;
        let pipeline = config.build(config.builder().gpus(gpus).jobs(jobs).sink(sink).stop_handle(stop))?;
        Ok((config, pipeline))
    }
}
