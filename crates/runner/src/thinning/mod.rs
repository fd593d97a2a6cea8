//! Writing less: the fields of only some frames, the reductions of every frame
//! (`output.every`, `output.when`, [`Thinning`]).
//!
//! A [`ThinnedSink`] wraps two sinks: the frames the pipeline produces (fields, then the
//! analysis's reductions) arrive whole, their reductions go to one sink every frame and their
//! fields to the other only for the frames kept. Two outputs because each then has one time
//! axis, which netCDF readers and xarray need: the fields output's frames are the kept ones,
//! each with its `steps` entry, and a reader matches them to the reductions by step. (The
//! ADIOS2 Gray-Scott tutorial does the same: its analysis writes `pdf.bp` beside `gs.bp`.)
//!
//! It is a sink decorator, so the pipeline, the progress counters and the checkpoints see one
//! frame per produced frame, reported written once both parts are stored (the reductions
//! first); the live view wraps it and sees every frame whole.

mod trigger;

use std::collections::BTreeMap;
use std::ops::Range;

use wgpipe_storage::{
    AttrValue, DType, Error, FieldData, FieldSpec, Frame, Result, Sink, SinkSummary, StreamInfo, StreamLayout,
};

pub use trigger::{Trigger, TriggerError};

use crate::analysis::Analysis;

/// Which frames keep their fields: every `every`-th (frames 0, k, 2k, ...), those whose
/// reductions make `when` hold, or both (either keeps a frame). Neither: every frame.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Thinning {
    /// Keep frame `i` when `i % every == 0` (1: every frame); `None`: no frame for its
    /// index alone.
    pub every: Option<u64>,
    /// Keep a frame when this condition over its reductions holds.
    pub when: Option<Trigger>,
}

impl Thinning {
    /// The fields of every `k`-th frame: frames 0, k, 2k, ...
    pub fn every(k: u64) -> Self {
        Thinning { every: Some(k), when: None }
    }

    /// The fields of the frames whose reductions make `condition` hold.
    pub fn when(condition: Trigger) -> Self {
        Thinning { every: None, when: Some(condition) }
    }

    /// Also keeps the frames where `condition` holds (it replaces an earlier condition:
    /// join conditions with `or` in one).
    pub fn or_when(mut self, condition: Trigger) -> Self {
        self.when = Some(condition);
        self
    }

    /// Whether some frames may lose their fields (otherwise the run stores them all, with
    /// the reductions beside them in one output).
    pub fn thins(&self) -> bool {
        self.every.is_some_and(|k| k > 1) || self.when.is_some()
    }

    /// Whether frame `index` keeps its fields, given whether the condition holds on it (not
    /// asked when there is no condition).
    fn keeps(&self, index: u64, condition: impl FnOnce(&Trigger) -> bool) -> bool {
        match (self.every, &self.when) {
            (None, None) => true,
            (Some(k), None) => index.is_multiple_of(k.max(1)),
            (every, Some(when)) => every.is_some_and(|k| index.is_multiple_of(k.max(1))) || condition(when),
        }
    }

    /// Frames among a stream's first `frames` that keep their fields, when that follows from
    /// the count alone (no condition).
    pub fn kept_among(&self, frames: u64) -> Option<u64> {
        match (self.every, &self.when) {
            (None, None) => Some(frames),
            (Some(k), None) => Some(frames.div_ceil(k.max(1))),
            (_, Some(_)) => None,
        }
    }

    /// What the outputs record of the rule (run attributes `output_every`, `output_when`).
    fn attributes(&self) -> Vec<(&'static str, AttrValue)> {
        let mut a = Vec::new();
        if let Some(k) = self.every {
            a.push(("output_every", AttrValue::from(k)));
        }
        if let Some(w) = &self.when {
            a.push(("output_when", AttrValue::from(w.text())));
        }
        a
    }
}

/// Where each part of a produced frame lies, and where each stream is.
struct Open {
    fields: Vec<Range<usize>>,
    reductions: Vec<Range<usize>>,
    /// Per name of the condition, the bytes and type of its value in a produced frame.
    condition: Vec<(Range<usize>, DType)>,
    /// Bytes of a produced frame.
    frame_bytes: usize,
    /// Per stream: the fields' next frame index, and frames received.
    next_kept: Vec<u64>,
    received: Vec<u64>,
    expected: Vec<Option<u64>>,
    failed: bool,
}

