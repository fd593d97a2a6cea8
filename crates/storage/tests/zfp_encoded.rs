//! Fields encoded before the sink (`Encoding::Zfp`) and `zfp:rate=R`: a stream's size is
//! zfp's (blocks at the rate, axes of 1 left out, padded as zfp_compress and H5Z-ZFP pad), the
//! compression parses and prints as configs write it, and sinks that store values refuse
//! encoded fields, naming what to do. (The HDF5 sink storing them: the runner's
//! tests/zfp_device.rs, against H5Z-ZFP's own chunks.)
#![cfg(feature = "hdf5")]

use wgpipe_storage::{
    Compression, DType, Encoding, FieldSpec, SinkOptions, StreamInfo, StreamLayout, ZfpRate, open_sink,
};

fn rate(bits: u32) -> ZfpRate {
    ZfpRate::new(bits).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_streams_size_is_its_blocks_at_the_rate_with_axes_of_1_left_out() {
    // 3-D: 64 bits a block per bit of rate; 5 × 6 × 7 is 2 × 2 × 2 blocks.
    assert_eq!(rate(8).stream_bits(&[5, 6, 7]), Some(8 * 512));
    // A 1 × 64 × 64 frame is coded as 64 × 64 (2-D blocks of 16 values).
    assert_eq!(rate(3).stream_bits(&[1, 64, 64]), Some(16 * 16 * 48));
    // zfp_compress pads to 64-bit words, H5Z-ZFP's chunks to bytes.
    assert_eq!(rate(3).stream_bytes(&[1, 5]), Some(8));
    assert_eq!(rate(3).chunk_bytes(&[1, 5]), Some(3));
    // At least the 9 bits of a block's exponent.
    assert_eq!(rate(1).stream_bits(&[4]), Some(9));
    assert!(ZfpRate::new(0).is_err() && ZfpRate::new(33).is_err());
}

#[test]
fn zfp_rate_parses_and_prints_as_configs_write_it() {
    assert_eq!("zfp:rate=8".parse::<Compression>().ok(), Some(Compression::ZfpRate(rate(8))));
    assert_eq!(Compression::ZfpRate(rate(12)).to_string(), "zfp:rate=12");
    for bad in ["zfp:rate=0", "zfp:rate=33", "zfp:rate=x", "zfp:rate=2.5"] {
        let message = bad.parse::<Compression>().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("1 to 32"), "{bad}: {message}");
    }
}

#[test]
fn an_encoded_field_has_its_streams_bytes_and_sinks_of_values_refuse_it() {
    let field = FieldSpec::new("v", DType::F32, [5, 6, 7]).with_encoding(Encoding::Zfp(rate(8)));
    assert_eq!(field.bytes(), Some(512));
    let layout = StreamLayout::new(vec![field]).with_stream(StreamInfo::new("s"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut raw = open_sink("raw", &SinkOptions::new(dir.path().join("out"))).unwrap_or_else(|e| panic!("{e}"));
    let message = raw.begin(&layout).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("raw sink cannot store") && message.contains("\"host\""), "{message}");
    let ints = FieldSpec::new("n", DType::U32, [8]).with_encoding(Encoding::Zfp(rate(8)));
    let layout = StreamLayout::new(vec![ints]).with_stream(StreamInfo::new("s"));
    let mut null = open_sink("null", &SinkOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let message = null.begin(&layout).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("f32 values only"), "{message}");
}
