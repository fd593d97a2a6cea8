//! The ADIOS2 sink: one ADIOS2 step per frame, written by the BP5 engine into a directory or
//! streamed by the SST engine to readers running at the same time.
//!
//! Variables are named `STREAM/FIELD` (a global array shaped like the field, C order; a
//! float16 field as uint16, its bit patterns, ADIOS2 having no such type) and `STREAM/step`
//! (the frame's simulation step, a uint64 value); a step holds the variables of
//! the one stream whose frame it is, so a variable's own steps are its stream's frames in
//! order (the `adios2` Python API reads frame `i` of `s0/u` with `step_selection=[i, 1]`).
//! Run attributes keep their names and types, a stream's are `STREAM/NAME`, a field's
//! `units` and `long_name` are `STREAM/FIELD/units` and `STREAM/FIELD/long_name`. The sink's
//! own: `format`, `axis_order`, `streams` (the names, in layout order, comma-separated) and
//! `fields`, the fields in layout order as JSON (name, dtype, shape, dims, units, long_name:
//! raw's and Zarr's spelling), which ADIOS2 keeps nowhere else (its variables are sorted by
//! name, a float16 field is a uint16 variable, axes have no names, and a field of streams
//! without frames has no variable).
//!
//! What only the end knows, `STREAM/frames` (uint64) and `STREAM/complete` and `complete`
//! (uint8, 1), as the other sinks record them, travels with the frame that completes the run:
//! ADIOS2 writes an attribute with the step open when it is defined, so they are defined
//! inside the last frame's step, and every step holds its stream's variables (a reader that
//! walks the steps and inquires the fields in each, as the ADIOS2 tutorial's pdf-calc does,
//! reads the file to its end). A run that ends short of its frames (stopped, failed, killed)
//! leaves them absent: read that as incomplete, the frames being those the variables' step
//! counts agree on. Only streams of unknown length (fields kept by a condition) learn they are
//! complete after their last frame: their run ends with a closing step without variables.

use crate::error::{Error, Result};
use crate::frame::{DType, Fields, Frame};
use crate::json_meta::FieldEntry;
use crate::options::{Adios2Engine, QueueFullPolicy, SinkOptions};
use crate::prepare::OutputKind;
use crate::protocol::{Backend, Checked, Outcome};
use crate::schema::{AttrValue, StreamLayout};

use super::ffi::{self, Type, Var, Writer};

/// Run attributes this sink writes itself, beyond those every sink writes
/// ([`crate::validate::RESERVED_RUN_ATTRS`]): a layout using one is refused.
pub(crate) const SINK_RUN_ATTRS: &[&str] = &["streams"];

/// Value of the `format` attribute, which marks a BP5 output as wgpipe's.
pub(crate) const FORMAT: &str = "wgpipe-adios2";
/// Name of the attribute listing the fields (JSON), read back by `super::read`.
pub(crate) const FIELDS_ATTR: &str = "fields";

/// State between `begin` and `finish`.
#[derive(Debug)]
struct Open {
    writer: Writer,
    /// Per stream, its fields' variables (layout order) and its step variable.
    vars: Vec<(Vec<Var>, Var)>,
    /// Per stream, its frames so far against its expected ones.
    progress: Vec<Progress>,
    /// The run's `complete` was written, with the frame that completed the run.
    run_recorded: bool,
}

/// One stream's frames written, against its expected frames.
#[derive(Debug)]
struct Progress {
    name: String,
    /// `None`: unknown (fields kept by a condition).
    expected: Option<u64>,
    written: u64,
    /// Its `frames` and `complete` were written, with its last frame.
    recorded: bool,
}

/// A number attribute as [`Writer::step`] takes it: name, type, value.
type NumberAttr = (String, Type, Vec<u8>);

impl Progress {
    /// `STREAM/frames` and `STREAM/complete` (1): the stream holds `written` frames, all of them.
    fn complete_attributes(&self) -> [NumberAttr; 2] {
        [
            (format!("{}/frames", self.name), ffi::TYPE_UINT64, self.written.to_le_bytes().to_vec()),
            (format!("{}/complete", self.name), ffi::TYPE_UINT8, vec![1]),
        ]
    }

