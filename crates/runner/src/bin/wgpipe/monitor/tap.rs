//! The monitor's view of the frames: a sink that passes every call to the run's own sink and,
//! after a frame is stored, keeps what the page shows of it, from the first frame on and
//! without waiting for a page to ask: a run that writes a frame every few minutes shows its
//! newest frame as soon as a page opens, not minutes later.
//!
//! What it keeps is small whatever the frame: one picture of each field a page can show (a
//! 3-D field's middle z slice, a 1-D or 2-D field whole, within [`MAX_PICTURE_BYTES`] each and
//! [`MAX_SNAPSHOT_BYTES`] in all) and the PDFs. It keeps a frame at most four times a second,
//! and less often when copying took long, so that copying costs the writer at most one
//! [`COPY_SHARE`]th of its time. The server only clones a pointer under the lock, so the
//! writer waits for it no longer than that.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wgpipe::storage::{Encoding, FieldData, Frame, Result, Sink, SinkSummary, StreamLayout, ZfpRate};

/// Shortest time between two snapshots: the page refreshes twice a second.
const COPY_PERIOD: Duration = Duration::from_millis(250);
/// The writer copies for at most one part in this many of its time.
const COPY_SHARE: u32 = 20;
/// Largest picture kept (a 2-D field larger than this is not shown).
const MAX_PICTURE_BYTES: usize = 64 << 20;
/// Largest sum of the pictures of one frame: the fields after it are not shown.
const MAX_SNAPSHOT_BYTES: usize = 128 << 20;

/// One analysed field's newest PDF.
pub struct Pdf {
    /// The analysed field (`u` for `u_pdf`).
    pub field: String,
    /// Left bin edges.
    pub edges: FieldData,
    /// Counts per slice and bin.
    pub counts: FieldData,
}

/// What a page shows of one field: the field, or a 3-D field's middle z slice.
pub struct Picture {
    pub field: String,
    /// The plane a 3-D field is cut at, as `wgpipe render --slice` takes it (`z=12`).
    pub slice: Option<String>,
    pub data: FieldData,
}

/// What the page shows of the newest frame kept.
pub struct Snapshot {
    /// Counts the snapshots, so a page (and the server's PNG cache) can tell a new one.
    pub seq: u64,
    pub stream: usize,
    pub index: u64,
    pub step: u64,
    /// Every field a page can show, in layout order, but those too large to keep.
    pub pictures: Vec<Picture>,
    pub pdfs: Vec<Pdf>,
}

impl Snapshot {
    pub fn picture(&self, field: &str) -> Option<&Picture> {
        self.pictures.iter().find(|p| p.field == field)
    }
}

/// What the tap shares with the server.
#[derive(Default)]
pub struct Latest {
    /// The layout the sink began with.
    pub layout: Mutex<Option<StreamLayout>>,
    /// The newest snapshot.
    snapshot: Mutex<Option<Arc<Snapshot>>>,
}

impl Latest {
    /// The newest snapshot, `None` before the first frame is stored.
    pub fn newest(&self) -> Option<Arc<Snapshot>> {
        self.snapshot.lock().ok()?.clone()
    }

    /// Makes `snapshot` the newest; the one it replaces is freed after the lock is let go.
    fn keep(&self, snapshot: Snapshot) {
        let old = match self.snapshot.lock() {
            Ok(mut slot) => slot.replace(Arc::new(snapshot)),
            Err(_) => None,
        };
        drop(old);
    }

    pub fn layout(&self) -> Option<StreamLayout> {
        self.layout.lock().ok().and_then(|l| l.clone())
    }
}

/// The run's sink, with what the monitor shows of the newest frame kept beside it.
pub struct TapSink {
    inner: Box<dyn Sink>,
    latest: Arc<Latest>,
    /// The layout of the frames `write` takes.
    layout: Option<StreamLayout>,
    /// When the next frame may be kept; `None` until the first one is.
    next: Option<Instant>,
    seq: u64,
}

impl TapSink {
    pub fn new(inner: Box<dyn Sink>, latest: Arc<Latest>) -> Self {
        TapSink { inner, latest, layout: None, next: None, seq: 0 }
    }

    /// Keeps what the page shows of `frame` if the last copy is long enough ago.
    fn keep(&mut self, frame: &Frame) {
        let began = Instant::now();
        if self.next.is_some_and(|next| began < next) {
            return;
        }
        let Some(layout) = &self.layout else { return };
        self.seq += 1;
        self.latest.keep(snapshot(layout, frame, self.seq));
        self.next = Some(began + COPY_PERIOD.max(began.elapsed() * COPY_SHARE));
    }
}

