//! The null sink: stores nothing, for measuring compute without storage.

use crate::error::Result;
use crate::frame::Fields;
use crate::frame::Frame;
use crate::protocol::{Backend, Checked, Outcome};
use crate::schema::StreamLayout;

/// The backend that stores nothing.
///
/// Driven through [`Checked`] like every other sink, it validates frames and checksums every
/// byte (or takes the hash the producer computed, [`Frame::data_hash`]), so a run with it
/// measures the full pipeline minus the disk, and its checksum is the reference the other
/// sinks' must equal.
#[derive(Debug, Default)]
pub struct NullBackend;

/// A sink that counts frames and bytes and checksums them, but stores nothing.
pub type NullSink = Checked<NullBackend>;

impl NullSink {
    /// A null sink (same as `NullSink::default()`).
    pub fn new() -> Self {
        Checked::from(NullBackend)
    }
}

impl Backend for NullBackend {
    fn begin(&mut self, _layout: &StreamLayout) -> Result<()> {
        Ok(())
    }

    fn write(&mut self, _frame: &Frame, _fields: Fields<'_>) -> Result<Option<u64>> {
        Ok(None)
    }

    fn finish(&mut self, _outcome: &Outcome<'_>) -> Result<()> {
        Ok(())
    }
}