/// How a produced frame divides between the two outputs ([`ThinnedSink`]).
struct Parts {
    /// The fields output's layout, and where each of its fields lies in a produced frame.
    fields: StreamLayout,
    field_ranges: Vec<Range<usize>>,
    /// The reductions output's layout, and where each of its fields lies.
    reductions: StreamLayout,
    reduction_ranges: Vec<Range<usize>>,
    /// The layout of the produced frames: the stored one, unless a sink takes its part in
    /// another shape (a rank's block).
    frames: StreamLayout,
}

/// A sink that stores the reductions of every frame in one sink and the fields of the frames
/// a [`Thinning`] keeps in another (see the module doc). Give it the frames of a run with
/// `[analysis]`: it tells the fields from the reductions by the analysis's names.
pub struct ThinnedSink {
    fields: Box<dyn Sink>,
    reductions: Box<dyn Sink>,
    analysis: Analysis,
    thinning: Thinning,
    kept_fields: BTreeMap<String, u64>,
    open: Option<Open>,
    /// Reused for the fields' bytes of each kept frame.
    buffer: Vec<u8>,
    skipped_frames: u64,
    skipped_bytes: u64,
    /// `(index, count)`: this process writes the streams `i` with `i % count == index` (an
    /// MPI batch's rank); only those can end short here.
    shard: (usize, usize),
}

/// The value of a one-value field of type `dtype` held in `bytes`, as f64 (NaN if missing).
fn value(bytes: &[u8], dtype: DType) -> f64 {
    let field = FieldData { dtype, shape: Vec::new(), bytes: bytes.to_vec() };
    field.to_f64().first().copied().unwrap_or(f64::NAN)
}

impl ThinnedSink {
    /// Fields of the kept frames to `fields`, the reductions of `analysis` of every frame to
    /// `reductions`.
    pub fn new(fields: Box<dyn Sink>, reductions: Box<dyn Sink>, analysis: Analysis, thinning: Thinning) -> Self {
        ThinnedSink {
            fields,
            reductions,
            analysis,
            thinning,
            kept_fields: BTreeMap::new(),
            open: None,
            buffer: Vec::new(),
            skipped_frames: 0,
            skipped_bytes: 0,
            shard: (0, 1),
        }
    }

    /// Under an MPI batch: this process runs the streams `i` with `i % count == index`, as
    /// [`crate::PipelineBuilder::shard`] says; the others' frames are other ranks' to count
    /// (without it every stream this process received no frame of would be marked short).
    pub fn with_shard(mut self, index: usize, count: usize) -> Self {
        self.shard = (index, count.max(1));
        self
    }

    /// For streams that continue after kept frames (a resumed run): how many frames the
    /// fields output keeps of each, by stream name. Needed with a condition, whose kept
    /// frames only the output knows; with `every` alone they follow from the count.
    pub fn with_kept_fields(mut self, kept: BTreeMap<String, u64>) -> Self {
        self.kept_fields = kept;
        self
    }

