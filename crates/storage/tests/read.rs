//! Reading an output back: typed access to every field, and errors that name what is missing.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::{cases, frame, layout};
use wgpipe_storage::Error;

#[test]
fn fields_read_back_typed_and_float_views_refuse_integer_fields() {
    let dir = common::tempdir();
    for case in cases(dir.path()).into_iter().filter(|c| c.readable()) {
        let l = layout(Some(1));
        let mut sink = case.sink();
        sink.begin(&l).unwrap();
        let given = frame(&l, 0, 0);
        sink.write(&given).unwrap();
        sink.finish().unwrap();
        let out = case.output();
        let label = case.label;

        // u: float32 [8, 16], exactly as given.
        let u = out.read_field(0, 0, 0).unwrap();
        assert_eq!((u.dtype, u.shape.clone()), (l.fields[0].dtype, l.fields[0].shape.clone()), "{label}");
        assert_eq!(u.bytes, given.data[l.field_range(0).unwrap()], "{label}");
        let f32s: Vec<u32> = out.read_f32(0, 0, 0).unwrap().iter().map(|v| v.to_bits()).collect();
        let want: Vec<u32> = u.bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert_eq!(f32s, want, "{label}: read_f32 of a float32 field keeps every bit");

        // mask: uint8, no float view.
        let err = out.read_f32(0, 1, 0).unwrap_err();
        assert!(matches!(err, Error::NotFloat { .. }), "{label}: {err}");
        assert!(err.to_string().contains("\"mask\" holds uint8"), "{label}: {err}");
        assert_eq!(out.read_field(0, 1, 0).unwrap().to_f64().len(), 16, "{label}");

        // v: float16 [2, 4, 8], widened exactly.
        assert_eq!(out.read_f32(0, 2, 0).unwrap().len(), 64, "{label}");

        for (what, err) in [
            ("frame 1", out.read_field(0, 0, 1).unwrap_err()),
            ("stream 2", out.read_field(2, 0, 0).unwrap_err()),
            ("field 3", out.read_field(0, 3, 0).unwrap_err()),
        ] {
            assert!(matches!(err, Error::NotFound(_)), "{label}: {what}: {err}");
            assert!(err.to_string().contains(what), "{label}: {what}: {err}");
        }
    }
}

/// Integers are stored with their value, never clamped: a `u64` beyond `i64::MAX` (a seed, a
/// count) reads back as itself from HDF5 (`uint64`) and raw (a JSON integer), and the
/// values that fit a signed integer keep reading back as `Int`.
#[test]
fn integer_attributes_beyond_i64_read_back_unclamped() {
    use wgpipe_storage::AttrValue;
    let dir = common::tempdir();
    for case in cases(dir.path()).into_iter().filter(|c| c.readable()) {
        let mut l = layout(Some(1));
        l.attributes.insert("big".into(), u64::MAX.into());
        l.attributes.insert("small".into(), 7u64.into());
        l.streams[0].attributes.insert("seed".into(), (i64::MAX as u64 + 3).into());
        let mut sink = case.sink();
        sink.begin(&l).unwrap();
        sink.write(&frame(&l, 0, 0)).unwrap();
        sink.finish().unwrap();
        let out = case.output();
        let label = case.label;
        assert_eq!(out.attributes().get("big"), Some(&AttrValue::UInt(u64::MAX)), "{label}");
        assert_eq!(out.attributes().get("small"), Some(&AttrValue::Int(7)), "{label}");
        let seed = out.streams()[0].attributes.get("seed");
        assert_eq!(seed, Some(&AttrValue::UInt(9_223_372_036_854_775_810)), "{label}");
    }
}