/// What the page shows of `frame`, snapshot number `seq`.
fn snapshot(layout: &StreamLayout, frame: &Frame, seq: u64) -> Snapshot {
    let mut pictures = Vec::new();
    let mut kept = 0usize;
    for f in layout.fields.iter().filter(|f| shows(&f.name, &f.shape)) {
        let Some((data, slice)) = field(layout, frame, &f.name, true) else { continue };
        kept += data.bytes.len();
        if kept > MAX_SNAPSHOT_BYTES {
            break;
        }
        pictures.push(Picture { field: f.name.clone(), slice, data });
    }
    let pdfs = layout
        .fields
        .iter()
        .filter_map(|f| f.name.strip_suffix("_pdf"))
        .filter_map(|base| {
            let (counts, _) = field(layout, frame, &format!("{base}_pdf"), false)?;
            let (edges, _) = field(layout, frame, &format!("{base}_bins"), false)?;
            Some(Pdf { field: base.to_owned(), edges, counts })
        })
        .collect();
    Snapshot { seq, stream: frame.stream, index: frame.index, step: frame.step, pictures, pdfs }
}

/// Whether a page offers field `name` of `shape` as a picture: a field on the grid, not a
/// PDF or its edges.
pub fn shows(name: &str, shape: &[usize]) -> bool {
    !shape.is_empty() && !name.ends_with("_pdf") && !name.ends_with("_bins")
}

/// Field `name` of `frame` under `layout`, whole, or as a picture: a 3-D field's middle z
/// slice (and which), nothing above [`MAX_PICTURE_BYTES`]. A field encoded on the device (a
/// ZFP stream) is decoded as the output's readers decode it.
fn field(layout: &StreamLayout, frame: &Frame, name: &str, as_picture: bool) -> Option<(FieldData, Option<String>)> {
    let i = layout.field_index(name)?;
    let spec = &layout.fields[i];
    let stored = frame.data.get(layout.field_range(i)?)?;
    let middle = match (as_picture, &spec.shape[..]) {
        (true, &[nz, ny, nx]) => Some((nz / 2, vec![ny, nx])),
        _ => None,
    };
    let slice = middle.as_ref().map(|(z, _)| format!("z={z}"));
    let decoded;
    let values = match spec.encoding {
        // A 3-D array's middle slice: only the blocks that hold it are decoded.
        Encoding::Zfp(rate) if middle.is_some() && ZfpRate::coded_shape(&spec.shape).len() == 3 => {
            let (z, shape) = middle?;
            let bytes = le_bytes(&rate.decode_plane(stored, &spec.shape, z)?);
            return (bytes.len() <= MAX_PICTURE_BYTES)
                .then_some((FieldData { dtype: spec.dtype, shape, bytes }, slice));
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
        None if as_picture && values.len() > MAX_PICTURE_BYTES => return None,
        None => (spec.shape.clone(), values.to_vec()),
    };
    (bytes.len() <= MAX_PICTURE_BYTES || !as_picture).then_some((FieldData { dtype: spec.dtype, shape, bytes }, slice))
}

/// f32 values as their little-endian bytes.
fn le_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The first field a page would show.
pub fn default_picture(layout: &StreamLayout) -> Option<&str> {
    layout.fields.iter().find(|f| shows(&f.name, &f.shape)).map(|f| f.name.as_str())
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
        self.keep(frame);
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

#[cfg(test)]
mod tests {
    use super::*;
    use wgpipe::storage::{DType, FieldSpec, StreamInfo};

    /// A sink that stores nothing.
    struct Nothing;

    impl Sink for Nothing {
        fn begin(&mut self, _: &StreamLayout) -> Result<()> {
            Ok(())
        }
        fn write(&mut self, _: &Frame) -> Result<()> {
            Ok(())
        }
        fn finish(&mut self) -> Result<SinkSummary> {
            Ok(SinkSummary::default())
        }
    }

    /// The first frame is kept at once, nobody having asked; a 3-D field as its middle z slice.
    #[test]
    fn the_first_frame_is_kept_without_being_asked_for() -> anyhow::Result<()> {
        use anyhow::Context;
        let layout =
            StreamLayout::new(vec![FieldSpec::new("v", DType::F32, [3, 2, 2]), FieldSpec::new("s", DType::F32, [4])])
                .with_stream(StreamInfo::new("stream0"));
        let latest = Arc::new(Latest::default());
        let mut tap = TapSink::new(Box::new(Nothing), Arc::clone(&latest));
        tap.begin(&layout)?;
        assert!(latest.newest().is_none());
        let values: Vec<f32> = (0..16).map(|i| i as f32).collect();
        tap.write(&Frame::new(0, 7, 70, le_bytes(&values)))?;
        let kept = latest.newest().context("nothing kept")?;
        assert_eq!((kept.index, kept.step, kept.seq), (7, 70, 1));
        let v = kept.picture("v").context("no picture of v")?;
        assert_eq!((v.slice.as_deref(), &v.data.shape[..]), (Some("z=1"), &[2, 2][..]));
        assert_eq!(v.data.to_f64(), [4.0, 5.0, 6.0, 7.0]);
        assert_eq!(kept.picture("s").map(|s| s.data.to_f64()), Some(vec![12.0, 13.0, 14.0, 15.0]));
        // The next frame comes too soon to be copied: the snapshot stays.
        tap.write(&Frame::new(0, 8, 80, le_bytes(&values)))?;
        assert_eq!(latest.newest().map(|s| s.index), Some(7));
        Ok(())
    }
}