    /// Whether it holds its expected frames, all of them.
    fn full(&self) -> bool {
        self.expected == Some(self.written)
    }
}

/// The run's `complete` (1).
fn run_complete() -> NumberAttr {
    ("complete".to_owned(), ffi::TYPE_UINT8, vec![1])
}

impl Open {
    /// Counts frame `index` of `stream` written, and returns the attributes its step must
    /// carry: the stream's own when this is its last expected frame, and the run's when it
    /// is the last of the run ([`Open::recorded`] marks them written once the step is).
    fn closing_attributes(&mut self, stream: usize, index: u64) -> Vec<NumberAttr> {
        let mut attrs = Vec::new();
        if let Some(p) = self.progress.get_mut(stream) {
            p.written = p.written.max(index + 1);
            if !p.recorded && p.full() {
                attrs.extend(p.complete_attributes());
            }
        }
        if !self.run_recorded && self.progress.iter().all(Progress::full) {
            attrs.push(run_complete());
        }
        attrs
    }

    /// Marks what [`Open::closing_attributes`] gave for a frame of `stream` as written.
    fn recorded(&mut self, stream: usize) {
        if let Some(p) = self.progress.get_mut(stream) {
            p.recorded |= p.full();
        }
        self.run_recorded |= self.progress.iter().all(Progress::full);
    }
}

/// The ADIOS2 backend (cargo feature `adios2`): BP5 files or SST streams through ADIOS2's C
/// library, loaded when the sink begins (see the guide's "ADIOS2" page).
#[derive(Debug)]
pub struct Adios2Backend {
    options: SinkOptions,
    open: Option<Open>,
}

/// The ADIOS2 sink: [`Adios2Backend`] driven through the sink protocol.
pub type Adios2Sink = Checked<Adios2Backend>;

impl Adios2Sink {
    /// An ADIOS2 sink writing `options.path` with `options.adios2_engine`.
    pub fn new(options: SinkOptions) -> Self {
        Checked::from(Adios2Backend { options, open: None })
    }
}

/// ADIOS2's type of an element type: float16, which ADIOS2 has not, as uint16 (its bits;
/// the `fields` attribute says float16).
pub(super) fn adios2_type(dtype: DType) -> Type {
    match dtype {
        DType::U8 => ffi::TYPE_UINT8,
        DType::U16 | DType::F16 => ffi::TYPE_UINT16,
        DType::U32 => ffi::TYPE_UINT32,
        DType::I32 => ffi::TYPE_INT32,
        DType::F32 => ffi::TYPE_FLOAT,
        DType::F64 => ffi::TYPE_DOUBLE,
    }
}

