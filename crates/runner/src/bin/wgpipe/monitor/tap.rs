//! The monitor's view of the frames: a sink that passes every call to the run's own sink and,
//! after a frame is stored, keeps what the page shows of it, when a page asked for it since
//! the last time, at most four times a second, and only if the server is not reading the
//! previous one at that moment (`try_lock`): the writer never waits for the server. What it
//! keeps is small whatever the frame: one picture (a 3-D field's middle z slice) of the field
//! the page chose, and the PDFs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wgpipe::storage::{Encoding, FieldData, Frame, Result, Sink, SinkSummary, StreamLayout, ZfpRate};

/// Shortest time between two snapshots: the page refreshes twice a second.
const COPY_PERIOD: Duration = Duration::from_millis(250);
/// Largest picture kept (a 2-D field larger than this is not shown).
const MAX_PICTURE_BYTES: usize = 64 << 20;

/// One analysed field's newest PDF.
pub struct Pdf {
    /// The analysed field (`u` for `u_pdf`).
    pub field: String,
    /// Left bin edges.
    pub edges: FieldData,
    /// Counts per slice and bin.
    pub counts: FieldData,
}

/// What the page shows of the newest frame.
pub struct Snapshot {
    pub stream: usize,
    pub index: u64,
    pub step: u64,
    /// The chosen field's picture: the field, or a 3-D field's middle z slice.
    pub picture: Option<(String, FieldData)>,
    pub pdfs: Vec<Pdf>,
}

/// What the tap shares with the server.
#[derive(Default)]
pub struct Latest {
    /// The layout the sink began with.
    pub layout: Mutex<Option<StreamLayout>>,
    /// The newest snapshot.
    pub snapshot: Mutex<Option<Snapshot>>,
    /// Set by the server when a page asked for a frame since the last snapshot.
    pub wanted: AtomicBool,
    /// The field the page shows, set by the server (default: the first field).
    pub field: Mutex<Option<String>>,
}

/// The run's sink, with what the monitor shows of the newest frame kept beside it.
pub struct TapSink {
    inner: Box<dyn Sink>,
    latest: Arc<Latest>,
    /// The layout of the frames `write` takes.
    layout: Option<StreamLayout>,
    taken: Option<Instant>,
}

impl TapSink {
    pub fn new(inner: Box<dyn Sink>, latest: Arc<Latest>) -> Self {
        TapSink { inner, latest, layout: None, taken: None }
    }
}

/// Field `name` of `frame` under `layout`, whole, or as a picture: a 3-D field's middle z
/// slice, nothing above [`MAX_PICTURE_BYTES`]. A field encoded on the device (a ZFP stream)
/// is decoded as the output's readers decode it.
fn field(layout: &StreamLayout, frame: &Frame, name: &str, as_picture: bool) -> Option<FieldData> {
    let i = layout.field_index(name)?;
    let spec = &layout.fields[i];
    let stored = frame.data.get(layout.field_range(i)?)?;
    let middle = match (as_picture, &spec.shape[..]) {
        (true, &[nz, ny, nx]) => Some((nz / 2, vec![ny, nx])),
        _ => None,
    };
    let decoded;
    let values = match spec.encoding {
        // A 3-D array's middle slice: only the blocks that hold it are decoded.
        Encoding::Zfp(rate) if middle.is_some() && ZfpRate::coded_shape(&spec.shape).len() == 3 => {
            let (z, shape) = middle?;
            let bytes = le_bytes(&rate.decode_plane(stored, &spec.shape, z)?);
            return (bytes.len() <= MAX_PICTURE_BYTES).then_some(FieldData { dtype: spec.dtype, shape, bytes });
        }
        Encoding::Zfp(rate) => {
            // Decoded whole only if the picture may be that large (decoding runs on the writer).
            if as_picture && spec.elements()?.saturating_mul(4) > MAX_PICTURE_BYTES {
                return None;
            }
            decoded = le_bytes(&rate.decode(stored, &spec.shape)?);
            &decoded[..]
        }
        _ => stored,
    };
    let (shape, bytes) = match middle {
        Some((z, shape)) => {
            let plane = shape.iter().product::<usize>() * spec.dtype.size();
            (shape, values.get(z * plane..(z + 1) * plane)?.to_vec())
        }
        None => (spec.shape.clone(), values.to_vec()),
    };
    if as_picture && bytes.len() > MAX_PICTURE_BYTES {
        return None;
    }
    Some(FieldData { dtype: spec.dtype, shape, bytes })
}

/// f32 values as their little-endian bytes.
fn le_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The first field a page would show: a field on the grid, not a PDF or its edges.
pub fn default_picture(layout: &StreamLayout) -> Option<&str> {
    layout
        .fields
        .iter()
        .find(|f| !f.shape.is_empty() && !f.name.ends_with("_pdf") && !f.name.ends_with("_bins"))
        .map(|f| f.name.as_str())
}

impl Sink for TapSink {
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        self.inner.check_layout(layout)
    }

    fn frame_layout(&self, layout: &StreamLayout) -> Option<StreamLayout> {
        self.inner.frame_layout(layout)
    }

    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        self.inner.begin(layout)?;
        // The frames as they arrive (a thinned sink's, a block sink's may differ from what is
        // stored): the pictures are cut from them.
        let frames = self.inner.frame_layout(layout).unwrap_or_else(|| layout.clone());
        self.layout = Some(frames);
        if let Ok(mut slot) = self.latest.layout.lock() {
            *slot = Some(layout.clone());
        }
        Ok(())
    }

    fn write(&mut self, frame: &Frame) -> Result<()> {
        self.inner.write(frame)?;
        let due = self.taken.is_none_or(|t| t.elapsed() >= COPY_PERIOD);
        if !due || !self.latest.wanted.load(Ordering::Relaxed) {
            return Ok(());
        }
        let (Some(layout), Ok(mut slot)) = (&self.layout, self.latest.snapshot.try_lock()) else {
            return Ok(());
        };
        let chosen = self.latest.field.try_lock().ok().and_then(|f| f.clone());
        let name = chosen.as_deref().or_else(|| default_picture(layout)).unwrap_or_default().to_owned();
        let pdfs = layout
            .fields
            .iter()
            .filter_map(|f| f.name.strip_suffix("_pdf"))
            .filter_map(|base| {
                let counts = field(layout, frame, &format!("{base}_pdf"), false)?;
                let edges = field(layout, frame, &format!("{base}_bins"), false)?;
                Some(Pdf { field: base.to_owned(), edges, counts })
            })
            .collect();
        *slot = Some(Snapshot {
            stream: frame.stream,
            index: frame.index,
            step: frame.step,
            picture: field(layout, frame, &name, true).map(|p| (name, p)),
            pdfs,
        });
        self.latest.wanted.store(false, Ordering::Relaxed);
        self.taken = Some(Instant::now());
        Ok(())
    }

    fn fail(&mut self) {
        self.inner.fail();
    }

    fn leave_incomplete(&mut self, stream: usize) {
        self.inner.leave_incomplete(stream);
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        self.inner.finish()
    }
}
