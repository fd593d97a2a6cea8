//! The config module as an embedder uses it: the shipped configs, batches, kernels, errors.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::path::Path;

use wgpipe::compute::{DeviceSelector, Grid, OutputDType};
use wgpipe::config::{Config, ConfigError, DEFAULT_CONFIG, ResolvedKernel};
use wgpipe::storage::DType;

fn configs_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs")
}

fn err(text: &str) -> String {
    Config::parse("c.toml", text, ".", &[]).err().map(|e| e.to_string()).unwrap_or_default()
}

#[test]
fn every_shipped_config_loads_and_the_default_is_gray_scott_toml() {
    let default = std::fs::read_to_string(configs_dir().join("gray-scott.toml")).unwrap();
    assert_eq!(default, DEFAULT_CONFIG);
    for name in ["gray-scott.toml", "sweep.toml", "bench-null.toml", "heat.toml"] {
        Config::load(Some(&configs_dir().join(name)), &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let built_in = Config::load(None, &[]).unwrap();
    assert_eq!(built_in.file, Config::load(Some(&configs_dir().join("gray-scott.toml")), &[]).unwrap().file);
    assert_eq!(built_in.sink_name(), "hdf5");
    assert_eq!(built_in.output_path(), Path::new("output.h5"));
}

#[test]
fn the_sweep_is_a_cartesian_product_and_heat_is_a_custom_kernel() {
    let sweep = Config::load(Some(&configs_dir().join("sweep.toml")), &[]).unwrap();
    let names: Vec<&str> = sweep.runs().iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["feed0.03_kill0.06", "feed0.03_kill0.062", "feed0.037_kill0.06", "feed0.037_kill0.062"]);
    assert_eq!(sweep.jobs(3, |n| n.ends_with("0.06")).len(), 2, "skipped runs are left out");
    let heat = Config::load(Some(&configs_dir().join("heat.toml")), &[]).unwrap();
    let ResolvedKernel::Custom { spec, params } = &heat.kernel else { panic!("heat is a custom kernel") };
    assert_eq!((spec.fields.as_slice(), params.as_slice()), (&["u".to_owned()][..], &["alpha".to_owned()][..]));
    let state = heat.kernel.initial_state(&Grid::new(&[10, 10]).unwrap(), 0, 0.0);
    assert_eq!(state.iter().filter(|v| **v == 1.0).count(), 4, "the centred square is 1");
    let state = heat.kernel.initial_state(&Grid::new(&[10, 10, 10]).unwrap(), 0, 0.0);
    assert_eq!(state.iter().filter(|v| **v == 1.0).count(), 8, "the centred box is 1");
    assert_eq!(heat.jobs(1, |_| false)[0].kernel().unwrap().params, vec![0.2]);
}

#[test]
fn runs_override_parameters_seed_and_noise() {
    let c = Config::parse(
        "c.toml",
        "[kernel.params]\nfeed = 0.02\n[run]\nseed = 5\n[[runs]]\nname = \"a\"\n[[runs]]\nname = \"b\"\nkernel.params.kill = 0.07\nrun.seed = 9\nrun.noise = 0.1\n",
        ".",
        &[],
    )
    .unwrap();
    let (a, b) = (&c.runs()[0], &c.runs()[1]);
    assert_eq!((a.seed, a.params.get("feed"), a.params.get("kill")), (5, Some(&0.02), None));
    assert_eq!((b.seed, b.noise, b.params.get("feed"), b.params.get("kill")), (9, 0.1, Some(&0.02), Some(&0.07)));
    let jobs = c.jobs(4, |_| false);
    assert_eq!(jobs.len(), 2, "a batch has one job per run, whatever the device count");
    // In the order of the shader's struct Params: feed, kill, du, dv, dt.
    assert_eq!(jobs[1].kernel().unwrap().params, vec![0.02, 0.07, 0.1, 0.05, 1.0]);
    let single = Config::parse("c.toml", "", ".", &[]).unwrap();
    let names: Vec<String> = single.jobs(2, |_| false).into_iter().map(|j| j.name).collect();
    assert_eq!(names, ["stream0", "stream1"], "a single run has one stream per device");
}

#[test]
fn batch_and_kernel_mistakes_are_named() {
    assert!(
        err("[[runs]]\nname = \"a\"\n[[runs]]\nname = \"a\"\n")
            .contains("c.toml line 4: runs[1].name: two runs are named")
    );
    assert!(
        err("[[runs]]\nname = \"a b\"\n").contains("runs[0].name: stream name \"a b\" is not allowed: use letters")
    );
    assert!(
        err("[[runs]]\nname = \"a\"\nkernel.params.fed = 1\n")
            .contains("runs[0].kernel.params.fed: unknown parameter; valid parameters: feed, kill, du, dv, dt")
    );
    assert!(err("[[runs]]\nname = \"a\"\nrun.frames = 3\n").contains("unknown field `frames`"));
    assert!(err("[sweep]\nfeed = []\n").contains("sweep.feed: the list is empty"));
    assert!(err("[sweep]\nfed = [1]\n").contains("unknown sweep key; valid keys: seed, feed"));
    assert!(err("[sweep]\nseed = [1.5]\n").contains("whole number"));
    assert!(err("[sweep]\nfeed = [1]\n[[runs]]\nname = \"a\"\n").contains("not both"));
    assert!(
        err("[kernel.params]\nfeed = 0.1\nfoo = 2\n").contains("c.toml line 3: kernel.params.foo: unknown parameter")
    );
    assert!(
        err("[output]\nfields = [\"w\"]\n").contains("output.fields: the kernel has no field \"w\": choose from u, v")
    );
    assert!(err("[output]\ncompression = \"zip\"\n").contains("output.compression"));
    assert!(err("[run]\nnoise = 2.0\n").contains("run.noise: 2 is out of range"));
    assert!(err("[devices]\nselect = []\n").contains("devices.select: the index list is empty"));
    let heat = format!(
        "[kernel]\nwgsl = \"{}\"\nfields = [\"u\"]\n",
        configs_dir().join("../shaders-wgsl/heat.wgsl").display()
    );
    assert!(err(&heat).contains("kernel.params: parameter alpha of the shader's struct Params is missing"));
    assert!(err(&format!("{heat}[kernel.params]\nalpha = 1\nbeta = 2\n")).contains("valid parameters: alpha"));
    assert!(err("[kernel]\nwgsl = \"x.wgsl\"\n").contains("cannot read WGSL file ./x.wgsl"));
    assert!(matches!(Config::load(Some(Path::new("/nonexistent/c.toml")), &[]), Err(ConfigError::Read { .. })));
}

#[test]
fn devices_select_takes_an_index_a_list_or_text_and_says_what_it_accepts() {
    let select =
        |v: &str| Config::parse("c.toml", &format!("[devices]\nselect = {v}\n"), ".", &[]).map(|c| c.devices().0);
    assert_eq!(select("1").unwrap(), DeviceSelector::Indices(vec![1]));
    assert_eq!(select("[0, 2]").unwrap(), DeviceSelector::Indices(vec![0, 2]));
    assert_eq!(select("\"0,1\"").unwrap(), DeviceSelector::Indices(vec![0, 1]));
    assert_eq!(select("\"vulkan\"").unwrap(), DeviceSelector::Backend(wgpipe::compute::wgpu::Backend::Vulkan));
    assert_eq!(select("\"all-backends\"").unwrap(), DeviceSelector::AllBackends);
    let accepted = "expected \"all\" (each physical adapter once), \"all-backends\", a backend (\"vulkan\", \"gl\", \"metal\", \"dx12\"), a name substring, an adapter index such as 0, or a list of indices such as [0, 1]";
    for (value, what) in [
        ("true", "invalid type: boolean `true`"),
        ("-1", "invalid value: integer `-1`"),
        ("1.5", "invalid type: floating point `1.5`"),
    ] {
        let e = err(&format!("[devices]\nselect = {value}\n"));
        assert_eq!(e, format!("c.toml line 2: devices.select: {what}, {accepted}"));
    }
    let e = err("[devices]\nselect = [0, \"x\"]\n");
    assert!(
        e.starts_with("c.toml line 2: devices.select[1]: invalid type: string \"x\", expected an adapter index"),
        "{e}"
    );
    assert!(
        err("[devices]\ncount = 2000\n").contains("c.toml line 2: devices.count: 2000 is out of range: use 1 to 1024")
    );
}

#[test]
fn stream_names_are_checked_by_the_sinks_rule_before_any_device_opens() {
    for name in ["..", ".", "a/b", "", "x y"] {
        let e = err(&format!("[output]\nsink = \"null\"\n[[runs]]\nname = {name:?}\n"));
        assert!(
            e.starts_with(&format!("c.toml line 4: runs[0].name: stream name {name:?} is not allowed: use letters")),
            "{name:?}: {e}"
        );
    }
    let heat = configs_dir().join("../shaders-wgsl/heat.wgsl");
    let e = err(&format!("[kernel]\nwgsl = {:?}\nfields = [\"steps\"]\nparams.alpha = 1\n", heat.display()));
    assert!(e.contains("kernel.fields: field name \"steps\" is not allowed: it is reserved"), "{e}");
}

#[test]
fn impossible_sizes_are_config_errors_at_the_key_to_change() {
    let e = err("[grid]\nrows = 100000\ncols = 100000\n");
    assert!(e.starts_with("c.toml line 1: grid: invalid grid [100000, 100000]: 10000000000 cells exceed"), "{e}");
    let set = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| (*s).to_owned()).collect();
        Config::parse("c.toml", "", ".", &sets).err().map(|e| e.to_string()).unwrap_or_default()
    };
    let e = set(&["grid.rows=16", "grid.cols=16", "output.chunk_frames=100000000"]);
    assert!(
        e.starts_with(
            "--set output.chunk_frames=100000000: output.chunk_frames: field v (float32 [16, 16]): chunk_frames 100000000"
        ),
        "{e}"
    );
    let e = set(&["output.chunk_frames=2", "grid.rows=40000", "grid.cols=30000"]);
    // A frame larger than HDF5's chunk limit is split into several chunks, so a large grid is
    // never refused for the chunk limit (only, here, for the host's memory).
    assert!(!e.contains("chunk"), "{e}");
    if cfg!(target_os = "linux") {
        // The raw sink has no chunk limit: the same grid gets as far as the host's memory
        // (known from /proc/meminfo).
        let e = set(&["output.sink=raw", "grid.rows=40000", "grid.cols=30000", "io.io_buffer=1000000"]);
        assert!(e.starts_with("--set io.io_buffer=1000000: io.io_buffer: grid 40000×30000: the run needs"), "{e}");
        let e = set(&["io.staging_buffers=100000000000"]);
        assert!(e.starts_with("--set io.staging_buffers=100000000000: io.staging_buffers: grid 256×256"), "{e}");
    }
    let list = |n: usize| format!("[{}]", (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", "));
    let e = err(&format!("[sweep]\nfeed = {}\nkill = {}\nseed = {}\n", list(100), list(100), list(11)));
    assert!(
        e.starts_with(
            "c.toml line 1: sweep: the sweep's lists (feed: 100, kill: 100, seed: 11) make more than 100000 runs"
        ),
        "{e}"
    );
}