impl Adios2Backend {
    fn engine_name(&self) -> &'static str {
        match self.options.adios2_engine {
            Adios2Engine::Bp5 => "BP5",
            Adios2Engine::Sst => "SST",
        }
    }

    /// An ADIOS2 failure, naming the engine and the output (a BP5 directory, an SST stream).
    fn err(&self, message: String) -> Error {
        Error::Adios2 { engine: self.engine_name(), path: self.options.path.clone(), message }
    }

    /// Defines an attribute of any [`AttrValue`].
    fn attribute(&self, w: &mut Writer, name: &str, value: &AttrValue) -> Result<()> {
        let r = match value {
            AttrValue::Int(i) => w.number_attribute(name, ffi::TYPE_INT64, &i.to_le_bytes()),
            AttrValue::UInt(u) => w.number_attribute(name, ffi::TYPE_UINT64, &u.to_le_bytes()),
            AttrValue::Float(f) => w.number_attribute(name, ffi::TYPE_DOUBLE, &f.to_le_bytes()),
            AttrValue::Float32(f) => w.number_attribute(name, ffi::TYPE_FLOAT, &f.to_le_bytes()),
            AttrValue::Text(t) => w.text_attribute(name, t),
        };
        r.map_err(|m| self.err(m))
    }

    /// Makes the writer: engine, its parameters, variables, attributes; opens it.
    fn create(&self, layout: &StreamLayout) -> Result<Open> {
        let mut w = Writer::new("wgpipe", self.engine_name()).map_err(|m| self.err(m))?;
        if self.options.adios2_engine == Adios2Engine::Sst {
            let policy = match self.options.queue_full_policy {
                QueueFullPolicy::Block => "Block",
                QueueFullPolicy::Discard => "Discard",
            };
            for (k, v) in [
                ("RendezvousReaderCount", "1"),
                ("QueueLimit", &self.options.queue_limit.to_string()),
                ("QueueFullPolicy", policy),
                ("DataTransport", "WAN"),
            ] {
                w.set_parameter(k, v).map_err(|m| self.err(m))?;
            }
        }
        let mut vars = Vec::with_capacity(layout.streams.len());
        for s in &layout.streams {
            let mut fields = Vec::with_capacity(layout.fields.len());
            for f in &layout.fields {
                let ty = adios2_type(f.dtype);
                fields
                    .push(w.define_variable(&format!("{}/{}", s.name, f.name), ty, &f.shape).map_err(|m| self.err(m))?);
                if let Some(u) = &f.units {
                    self.attribute(&mut w, &format!("{}/{}/units", s.name, f.name), &AttrValue::from(u.as_str()))?;
                }
                if let Some(l) = &f.long_name {
                    self.attribute(&mut w, &format!("{}/{}/long_name", s.name, f.name), &AttrValue::from(l.as_str()))?;
                }
            }
            let step =
                w.define_variable(&format!("{}/step", s.name), ffi::TYPE_UINT64, &[]).map_err(|m| self.err(m))?;
            for (k, v) in &s.attributes {
                self.attribute(&mut w, &format!("{}/{k}", s.name), v)?;
            }
            if let Some(e) = s.expected_frames {
                self.attribute(&mut w, &format!("{}/expected_frames", s.name), &AttrValue::from(e))?;
            }
            vars.push((fields, step));
        }
        for (k, v) in &layout.attributes {
            self.attribute(&mut w, k, v)?;
        }
        self.attribute(&mut w, "format", &AttrValue::from(FORMAT))?;
        self.attribute(&mut w, "axis_order", &AttrValue::from(crate::schema::AXIS_ORDER))?;
        let names: Vec<&str> = layout.streams.iter().map(|s| s.name.as_str()).collect();
        self.attribute(&mut w, "streams", &AttrValue::from(names.join(",")))?;
        let fields: Vec<FieldEntry> = layout.fields.iter().map(FieldEntry::from_spec).collect();
        let fields = serde_json::to_string(&fields).map_err(|e| self.err(format!("the fields attribute: {e}")))?;
        self.attribute(&mut w, FIELDS_ATTR, &AttrValue::from(fields))?;
        let path = self.options.path.to_string_lossy().into_owned();
        let w = match self.options.adios2_engine {
            Adios2Engine::Bp5 => {
                w.open(&path).map_err(|m| self.err(m))?;
                w
            }
            Adios2Engine::Sst => self.open_sst(w, &path)?,
        };
        let progress = layout.streams.iter().map(|s| Progress {
            name: s.name.clone(),
            expected: s.expected_frames,
            written: 0,
            recorded: false,
        });
        Ok(Open { writer: w, vars, progress: progress.collect(), run_recorded: false })
    }
}