    /// The two layouts `layout` splits into, and where each part lies in a produced frame.
    fn split(&self, layout: &StreamLayout) -> Result<Parts> {
        let is_reduction: Vec<bool> = layout.fields.iter().map(|f| self.analysis.is_reduction(&f.name)).collect();
        let part = |reduction: bool| -> Vec<FieldSpec> {
            layout.fields.iter().zip(&is_reduction).filter(|(_, r)| **r == reduction).map(|(f, _)| f.clone()).collect()
        };
        let (fields, reductions) = (part(false), part(true));
        if fields.is_empty() || reductions.is_empty() {
            return Err(Error::InvalidLayout(format!(
                "writing the fields of some frames only (output.every, output.when) needs frames with fields and \
                 reductions of them; these hold {}: {}",
                if fields.is_empty() { "reductions only" } else { "no reductions of analysis.fields" },
                if fields.is_empty() {
                    "every frame's reductions are stored already, drop output.every and output.when"
                } else {
                    "add [analysis] with the fields the condition reads"
                }
            )));
        }
        let mut attributes = layout.attributes.clone();
        for (k, v) in self.thinning.attributes() {
            attributes.insert(k.to_owned(), v);
        }
        let mut streams = Vec::with_capacity(layout.streams.len());
        for s in &layout.streams {
            let kept = match (s.kept_frames, self.kept_fields.get(&s.name)) {
                (0, _) => 0,
                (_, Some(&n)) => n,
                (k, None) => self.thinning.kept_among(k).ok_or_else(|| {
                    Error::InvalidLayout(format!(
                        "stream {:?} continues after {k} frames, but which of them kept their fields depends on \
                         output.when: give the count the fields output holds (ThinnedSink::with_kept_fields)",
                        s.name
                    ))
                })?,
            };
            // A condition's count is known at the end only; it keeps at most every frame.
            let expected = s.expected_frames.and_then(|n| self.thinning.kept_among(n));
            let most = if expected.is_none() { s.expected_frames.or(s.max_frames) } else { None };
            streams.push(StreamInfo { expected_frames: expected, max_frames: most, kept_frames: kept, ..s.clone() });
        }
        let fields = StreamLayout { fields, streams, attributes: attributes.clone() };
        let reductions = StreamLayout { fields: reductions, streams: layout.streams.clone(), attributes };
        // The produced frame holds each part as its sink takes it (a rank's block of each field
        // of a split grid, `Sink::frame_layout`), in the order of `layout`.
        let taken =
            |sink: &dyn Sink, stored: &StreamLayout| sink.frame_layout(stored).unwrap_or_else(|| stored.clone());
        let mut taken = [
            taken(self.fields.as_ref(), &fields).fields.into_iter(),
            taken(self.reductions.as_ref(), &reductions).fields.into_iter(),
        ];
        let mut frames = layout.clone();
        for (f, &reduction) in frames.fields.iter_mut().zip(&is_reduction) {
            *f = taken[usize::from(reduction)].next().ok_or_else(|| {
                Error::InvalidLayout(format!("the sink of {:?} takes frames of fewer fields than it stores", f.name))
            })?;
        }
        let mut ranges = [Vec::new(), Vec::new()];
        for (i, &reduction) in is_reduction.iter().enumerate() {
            let range = frames
                .field_range(i)
                .ok_or_else(|| Error::InvalidLayout(format!("field {:?} is too large", frames.fields[i].name)))?;
            ranges[usize::from(reduction)].push(range);
        }
        let [field_ranges, reduction_ranges] = ranges;
        Ok(Parts { fields, reductions, field_ranges, reduction_ranges, frames })
    }

    /// Where each name of the condition lies in a produced frame (of layout `layout`): a
    /// one-value reduction.
    fn bind(&self, layout: &StreamLayout) -> Result<Vec<(Range<usize>, DType)>> {
        let Some(when) = &self.thinning.when else { return Ok(Vec::new()) };
        when.names()
            .iter()
            .map(|name| {
                // One value per frame.
                layout
                    .field_index(name)
                    .filter(|&i| {
                        let f = &layout.fields[i];
                        f.shape.is_empty() && self.analysis.is_reduction(name)
                    })
                    .and_then(|i| Some((layout.field_range(i)?, layout.fields[i].dtype)))
                    .ok_or_else(|| {
                        Error::InvalidLayout(format!(
                            "output.when reads {name:?}, which the frames do not hold as one value per frame: choose \
                             from {}",
                            self.analysis.scalar_names().join(", ")
                        ))
                    })
            })
            .collect()
    }

    /// Concatenates `ranges` of `data` into `out`.
    fn gather(data: &[u8], ranges: &[Range<usize>], out: &mut Vec<u8>) {
        out.clear();
        for r in ranges {
            out.extend_from_slice(data.get(r.clone()).unwrap_or_default());
        }
    }
}