#[test]
fn compression_this_build_cannot_write_is_refused_at_its_key() {
    let e = err("[output]\ncompression = \"blosc-lz4\"\n");
    if wgpipe::storage::Compression::BloscLz4(5).check_available().is_ok() {
        assert_eq!(e, "", "a blosc build accepts blosc");
    } else {
        assert!(e.starts_with("c.toml line 2: output.compression: invalid sink options: compression blosc-lz4:5 needs the blosc filter"), "{e}");
    }
}

#[test]
fn files_that_are_not_regular_files_are_refused_not_read_forever() {
    let e = Config::load(Some(Path::new("/dev/zero")), &[]).err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        e,
        "cannot read config file /dev/zero: not a regular file; check the path, or run without a file for the default"
    );
    let e = err("[kernel]\nwgsl = \"/dev/zero\"\nfields = [\"u\"]\n");
    assert!(e.starts_with("c.toml line 2: kernel.wgsl: cannot read WGSL file /dev/zero: not a regular file"), "{e}");
}

#[test]
fn compression_threads_default_to_the_cores_and_zero_is_refused_at_its_key() {
    let parse = |text: &str| Config::parse("c.toml", text, ".", &[]).unwrap();
    let default = parse("").sink_options().compression_threads;
    assert_eq!(default, wgpipe::storage::default_compression_threads());
    assert!((1..=4).contains(&default), "{default}");
    let c = parse("[output]\ncompression = \"deflate:6\"\ncompression_threads = 3\n");
    assert_eq!(c.sink_options().compression_threads, 3);
    let e = err("[output]\ncompression_threads = 0\n");
    assert!(e.starts_with("c.toml line 2: output.compression_threads"), "{e}");
}

