//! netCDF-C's `ncdump -h` reads wgpipe's HDF5 outputs as netCDF-4: groups, the unlimited
//! `time` dimension, named spatial dimensions and attributes.

use std::path::Path;
use std::process::Command;

/// `ncdump -h path`, or a failure saying how to install it.
fn ncdump(path: &Path) -> String {
    let out = Command::new("ncdump").arg("-h").arg(path).output().unwrap_or_else(|e| {
        panic!("cannot run ncdump ({e}): this test checks that netCDF-C reads the file; install it with: sudo apt-get install netcdf-bin")
    });
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ncdump -h {} failed:\n{text}{}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn ncdump_sees_groups_dimensions_and_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let (h2, h3) = (dir.path().join("gs.h5"), dir.path().join("c3.h5"));
    super::common::netcdf_files::write_all(&h2, &h3);
    let header = ncdump(&h2);
    for line in
        ["group: stream0 {", "time = UNLIMITED ; // (3 currently)", "y = 12 ;", "x = 10 ;", "float u(time, y, x) ;"]
    {
        assert!(header.contains(line), "ncdump -h lacks {line:?}:\n{header}");
    }
    assert!(header.contains("v:long_name = \"inhibitor v\""), "{header}");
    let header = ncdump(&h3);
    assert!(header.contains("float c(time, z, y, x) ;") && header.contains("z = 4 ;"), "{header}");
}