impl Sink for ThinnedSink {
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        let parts = self.split(layout)?;
        self.bind(&parts.frames)?;
        self.fields.check_layout(&parts.fields)?;
        self.reductions.check_layout(&parts.reductions)
    }

    /// The fields and reductions as the two sinks take them, in `layout`'s order.
    fn frame_layout(&self, layout: &StreamLayout) -> Option<StreamLayout> {
        self.split(layout).ok().map(|p| p.frames).filter(|frames| frames != layout)
    }

    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        if self.open.is_some() {
            return Err(Error::Usage("begin called twice"));
        }
        let Parts { fields, field_ranges, reductions, reduction_ranges, frames } = self.split(layout)?;
        let condition = self.bind(&frames)?;
        // Both outputs' own checks before either exists. They are local: where MPI ranks share
        // the sinks, a check whose result may differ between ranks (a block sink's placement)
        // must be agreed on before `begin`, or a rank failing it alone would leave the others
        // waiting in their sink's collective `begin` (the `wgpipe` binary checks the layout
        // under its ranks' agreement first).
        self.fields.check_layout(&fields)?;
        self.reductions.check_layout(&reductions)?;
        let frame_bytes = frames.frame_bytes()?;
        self.fields.begin(&fields)?;
        if let Err(e) = self.reductions.begin(&reductions) {
            // Close the fields output begun a moment ago, which holds no frame (unlike the
            // sinks it wraps, a thinned sink may leave this empty output when it fails to
            // begin: the error is the one told).
            self.fields.fail();
            let _closed = self.fields.finish();
            return Err(e);
        }
        self.open = Some(Open {
            frame_bytes,
            fields: field_ranges,
            reductions: reduction_ranges,
            condition,
            next_kept: fields.streams.iter().map(|s| s.kept_frames).collect(),
            received: layout.streams.iter().map(|s| s.kept_frames).collect(),
            expected: layout.streams.iter().map(|s| s.expected_frames).collect(),
            failed: false,
        });
        Ok(())
    }

    fn write(&mut self, frame: &Frame) -> Result<()> {
        let Some(open) = self.open.as_mut() else { return Err(Error::Usage("write called before begin")) };
        if open.failed {
            return Err(Error::Usage("write called after a failed write: call finish"));
        }
        let checked = match open.next_kept.get(frame.stream) {
            None => Err("the layout has no such stream".to_owned()),
            Some(_) if frame.data.len() != open.frame_bytes => {
                Err(format!("{} bytes, the layout's frames are {}", frame.data.len(), open.frame_bytes))
            }
            Some(&next) => Ok(next),
        };
        let next = match checked {
            Ok(next) => next,
            Err(reason) => {
                // Refused before either output sees it, a frame still goes to the reductions'
                // sink, of a stream no layout has, for it to refuse too: a sink shared by MPI
                // ranks joins their agreement on the frame there, so that the ranks whose
                // frames were accepted fail in their own write instead of waiting for this
                // rank. This error is the one returned: it names the frame as this sink's
                // caller laid it out.
                let _ = self.reductions.write(&Frame::new(usize::MAX, frame.index, frame.step, Vec::new()));
                return Err(Error::FrameMismatch { stream: frame.stream, index: frame.index, reason });
            }
        };
        // A frame the sinks refuse is not a write (the protocol's rule); anything else fails
        // the run.
        let fails = |e: &Error| !matches!(e, Error::FrameMismatch { .. });
        // The reductions of every frame, first: the fields output never holds a frame whose
        // reductions are missing.
        let mut part = Vec::new();
        Self::gather(&frame.data, &open.reductions, &mut part);
        let result = self.reductions.write(&Frame::new(frame.stream, frame.index, frame.step, part));
        if let Err(e) = result {
            open.failed = fails(&e);
            return Err(e);
        }
        let data = &frame.data;
        let keeps = self.thinning.keeps(frame.index, |when| {
            when.holds(&|i| {
                open.condition.get(i).map_or(f64::NAN, |(r, t)| value(data.get(r.clone()).unwrap_or_default(), *t))
            })
        });
        if keeps {
            let mut part = std::mem::take(&mut self.buffer);
            Self::gather(data, &open.fields, &mut part);
            let kept = Frame::new(frame.stream, next, frame.step, part);
            let result = self.fields.write(&kept);
            self.buffer = kept.data;
            if let Err(e) = result {
                // The reductions of this frame are stored: a refused frame here is a failure.
                open.failed = true;
                return Err(e);
            }
            open.next_kept[frame.stream] += 1;
        } else {
            self.skipped_frames += 1;
            self.skipped_bytes += open.fields.iter().map(|r| r.len() as u64).sum::<u64>();
        }
        open.received[frame.stream] += 1;
        Ok(())
    }

    fn fail(&mut self) {
        if let Some(open) = self.open.as_mut() {
            open.failed = true;
        }
        self.fields.fail();
        self.reductions.fail();
    }

    fn leave_incomplete(&mut self, stream: usize) {
        self.fields.leave_incomplete(stream);
        self.reductions.leave_incomplete(stream);
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        let Some(open) = self.open.take() else { return Err(Error::Usage("finish called without begin")) };
        if open.failed {
            self.fields.fail();
            self.reductions.fail();
        }
        // A stream that ended short of its frames is incomplete in the reductions' output by
        // its count; in the fields' output it may hold every frame it would keep (the last
        // kept frame came before the stop) or expect none (a condition): say so.
        let (index, count) = self.shard;
        for (i, (r, e)) in open.received.iter().zip(&open.expected).enumerate() {
            if i % count == index && e.is_some_and(|e| *r < e) {
                self.fields.leave_incomplete(i);
            }
        }
        let reductions = self.reductions.finish();
        if reductions.is_err() {
            // Neither output may say complete when the other cannot.
            self.fields.fail();
        }
        let fields = self.fields.finish();
        let (r, f) = (reductions?, fields?);
        Ok(SinkSummary {
            frames: r.frames,
            bytes: r.bytes + f.bytes,
            write_seconds: r.write_seconds + f.write_seconds,
            checksum: r.checksum.wrapping_add(f.checksum),
            skipped_frames: self.skipped_frames,
            skipped_bytes: self.skipped_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests fail loudly")]

    use wgpipe_storage::{FieldSpec, SinkOptions, open_output, open_sink};

    use super::*;

    /// `v` on a 2 × 2 grid and its four one-value reductions; one stream of 12 frames.
    fn layout() -> StreamLayout {
        let mut fields = vec![FieldSpec::new("v", DType::F32, [2, 2])];
        fields.extend(["v_min", "v_max", "v_mean", "v_sum"].map(|n| FieldSpec::new(n, DType::F32, Vec::new())));
        StreamLayout::new(fields).with_stream(StreamInfo::new("s").with_expected_frames(12))
    }

    fn frame(i: u64) -> Frame {
        Frame::new(0, i, i + 1, (0..8u32).flat_map(|v| (v as f32 * 0.1 + i as f32).to_le_bytes()).collect())
    }

    fn sink(dir: &std::path::Path, thinning: Thinning) -> ThinnedSink {
        let open = |name: &str| open_sink("hdf5", &SinkOptions::new(dir.join(name))).unwrap();
        ThinnedSink::new(open("f.h5"), open("r.h5"), Analysis::of(["v"]), thinning)
    }

    /// Keeps what it is given, taking the first row of every 2-D field (a rank's block of a
    /// split grid), the rest whole.
    struct FirstRow(std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>);

    impl wgpipe_storage::Backend for FirstRow {
        fn frame_layout(&self, layout: &StreamLayout) -> Option<StreamLayout> {
            let mut frames = layout.clone();
            for f in frames.fields.iter_mut().filter(|f| f.shape.len() == 2) {
                f.shape[0] = 1;
            }
            Some(frames)
        }
        fn begin(&mut self, _layout: &StreamLayout) -> Result<()> {
            Ok(())
        }
        fn write(&mut self, frame: &Frame, _fields: wgpipe_storage::Fields<'_>) -> Result<Option<u64>> {
            self.0.lock().unwrap().push(frame.data.clone());
            Ok(None)
        }
        fn finish(&mut self, _outcome: &wgpipe_storage::Outcome<'_>) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn frames_whose_fields_a_sink_takes_as_a_block_are_cut_where_the_block_lies() {
        let (fields, reductions) = (Default::default(), Default::default());
        let sink = |kept: &std::sync::Arc<_>| -> Box<dyn Sink> {
            Box::new(wgpipe_storage::Checked::from(FirstRow(std::sync::Arc::clone(kept))))
        };
        let mut s = ThinnedSink::new(
            sink(&fields),
            sink(&reductions),
            Analysis::of(["v"]),
            Thinning::when(Trigger::parse("v_max > 1.5").unwrap()),
        );
        // The produced frame: v's block (one row: 2 values), then its four reductions.
        let frames = s.frame_layout(&layout()).unwrap();
        assert_eq!((frames.fields[0].shape.as_slice(), frames.frame_bytes().unwrap()), (&[1, 2][..], 24));
        s.begin(&layout()).unwrap();
        for i in 0..3u32 {
            let values = [10.0 + i as f32, 20.0, 0.0, i as f32, 1.0, 2.0];
            let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            s.write(&Frame::new(0, u64::from(i), u64::from(i), data)).unwrap();
        }
        s.finish().unwrap();
        let bytes = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        // v_max (the 4th value) is 0, 1, 2: frame 2 alone keeps its block.
        assert_eq!(*fields.lock().unwrap(), [bytes(&[12.0, 20.0])]);
        let stored = reductions.lock().unwrap();
        assert_eq!(stored.len(), 3);
        assert_eq!(stored[1], bytes(&[0.0, 1.0, 1.0, 2.0]));
    }

    /// Takes every frame and counts the frames the protocol refused it.
    struct CountsRefusals(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl wgpipe_storage::Backend for CountsRefusals {
        fn begin(&mut self, _layout: &StreamLayout) -> Result<()> {
            Ok(())
        }
        fn write(&mut self, _frame: &Frame, _fields: wgpipe_storage::Fields<'_>) -> Result<Option<u64>> {
            Ok(None)
        }
        fn refused(&mut self, _error: &Error) -> bool {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            true
        }
        fn finish(&mut self, _outcome: &wgpipe_storage::Outcome<'_>) -> Result<()> {
            Ok(())
        }
    }

    /// A frame this sink refuses itself still reaches the reductions' sink, refused there too:
    /// where ranks share that sink, its refusal is what tells the other ranks (their frames
    /// were accepted and they wait in the frame's agreement).
    #[test]
    fn a_frame_refused_here_is_refused_by_the_reductions_sink_too() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (fields, reductions) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let sink = |count: &Arc<AtomicUsize>| -> Box<dyn Sink> {
            Box::new(wgpipe_storage::Checked::from(CountsRefusals(Arc::clone(count))))
        };
        let mut s = ThinnedSink::new(sink(&fields), sink(&reductions), Analysis::of(["v"]), Thinning::every(1));
        s.begin(&layout()).unwrap();
        let mut long = frame(0);
        long.data.extend([0; 4]);
        let other_stream = Frame::new(1, 0, 1, frame(0).data);
        for (what, bad) in [("a frame too long", long), ("a stream the layout lacks", other_stream)] {
            let e = s.write(&bad).unwrap_err();
            assert!(
                matches!(&e, Error::FrameMismatch { stream, index: 0, .. } if *stream == bad.stream),
                "{what}: {e}"
            );
        }
        assert_eq!((reductions.load(Ordering::SeqCst), fields.load(Ordering::SeqCst)), (2, 0));
        s.write(&frame(0)).unwrap();
        s.finish().unwrap();
    }

    #[test]
    fn a_stream_stopped_after_its_last_kept_frame_is_incomplete_in_both_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = sink(dir.path(), Thinning::every(5));
        s.begin(&layout()).unwrap();
        // Frames 0 to 10 of 12: the fields output has its 3 (0, 5, 10), the stream is short.
        for i in 0..11 {
            s.write(&frame(i)).unwrap();
        }
        let summary = s.finish().unwrap();
        assert_eq!((summary.frames, summary.skipped_frames, summary.skipped_bytes), (11, 8, 8 * 16));
        let fields = open_output(dir.path().join("f.h5")).unwrap();
        assert_eq!(fields.streams()[0].frames, 3);
        assert_eq!(fields.steps(0).unwrap(), [1, 6, 11]);
        assert!(
            !fields.streams()[0].complete && !fields.complete(),
            "3 of 3 kept frames, but the stream stopped short"
        );
        assert!(!open_output(dir.path().join("r.h5")).unwrap().streams()[0].complete);
    }

    #[test]
    fn frames_of_the_wrong_size_are_refused_before_anything_is_stored_and_are_not_failures() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = sink(dir.path(), Thinning::when(Trigger::parse("v_max > 100").unwrap()));
        s.begin(&layout()).unwrap();
        let mut long = frame(0);
        long.data.extend([0; 4]);
        let e = s.write(&long).unwrap_err();
        assert!(matches!(e, Error::FrameMismatch { .. }), "{e}");
        for i in 0..12 {
            s.write(&frame(i)).unwrap();
        }
        s.finish().unwrap();
        let reductions = open_output(dir.path().join("r.h5")).unwrap();
        assert!(reductions.complete() && reductions.streams()[0].frames == 12, "the refused frame stored nothing");
        let fields = open_output(dir.path().join("f.h5")).unwrap();
        assert_eq!(fields.streams()[0].frames, 0, "v never exceeds 100");
        assert!(fields.complete(), "a refused frame does not fail the run");
    }
}