#[test]
fn output_dtype_is_f32_or_f16_and_anything_else_is_refused_at_its_line() {
    let parse = |text: &str| Config::parse("c.toml", text, ".", &[]).unwrap();
    assert_eq!(parse("").output_dtype(), OutputDType::F32, "the default stores what the kernel computes");
    let half = parse("[output]\nsink = \"null\"\ndtype = \"f16\"\n");
    assert_eq!((half.output_dtype(), half.stored_dtype()), (OutputDType::F16, DType::F16));
    let e = err("[output]\nsink = \"null\"\ndtype = \"float64\"\n");
    assert!(e.starts_with("c.toml line 3: output.dtype: \"float64\" is not an output type: use \"f32\""), "{e}");
    assert!(e.contains("\"f16\""), "{e}");
}

#[test]
fn grid_shape_is_one_spelling_for_every_rank_and_rows_cols_stay_the_2d_one() {
    let shape = |text: &str| Config::parse("c.toml", text, ".", &[]).unwrap().grid_shape().to_vec();
    assert_eq!(shape("[output]\nsink = \"null\"\n"), [256, 256], "the default grid");
    assert_eq!(shape("[grid]\nrows = 30\ncols = 40\n[output]\nsink = \"null\"\n"), [30, 40]);
    assert_eq!(shape("[grid]\nshape = [30, 40]\n[output]\nsink = \"null\"\n"), [30, 40]);
    let three = "[kernel]\nname = \"gray-scott-3d\"\n[grid]\nshape = [8, 9, 10]\n[output]\nsink = \"null\"\n";
    let c = Config::parse("c.toml", three, ".", &[]).unwrap();
    assert_eq!(c.grid_shape(), [8, 9, 10]);
    assert_eq!(c.output_fields(), ["u", "v"], "the 3-D model stores u and v, as the tutorial does");
    let job = &c.jobs(1, |_| false)[0];
    assert_eq!((job.kernel().unwrap().rank, job.kernel().unwrap().name.as_str()), (3, "gray-scott-3d"));

    let e = err("[grid]\nshape = [30, 40]\nrows = 30\n");
    assert!(e.starts_with("c.toml line 3: grid.rows: grid.shape is given too"), "{e}");
    let e = err("[grid]\nshape = [1, 2, 3, 4]\n");
    assert!(e.starts_with("c.toml line 2: grid.shape: 4 sizes: give [nx], [ny, nx] or [nz, ny, nx]"), "{e}");
    let e = err("[grid]\nshape = [4, 0]\n");
    assert!(e.contains("grid.shape: axis 1 has size 0"), "{e}");
    let e = err("[grid]\nshape = [8, 8, 8]\n");
    assert!(e.contains("kernel.name: the gray-scott kernel runs on 2-D grids and the grid is 3-D"), "{e}");
    assert!(e.contains("grid.shape = [256, 256]"), "{e}");
    let e = err("[kernel]\nname = \"gray-scott-3d\"\n");
    assert!(
        e.contains(
            "the gray-scott-3d kernel runs on 3-D grids and the grid is 2-D: give e.g. grid.shape = [64, 64, 64]"
        ),
        "{e}"
    );
    let e = err("[kernel]\nname = \"gray-scott-3d\"\n[grid]\nshape = [8, 8, 8]\n[run]\nnoise = 0.1\n");
    assert!(e.contains("run.noise: 0.1: the gray-scott-3d model") && e.contains("kernel.params.noise"), "{e}");
    let e = err("[kernel]\nboundary = \"reflect\"\n");
    assert!(e.starts_with("c.toml line 2: kernel.boundary:") && e.contains("zero-flux"), "{e}");
}

