//! The null sink: stores nothing, for measuring compute without storage.

use std::time::Instant;

use crate::error::{Error, Result};
use crate::frame::Frame;
use crate::schema::StreamLayout;
use crate::sink::{Sink, SinkSummary};
use crate::validate::Validator;

/// A sink that counts frames and bytes and checksums them, but stores nothing.
///
/// It validates frames like every other sink and checksums every byte (or takes the hash
/// the producer computed, [`Frame::data_hash`], as every sink does), so a run with it
/// measures the full pipeline minus the disk, and its checksum is the reference the other
/// sinks' must equal.
#[derive(Debug, Default)]
pub struct NullSink {
    validator: Option<Validator>,
    summary: SinkSummary,
}

impl NullSink {
    /// A null sink (same as `NullSink::default()`).
    pub fn new() -> Self {
        NullSink::default()
    }
}

impl Sink for NullSink {
    fn begin(&mut self, layout: &StreamLayout) -> Result<()> {
        if self.validator.is_some() {
            return Err(Error::Usage("begin called twice"));
        }
        self.validator = Some(Validator::new(layout)?);
        Ok(())
    }

    fn write(&mut self, frame: &Frame) -> Result<()> {
        let start = Instant::now();
        let v = self.validator.as_mut().ok_or(Error::Usage("write called before begin"))?;
        v.check(frame)?;
        v.commit(frame);
        self.summary.record(frame, start);
        Ok(())
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        if self.validator.take().is_none() {
            return Err(Error::Usage("finish called without begin"));
        }
        Ok(std::mem::take(&mut self.summary))
    }
}
