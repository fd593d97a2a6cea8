//! The files that make a directory an ADIOS2 BP5 output, named once: recognising one needs
//! neither ADIOS2 nor the `adios2` feature, and `open` (which reader), `prepare` (what an
//! output may replace) and the ADIOS2 reader all ask here.

use std::path::Path;

/// BP5's metadata index, in every BP directory: what `prepare` takes for a BP output.
pub(crate) const INDEX: &str = "md.idx";

/// BP5's meta-metadata file, which BP4 does not write: with [`INDEX`], the mark of BP5.
pub(crate) const META_META: &str = "mmd.0";

/// Whether `dir` holds a BP5 output.
pub(crate) fn holds_bp5(dir: &Path) -> bool {
    dir.join(INDEX).is_file() && dir.join(META_META).is_file()
}
