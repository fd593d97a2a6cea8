//! The netCDF-4 files both readers of the format check: xarray (`tests/netcdf.rs`) and
//! netCDF-C's `ncdump` (the `interop` group).
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::path::Path;

use wgpipe::Pipeline;
use wgpipe::compute::gray_scott::GrayScottParams;
use wgpipe::storage::{DType, FieldSpec, Frame, Hdf5Sink, Sink, SinkOptions, StreamInfo, StreamLayout};

/// Writes `h2`, a 12x10 Gray-Scott run of 3 frames (steps 5, 10, 15) storing `u` and `v`,
/// and `h3`, two streams of [`write_3d`]'s 3-D field (the second appended, as `--resume` does).
pub fn write_all(h2: &Path, h3: &Path) {
    let report = Pipeline::builder()
        .gpus(super::lavapipe(1))
        .grid(12, 10)
        .frames(3)
        .steps_per_frame(5)
        .fields(["u", "v"])
        .gray_scott(GrayScottParams::default(), 1, 0.0)
        .sink(Hdf5Sink::new(SinkOptions::new(h2)))
        .run()
        .unwrap();
    assert_eq!(report.written_frames(), 3);
    write_3d(h3, "stream0", false);
    // A stream appended later (what --resume does) gets its dimensions too.
    write_3d(h3, "stream1", true);
}

/// A 3-D output written through the sink directly: field `c` of shape [4, 3, 5] (z, y, x),
/// stream `stream` (added to the file when `append`), frames at steps 7 and 14, element
/// (z, y, x) of frame i = i * 100 + z * 15 + y * 5 + x.
pub fn write_3d(path: &Path, stream: &str, append: bool) {
    let field = FieldSpec::new("c", DType::F32, [4, 3, 5]).with_units("mol/L").with_long_name("concentration");
    let layout = StreamLayout::new(vec![field]).with_stream(StreamInfo::new(stream).with_expected_frames(2));
    let mut sink = Hdf5Sink::new(SinkOptions::new(path).with_append(append));
    sink.begin(&layout).unwrap();
    for (i, step) in [7u64, 14].into_iter().enumerate() {
        let values: Vec<f32> = (0..60).map(|e| (i * 100 + e) as f32).collect();
        sink.write(&Frame::new(0, i as u64, step, values.iter().flat_map(|v| v.to_le_bytes()).collect())).unwrap();
    }
    sink.finish().unwrap();
}
