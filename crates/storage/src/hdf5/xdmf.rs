//! The XDMF sidecar ([`crate::SinkOptions::xdmf`]): `OUT.xdmf` beside `OUT.h5`, an XML
//! description that ParaView and VisIt read to open the run with no code.
//!
//! Every stream is a temporal collection (`CollectionType="Temporal"`) of uniform grids, one
//! per frame, at `Time` = the frame's step. A grid is a `3DCoRectMesh` with origin 0 and
//! spacing 1: `z, y, x` for a 3-D field, `1, y, x` for a 2-D one and `1, 1, x` for a 1-D one
//! (ParaView's XDMF reader lays a `2DCoRectMesh` in the y-z plane; one layer of a 3-D mesh
//! shows in the x-y plane, as expected). Each field of that shape is a node-centred
//! `Attribute` whose values are a hyperslab of the HDF5 dataset (`OUT.h5:/stream/field`,
//! frame `i`); nothing is copied. Dimensions are listed slowest axis first, as XDMF wants and
//! as the datasets are stored (C order). The document is XDMF 2 (`Version="2.0"`), the
//! dialect of hyperslab items that ParaView's "XDMF Reader" and VisIt read; ParaView's
//! Xdmf3 readers do not resolve these hyperslabs.
//! Fields of different shapes make one collection per shape; `float16` fields, which XDMF
//! has no type for, are left out.
//!
//! The sidecar is generated from the file itself (through the HDF5 reader), so it describes
//! every stream the file holds, appended ones included, up to the frames actually written.
//! It is written to a temporary name and renamed, so a reader never sees half of it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::frame::DType;
use crate::schema::FieldSpec;

/// Where the sidecar of the HDF5 output `path` goes: the same name with extension `.xdmf`.
pub(crate) fn sidecar_path(path: &Path) -> PathBuf {
    path.with_extension("xdmf")
}

/// Errors if the sidecar of a new output `path` exists and may not be replaced.
pub(crate) fn check_free(path: &Path, overwrite: bool) -> Result<()> {
    let sidecar = sidecar_path(path);
    if !overwrite && sidecar.exists() {
        return Err(Error::OutputExists(sidecar));
    }
    Ok(())
}

/// XDMF's `NumberType` and `Precision` of an element type; `None` for `float16`.
fn number_type(dtype: DType) -> Option<(&'static str, usize)> {
    match dtype {
        DType::U8 => Some(("UChar", 1)),
        DType::U16 => Some(("UShort", 2)),
        DType::U32 => Some(("UInt", 4)),
        DType::I32 => Some(("Int", 4)),
        DType::F32 => Some(("Float", 4)),
        DType::F64 => Some(("Float", 8)),
        DType::F16 => None,
    }
}

/// Text with XML's special characters escaped (file names may hold them).
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Space-separated numbers.
fn join(values: impl IntoIterator<Item = usize>) -> String {
    values.into_iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" ")
}

/// One stream as the sidecar sees it.
pub(crate) struct StreamFrames<'a> {
    pub name: &'a str,
    pub steps: &'a [u64],
}