#[test]
fn a_custom_kernel_takes_the_grids_rank_and_the_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let wgsl = "@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z)\n\
                fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n\
                    if (!in_grid(id)) { return; }\n\
                    let c = cell(id);\n\
                    a_out[c.i] = a_in[c.i] + 0.1 * laplacian7_a(c);\n\
                }\n";
    std::fs::write(dir.path().join("k.wgsl"), wgsl).unwrap();
    let text = "[kernel]\nwgsl = \"k.wgsl\"\nfields = [\"a\"]\nboundary = \"zero-flux\"\n\
                [grid]\nshape = [6, 7, 8]\n[output]\nsink = \"null\"\n";
    let c = Config::parse("c.toml", text, dir.path(), &[]).unwrap();
    let job = &c.jobs(1, |_| false)[0];
    assert_eq!(job.kernel().unwrap().rank, 3);
    assert_eq!(job.kernel().unwrap().boundary, wgpipe::compute::Boundary::ZeroFlux);
}

#[test]
fn grid_decomposition_is_checked_at_its_key_and_against_the_rank_count() {
    let base = "[kernel]\nname = \"gray-scott-3d\"\n[output]\nsink = \"null\"\n[grid]\nshape = [8, 6, 4]\n";
    let c = Config::parse("c.toml", &format!("{base}decomposition = [2, 3, 1]\n"), ".", &[]).unwrap();
    assert_eq!(c.decomposition(), Some(&[2, 3, 1][..]));
    assert!(c.check_ranks(6).is_ok());
    let e = c.check_ranks(4).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.starts_with("c.toml line 7: grid.decomposition: [2, 3, 1] splits the grid over 6 MPI ranks"), "{e}");
    assert!(e.contains("this run has 4") && e.contains("mpirun -n 6"), "{e}");
    let plain = Config::parse("c.toml", base, ".", &[]).unwrap();
    assert_eq!(plain.decomposition(), None);
    assert!(plain.check_ranks(4).is_ok(), "without the key MPI chooses the split");

    let e = err(&format!("{base}decomposition = [1, 7, 1]\n"));
    assert!(e.starts_with("c.toml line 7: grid.decomposition: 7 ranks along axis 1 (y), whose size is 6"), "{e}");
    let e = err(&format!("{base}decomposition = [0, 1, 1]\n"));
    assert!(e.contains("grid.decomposition: 0 ranks along axis 0 (z)"), "{e}");
    let e = err(&format!("{base}decomposition = [2, 1]\n"));
    assert!(e.contains("grid.decomposition: 2 factors: give [pz, py, px]"), "{e}");
    let e = err(&format!("{base}decomposition = [2, 1, 1]\n[kernel.params]\n")
        .replace("name = \"gray-scott-3d\"\n", "name = \"gray-scott-3d\"\nboundary = \"zero-flux\"\n"));
    assert!(e.contains("grid.decomposition: a split grid is periodic"), "{e}");
    let e = err(&format!("{base}decomposition = [2, 1, 1]\n")
        .replace("sink = \"null\"\n", "sink = \"null\"\ndtype = \"f16\"\n"));
    assert!(e.contains("grid.decomposition: a split run writes float32 fields, and output.dtype is \"f16\""), "{e}");
    let e = err(&format!("{base}decomposition = [2, 1, 1]\n[sweep]\nfeed = [0.01, 0.02]\n"));
    assert!(e.contains("grid.decomposition: a batch ([[runs]] or [sweep]) is shared out"), "{e}");
    let e = err("[output]\nsink = \"null\"\n[grid]\nshape = [8, 8]\ndecomposition = [2, 1, 1]\n");
    assert!(e.starts_with("c.toml line 5: grid.decomposition: a 2-D grid cannot be split"), "{e}");
    let set = Config::parse("c.toml", base, ".", &["grid.decomposition=[1, 1, 5]".to_owned()]).err();
    let e = set.map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("--set grid.decomposition=[1, 1, 5]") && e.contains("whose size is 4"), "{e}");
}