impl Adios2Backend {
    /// Opens an SST stream, waiting at most `open_timeout` for its reader.
    ///
    /// An SST writer's open waits for its first reader without a limit of its own, so it runs
    /// on a thread of its own here: after the timeout the run fails, naming the stream, and
    /// that thread (still waiting inside ADIOS2, holding this writer) is left until the
    /// process exits; ADIOS2 cannot cancel it.
    fn open_sst(&self, mut w: Writer, path: &str) -> Result<Writer> {
        let (tx, rx) = std::sync::mpsc::channel();
        let stream = path.to_owned();
        std::thread::Builder::new()
            .name("wgpipe-sst-open".into())
            .spawn(move || {
                let r = w.open(&stream);
                let _ = tx.send((w, r));
            })
            .map_err(|e| self.err(format!("cannot start the thread that opens the stream: {e}")))?;
        match rx.recv_timeout(self.options.open_timeout) {
            Ok((w, Ok(()))) => Ok(w),
            Ok((_, Err(m))) => Err(self.err(m)),
            Err(_) => Err(self.err(format!(
                "no reader connected within {} s: a reader opens the stream {path:?} with the SST engine (its \
                 contact file is {path}.sst, e.g. examples/adios2/pdf_reader.py {path}); start one, or raise \
                 output.open_timeout",
                self.options.open_timeout.as_secs()
            ))),
        }
    }
}

impl Adios2Backend {
    /// Records what no frame's step recorded (streams of unknown length learn they are
    /// complete only now): the complete streams' `frames` and `complete`, and the run's
    /// `complete`, in a closing step without variables; nothing, without a step, when there is
    /// nothing to record.
    fn record_outcome(&self, open: &mut Open, outcome: &Outcome<'_>) -> Result<()> {
        let mut attrs = Vec::new();
        for (i, (p, &n)) in open.progress.iter_mut().zip(outcome.frames()).enumerate() {
            if !p.recorded && outcome.stream_complete(i, n) {
                p.written = n;
                attrs.extend(p.complete_attributes());
            }
        }
        if !open.run_recorded && outcome.complete() {
            attrs.push(run_complete());
        }
        if attrs.is_empty() {
            return Ok(());
        }
        open.writer.step(&[], &attrs).map_err(|m| self.err(format!("the closing step: {m}")))
    }
}

impl Backend for Adios2Backend {
    /// What ADIOS2 cannot do here: resume.
    fn check_layout(&self, layout: &StreamLayout) -> Result<()> {
        if self.options.append {
            return Err(Error::InvalidOptions(
                "the adios2 sink cannot add streams to an existing output (resume): write a new one".into(),
            ));
        }
        if let Some(key) = layout.attributes.keys().find(|k| SINK_RUN_ATTRS.contains(&k.as_str())) {
            return Err(Error::InvalidLayout(format!(
                "run attribute {key:?} is written by the adios2 sink itself: rename it"
            )));
        }
        Ok(())
    }

    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        self.options.check()?;
        self.check_layout(layout)?;
        crate::validate::refuse_encoded_fields(layout, "adios2")?;
        ffi::available().map_err(|m| self.err(m))?;
        if self.options.adios2_engine == Adios2Engine::Bp5 {
            crate::prepare::prepare(&self.options.path, self.options.overwrite, OutputKind::BpDir)?;
        }
        self.open = Some(self.create(layout)?);
        Ok(())
    }

    fn write(&mut self, frame: &Frame, fields: Fields<'_>) -> Result<Option<u64>> {
        let open = self.open.as_mut().ok_or(Error::Usage("write called before begin"))?;
        let closing = open.closing_attributes(frame.stream, frame.index);
        let (vars, step_var) = &open.vars[frame.stream];
        let step = frame.step.to_le_bytes();
        let puts: Vec<(Var, &[u8])> =
            vars.iter().copied().zip(fields.iter()).chain(std::iter::once((*step_var, &step[..]))).collect();
        let r = open.writer.step(&puts, &closing);
        if r.is_ok() {
            open.recorded(frame.stream);
        }
        r.map_err(|m| self.err(format!("frame {} of stream {}: {m}", frame.index, frame.stream)))?;
        Ok(None)
    }

    fn finish(&mut self, outcome: &Outcome<'_>) -> Result<()> {
        let mut open = self.open.take().ok_or(Error::Usage("finish called without begin"))?;
        // Streams short of their frames record nothing (read as incomplete); the others were
        // recorded by their last frame, but for streams of unknown length.
        let recorded = if outcome.failed() { Ok(()) } else { self.record_outcome(&mut open, outcome) };
        let closed = open.writer.close().map_err(|m| self.err(m));
        drop(open);
        recorded.and(closed)
    }
}