/// The XDMF document for `streams` of fields `fields`, whose datasets are in the file named
/// `h5_name` (relative to the sidecar).
pub(crate) fn document(h5_name: &str, fields: &[FieldSpec], streams: &[StreamFrames<'_>]) -> String {
    let h5 = escape(h5_name);
    // Fields XDMF can show, grouped by frame shape (a 1-D field shows as one row).
    let mut shapes: Vec<(Vec<usize>, Vec<&FieldSpec>)> = Vec::new();
    // A field of one value per frame (a reduction) is no mesh.
    for f in fields.iter().filter(|f| number_type(f.dtype).is_some() && !f.shape.is_empty()) {
        let mut shape = vec![1; 3 - f.shape.len().min(3)];
        shape.extend(&f.shape);
        match shapes.iter_mut().find(|(s, _)| *s == shape) {
            Some((_, group)) => group.push(f),
            None => shapes.push((shape, vec![f])),
        }
    }
    let mut x = String::from("<?xml version=\"1.0\" ?>\n<Xdmf Version=\"2.0\">\n  <Domain>\n");
    for s in streams {
        for (shape, group) in &shapes {
            let name =
                if shapes.len() == 1 { s.name.to_owned() } else { format!("{} {}", s.name, join(shape.clone())) };
            let rank = shape.len();
            let dims = join(shape.clone());
            let _ = writeln!(x, "    <Grid Name=\"{name}\" GridType=\"Collection\" CollectionType=\"Temporal\">");
            for (i, step) in s.steps.iter().enumerate() {
                let _ = writeln!(x, "      <Grid Name=\"{name} frame {i}\" GridType=\"Uniform\">");
                let _ = writeln!(x, "        <Time Value=\"{step}\"/>");
                let _ = writeln!(x, "        <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"{dims}\"/>");
                let _ = writeln!(x, "        <Geometry GeometryType=\"ORIGIN_DXDYDZ\">");
                for (what, v) in [("Origin", "0"), ("Spacing", "1")] {
                    let values = vec![v; rank].join(" ");
                    let _ = writeln!(
                        x,
                        "          <DataItem Name=\"{what}\" Dimensions=\"{rank}\" NumberType=\"Float\" Precision=\"8\" \
                         Format=\"XML\">{values}</DataItem>"
                    );
                }
                let _ = writeln!(x, "        </Geometry>");
                for f in group {
                    let Some((number, precision)) = number_type(f.dtype) else { continue };
                    // Start, stride and count of frame i in the `[frames, *shape]` dataset.
                    let on_disk = f.shape.len() + 1;
                    let start = join(std::iter::once(i).chain(f.shape.iter().map(|_| 0)));
                    let stride = join(std::iter::repeat_n(1, on_disk));
                    let count = join(std::iter::once(1).chain(f.shape.iter().copied()));
                    let all = join(std::iter::once(s.steps.len()).chain(f.shape.iter().copied()));
                    let _ =
                        writeln!(x, "        <Attribute Name=\"{}\" AttributeType=\"Scalar\" Center=\"Node\">", f.name);
                    let _ = writeln!(
                        x,
                        "          <DataItem ItemType=\"HyperSlab\" Dimensions=\"{dims}\" Type=\"HyperSlab\">"
                    );
                    let _ = writeln!(
                        x,
                        "            <DataItem Dimensions=\"3 {on_disk}\" NumberType=\"UInt\" Format=\"XML\">{start} {stride} \
                         {count}</DataItem>"
                    );
                    let _ = writeln!(
                        x,
                        "            <DataItem Dimensions=\"{all}\" NumberType=\"{number}\" Precision=\"{precision}\" \
                         Format=\"HDF\">{h5}:/{}/{}</DataItem>",
                        s.name, f.name
                    );
                    let _ = writeln!(x, "          </DataItem>\n        </Attribute>");
                }
                let _ = writeln!(x, "      </Grid>");
            }
            let _ = writeln!(x, "    </Grid>");
        }
    }
    x.push_str("  </Domain>\n</Xdmf>\n");
    x
}

/// Writes the sidecar of the closed HDF5 output `path`, describing what the file holds.
pub(crate) fn write_sidecar(path: &Path) -> Result<()> {
    let out = super::read::open(path)?;
    let steps: Vec<Vec<u64>> = (0..out.streams().len()).map(|i| out.steps(i)).collect::<Result<_>>()?;
    let streams: Vec<StreamFrames<'_>> =
        out.streams().iter().zip(&steps).map(|(s, steps)| StreamFrames { name: &s.name, steps }).collect();
    let h5_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let text = document(&h5_name, out.fields(), &streams);
    let sidecar = sidecar_path(path);
    let temporary = sidecar.with_extension("xdmf.partial");
    std::fs::write(&temporary, text).map_err(|e| Error::io("cannot write the XDMF sidecar", &temporary, e))?;
    std::fs::rename(&temporary, &sidecar).map_err(|e| Error::io("cannot write the XDMF sidecar", &sidecar, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_a_hyperslab_of_its_dataset_at_its_step() {
        let fields = [FieldSpec::new("c", DType::F64, [4, 3, 5]), FieldSpec::new("h", DType::F16, [4, 3, 5])];
        let x = document("a&b.h5", &fields, &[StreamFrames { name: "s0", steps: &[7, 14] }]);
        assert!(x.contains("<Time Value=\"14\"/>"), "{x}");
        assert!(x.contains("TopologyType=\"3DCoRectMesh\" Dimensions=\"4 3 5\""), "{x}");
        assert!(x.contains(">1 0 0 0 1 1 1 1 1 4 3 5</DataItem>"), "{x}");
        assert!(
            x.contains("Dimensions=\"2 4 3 5\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">a&amp;b.h5:/s0/c<")
        );
        assert!(!x.contains("/s0/h<"), "float16 has no XDMF type: {x}");
    }
}