#[test]
fn zfp_takes_a_bound_and_the_hdf5_or_zarr_sink() {
    let ok = Config::parse("c.toml", "[output]\ncompression = \"zfp:accuracy=1e-3\"\n", ".", &[]).unwrap();
    assert_eq!(ok.sink_options().compression.to_string(), "zfp:accuracy=0.001");
    let zarr = "[output]\nsink = \"zarr\"\npath = \"a.zarr\"\ncompression = \"zfp:accuracy=1e-3\"\n";
    Config::parse("c.toml", zarr, ".", &[]).unwrap();
    let e = err("[output]\nsink = \"raw\"\npath = \"a\"\ncompression = \"zfp:accuracy=1e-3\"\n");
    assert!(e.contains("line 4") && e.contains("output.compression") && e.contains("hdf5 and zarr"), "{e}");
    let e = err("[output]\ncompression = \"zfp:accuracy=0\"\n");
    assert!(e.contains("line 2") && e.contains("above 0"), "{e}");
}

#[test]
fn zfp_rate_compresses_on_the_device_where_it_can_and_says_where() {
    let parse = |text: &str| Config::parse("c.toml", text, ".", &[]);
    let hdf5 = parse("[output]\ncompression = \"zfp:rate=8\"\n").unwrap();
    assert_eq!(hdf5.zfp_on_device().map(|r| r.bits()), Some(8));
    assert!(hdf5.compression_note().is_some_and(|n| n.contains("on the device")));
    let zarr = parse("[output]\nsink = \"zarr\"\npath = \"a.zarr\"\ncompression = \"zfp:rate=8\"\n").unwrap();
    assert_eq!(zarr.zfp_on_device().map(|r| r.bits()), Some(8));
    // Auto falls back to the host where the device cannot encode, and says why.
    let sharded =
        parse("[output]\nsink = \"zarr\"\npath = \"a.zarr\"\nshard_frames = 4\ncompression = \"zfp:rate=8\"\n")
            .unwrap();
    assert!(sharded.zfp_on_device().is_none());
    assert!(sharded.compression_note().is_some_and(|n| n.contains("on the host") && n.contains("shard_frames is 4")));
    // A split grid: the zarr sink takes each rank's block where the blocks are equal; the hdf5
    // sink's ranks write one file through MPI-IO, which takes no encoded chunks.
    let split = |sink: &str, parts: &str, on: &str| {
        let grid =
            format!("[kernel]\nname = \"gray-scott-3d\"\n[grid]\nshape = [24, 20, 16]\ndecomposition = {parts}\n");
        let output = format!(
            "[output]\nsink = \"{sink}\"\npath = \"a\"\ncompression = \"zfp:rate=8\"\ncompress_on = \"{on}\"\n"
        );
        Config::parse("c.toml", &(grid + &output), ".", &[])
    };
    assert!(split("zarr", "[2, 1, 2]", "device").unwrap().zfp_on_device().is_some());
    let uneven = split("zarr", "[1, 3, 1]", "auto").unwrap();
    assert!(uneven.zfp_on_device().is_none());
    assert!(uneven.compression_note().is_some_and(|n| n.contains("on the host") && n.contains("does not divide")));
    let hdf5 = split("hdf5", "[2, 1, 1]", "auto").unwrap();
    assert!(hdf5.zfp_on_device().is_none() && hdf5.compression_note().is_some_and(|n| n.contains("MPI-IO")));
    let e = split("hdf5", "[2, 1, 1]", "device").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("output.compress_on") && e.contains("MPI-IO"), "{e}");
    let adios2 = parse("[output]\nsink = \"adios2\"\npath = \"a.bp\"\ncompression = \"zfp:rate=8\"\n");
    assert!(adios2.is_err(), "the adios2 sink has no ZFP");
    let chunks = parse("[output]\ncompression = \"zfp:rate=8\"\nchunk_frames = 2\n").unwrap();
    assert!(chunks.zfp_on_device().is_none());
    // Where it cannot, "device" is refused at its line, naming what to change.
    let e = err("[output]\ncompression = \"zfp:rate=8\"\nchunk_frames = 2\ncompress_on = \"device\"\n");
    assert!(e.contains("line 4") && e.contains("output.compress_on") && e.contains("chunk_frames"), "{e}");
    let e = err("[output]\ncompression = \"deflate\"\ncompress_on = \"device\"\n");
    assert!(e.contains("output.compress_on") && e.contains("zfp:rate"), "{e}");
    let e = err("[output]\nsink = \"raw\"\npath = \"a\"\ncompression = \"zfp:rate=8\"\ncompress_on = \"host\"\n");
    assert!(e.contains("raw sink") && e.contains("encoded on the device"), "{e}");
    let e = err("[output]\ndtype = \"f16\"\ncompression = \"zfp:rate=8\"\n");
    assert!(e.contains("output.compression") && e.contains("f16"), "{e}");
    let e = err("[output]\ncompress_on = \"gpu\"\n");
    assert!(e.contains("line 2") && e.contains("\"auto\", \"device\" or \"host\""), "{e}");
}
