//! One opened GPU device: wgpu `Device` + `Queue`, with errors captured instead of panicking.

use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Duration;

use crate::adapter_summary::AdapterSummary;
use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::limits::GridFootprint;

/// How long a blocking wait for the GPU may last before it is called a hang.
const WAIT_TIMEOUT: Duration = Duration::from_secs(300);

/// First error reported by wgpu's callbacks, kept until someone checks.
#[derive(Default)]
struct Faults {
    error: Option<String>,
    lost: Option<String>,
}

/// An opened device and its queue.
///
/// wgpu's default reaction to an uncaptured error is a panic; this type installs handlers that
/// record the error instead, and every blocking call ([`GpuDevice::wait`]) turns what was
/// recorded into an [`Error`] that names the device.
#[derive(Clone)]
pub struct GpuDevice {
    device: wgpu::Device,
    queue: wgpu::Queue,
    adapter: AdapterSummary,
    label: String,
    faults: Arc<Mutex<Faults>>,
}

impl std::fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuDevice").field("label", &self.label).field("adapter", &self.adapter).finish()
    }
}

impl GpuDevice {
    /// Opens a device on `adapter` with every limit the adapter supports.
    pub(crate) fn open(adapter: &wgpu::Adapter, summary: AdapterSummary, label: String) -> Result<Self> {
        // Immediate data carries each step's clock to field kernels; every native backend has it.
        // Timestamp queries, where the adapter has them, give the GPU's own time per frame.
        let desc = wgpu::DeviceDescriptor {
            label: Some(&label),
            required_limits: adapter.limits(),
            required_features: adapter.features() & (wgpu::Features::IMMEDIATES | wgpu::Features::TIMESTAMP_QUERY),
            ..Default::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc))
            .map_err(|e| Error::RequestDevice { adapter: label.clone(), message: e.to_string() })?;
        let faults = Arc::new(Mutex::new(Faults::default()));
        let on_error = Arc::clone(&faults);
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let mut f = on_error.lock().unwrap_or_else(PoisonError::into_inner);
            f.error.get_or_insert_with(|| e.to_string());
        }));
        let on_lost = Arc::clone(&faults);
        device.set_device_lost_callback(move |reason, message| {
            let mut f = on_lost.lock().unwrap_or_else(PoisonError::into_inner);
            f.lost.get_or_insert_with(|| format!("{reason:?}: {message}"));
        });
        Ok(GpuDevice { device, queue, adapter: summary, label, faults })
    }

    /// The wgpu device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The device's queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// What the adapter is.
    pub fn adapter(&self) -> &AdapterSummary {
        &self.adapter
    }

    /// A name for messages: adapter index, name, backend (and copy number when opened twice).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Sizes a kernel of `fields` fields (workgroup size `workgroup_size`) on `grid`, reading
    /// back `read_fields` fields per frame, and errors with [`Error::TooLarge`] unless it fits
    /// this device's limits. Allocates nothing.
    pub fn check_grid(
        &self,
        grid: &Grid,
        fields: usize,
        read_fields: usize,
        workgroup_size: [u32; 3],
    ) -> Result<GridFootprint> {
        let footprint = GridFootprint::new(grid, fields, read_fields, workgroup_size)?;
        footprint.check(&self.device.limits(), &self.label)?;
        Ok(footprint)
    }

    /// Turns an error recorded by wgpu's callbacks into an [`Error`].
    pub fn check(&self) -> Result<()> {
        let f = self.faults.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(message) = &f.lost {
            return Err(Error::DeviceLost { device: self.label.clone(), message: message.clone() });
        }
        if let Some(message) = &f.error {
            return Err(Error::Gpu { device: self.label.clone(), message: message.clone() });
        }
        Ok(())
    }

    /// Blocks until `submission` has finished and its callbacks have run.
    pub fn wait(&self, submission: wgpu::SubmissionIndex) -> Result<()> {
        let poll =
            self.device.poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: Some(WAIT_TIMEOUT) });
        self.check()?;
        match poll {
            Ok(_) => Ok(()),
            Err(wgpu::PollError::Timeout) => {
                Err(Error::Timeout { device: self.label.clone(), seconds: WAIT_TIMEOUT.as_secs() })
            }
            Err(e) => Err(Error::Gpu { device: self.label.clone(), message: e.to_string() }),
        }
    }

    /// The outcome of a `map_async` callback, after the wait that should have run it: the
    /// mapping's error, or the device's fault that kept the callback from running.
    pub(crate) fn mapped_result(&self, rx: &mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>) -> Result<()> {
        let failed = |message: String| Error::Gpu { device: self.label.clone(), message };
        match rx.try_recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                self.check()?;
                Err(failed(format!("mapping a staging buffer failed: {e}")))
            }
            Err(_) => {
                self.check()?;
                Err(failed("a staging buffer was not mapped after its submission finished".to_owned()))
            }
        }
    }

    /// One GPU round trip: submits `encoder`, which fills `buffer` (mappable for reading),
    /// waits for it, and returns what `read` makes of the mapped bytes, the buffer unmapped
    /// again.
    pub(crate) fn submit_and_read<R>(
        &self,
        encoder: wgpu::CommandEncoder,
        buffer: &wgpu::Buffer,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        let (tx, rx) = mpsc::channel();
        encoder.map_buffer_on_submit(buffer, wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        let submission = self.queue.submit([encoder.finish()]);
        self.wait(submission)?;
        self.mapped_result(&rx)?;
        let value = {
            let view = buffer
                .get_mapped_range(..)
                .map_err(|e| Error::Gpu { device: self.label.clone(), message: e.to_string() })?;
            read(&view)
        };
        buffer.unmap();
        Ok(value)
    }

    /// Runs `f` (resource creation) and returns the first validation or out-of-memory error it
    /// caused, so that a bad shader or an oversized buffer is an error, not a panic.
    pub fn scoped<T>(&self, what: &str, f: impl FnOnce(&wgpu::Device) -> T) -> Result<T> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f(&self.device);
        let errors = [pollster::block_on(validation.pop()), pollster::block_on(oom.pop())];
        if let Some(e) = errors.into_iter().flatten().next() {
            return Err(Error::Gpu { device: self.label.clone(), message: format!("{what}: {e}") });
        }
        self.check()?;
        Ok(value)
    }
}
