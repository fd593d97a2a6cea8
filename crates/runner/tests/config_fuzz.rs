//! Config fuzzing: random TOML documents and random `--set` arguments, drawn from the real
//! keys (with values mostly of the right type, and junk), never panic the parser and always
//! give a config or an error that says where: the key (and its line or `--set`), the line of
//! a syntax error, or the `--set` argument that cannot be read.
//!
//! 5000 cases by default (a few seconds); `WGPIPE_FUZZ_CASES=100000` runs more, and
//! `WGPIPE_FUZZ_SEED` picks another seed (the seed is printed when a case fails).

use std::cell::Cell;
use std::path::{Path, PathBuf};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use wgpipe::config::{Config, ConfigError, Origin};

/// Every key of a config file, as a dotted path (`runs` entries are generated apart).
const KEYS: &[&str] = &[
    "kernel.name",
    "kernel.wgsl",
    "kernel.fields",
    "kernel.params.feed",
    "kernel.params.kill",
    "kernel.params.du",
    "kernel.params.dv",
    "kernel.params.dt",
    "kernel.params.alpha",
    "grid.rows",
    "grid.cols",
    "grid.shape",
    "grid.decomposition",
    "kernel.boundary",
    "kernel.params.noise",
    "run.frames",
    "run.steps_per_frame",
    "run.seed",
    "run.noise",
    "devices.select",
    "devices.count",
    "io.mode",
    "io.io_buffer",
    "io.staging_buffers",
    "output.sink",
    "output.path",
    "output.overwrite",
    "output.fields",
    "output.compression",
    "output.chunk_frames",
    "output.fsync",
    "sweep.feed",
    "sweep.kill",
    "sweep.seed",
];

/// Keys no config has: unknown fields and tables.
const JUNK_KEYS: &[&str] = &["grid.depth", "bogus", "output.format", "kernel.params.x", "io.buffers", "runs.name"];

/// Any TOML value: numbers at the edges of every integer type, floats, strings, booleans,
/// arrays and inline tables.
fn any_value() -> BoxedStrategy<String> {
    let words = select(vec![
        "all",
        "vulkan",
        "gl",
        "0,1",
        "llvm",
        "hdf5",
        "raw",
        "null",
        "none",
        "deflate:3",
        "blosc-lz4",
        "async",
        "sync",
        "u",
        "v",
        "steps",
        "..",
        ".",
        "a b",
        "",
        "gray-scott",
        "out.h5",
        "é",
    ]);
    let leaf = prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        (-3i64..3000).prop_map(|i| i.to_string()),
        select(vec![
            "0",
            "-1",
            "1.5",
            "0.02",
            "-0.5",
            "nan",
            "inf",
            "-inf",
            "1e300",
            "true",
            "false",
            "4294967296",
            "9223372036854775807",
            "-9223372036854775808",
            "1979-05-27",
        ])
        .prop_map(str::to_owned),
        words.prop_map(|w| format!("{w:?}")),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
            vec((select(vec!["a", "name", "rows", "feed"]), inner), 0..3).prop_map(|kv| {
                let kv: Vec<String> = kv.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                format!("{{ {} }}", kv.join(", "))
            }),
        ]
    })
    .boxed()
}

/// A value for `key`: mostly one a user would plausibly write there (so that parsing gets past
/// the types into the range, kernel, batch and size checks), sometimes anything.
fn value_for(key: &str) -> BoxedStrategy<String> {
    let last = key.rsplit('.').next().unwrap_or(key);
    let texts = |v: &[&str]| select(v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()).boxed();
    let small = |lo: i64, hi: i64, edges: &[&str]| {
        prop_oneof![3 => (lo..hi).prop_map(|i| i.to_string()), 1 => texts(edges)].boxed()
    };
    let plausible = match key {
        "kernel.name" => texts(&["\"gray-scott\"", "\"gray-scott-3d\"", "\"heat\"", "\"brusselator\""]),
        "kernel.boundary" => texts(&["\"periodic\"", "\"zero-flux\"", "\"reflect\"", "1"]),
        "grid.shape" => {
            texts(&["[16, 16]", "[8, 8, 8]", "[64]", "[]", "[1, 2, 3, 4]", "[0, 4]", "[100000, 100000]", "16"])
        }
        "grid.decomposition" => texts(&["[2, 1, 1]", "[1, 2, 2]", "[8, 8, 8]", "[0, 1, 1]", "[2, 1]", "[]", "2"]),
        "kernel.wgsl" => texts(&["\"heat.wgsl\"", "\"gray_scott.wgsl\"", "\"missing.wgsl\"", "\"/dev/null\""]),
        "kernel.fields" | "output.fields" => {
            texts(&["[\"u\"]", "[\"v\"]", "[\"u\", \"v\"]", "[]", "[\"steps\"]", "[\"a b\"]", "[\"u\", \"u\"]"])
        }
        "grid.rows" | "grid.cols" => small(1, 300, &["0", "-1", "20000", "100000", "1099511627776"]),
        "run.frames" | "run.steps_per_frame" => small(1, 50, &["0", "4294967296", "18446744073709551615"]),
        "run.seed" => small(0, 1000, &["-1", "9223372036854775807"]),
        "devices.select" => texts(&["\"all\"", "\"vulkan\"", "0", "1", "[0, 1]", "\"0,1\"", "\"llvm\"", "-1", "[]"]),
        "devices.count" => small(1, 4, &["0", "1025", "1000000000"]),
        "io.mode" => texts(&["\"auto\"", "\"async\"", "\"sync\"", "\"fast\""]),
        "io.io_buffer" | "io.staging_buffers" => small(0, 8, &["100000000", "1099511627776"]),
        "output.sink" => texts(&["\"hdf5\"", "\"raw\"", "\"null\"", "\"s3\""]),
        "output.path" => texts(&["\"out.h5\"", "\"\"", "\"/nonexistent/x.h5\""]),
        "output.compression" => texts(&[
            "\"none\"",
            "\"deflate\"",
            "\"deflate:9\"",
            "\"deflate:0\"",
            "\"blosc-lz4\"",
            "\"blosc-zstd:3\"",
            "\"zip\"",
        ]),
        "output.chunk_frames" => small(1, 10, &["0", "1073741824"]),
        _ if key.starts_with("sweep.") => vec(select(vec!["0.02", "0.05", "1", "2", "1.5", "-1"]), 0..4)
            .prop_map(|v| format!("[{}]", v.join(", ")))
            .boxed(),
        _ if matches!(last, "noise" | "feed" | "kill" | "du" | "dv" | "dt" | "alpha") => {
            texts(&["0", "0.02", "0.1", "1", "1.0", "2.0", "-0.1", "nan"])
        }
        _ if matches!(last, "overwrite" | "fsync") => texts(&["true", "false"]),
        _ => any_value(),
    };
    prop_oneof![12 => plausible, 1 => any_value()].boxed()
}

/// A key and a value for it: a real key most of the time, else junk.
fn entry() -> impl Strategy<Value = (String, String)> {
    prop_oneof![24 => select(KEYS), 1 => select(JUNK_KEYS)]
        .prop_flat_map(|key| value_for(key).prop_map(move |v| (key.to_owned(), v)))
}

/// One `[[runs]]` table: a name (usually) and a few overrides.
fn run_entry() -> impl Strategy<Value = Vec<(String, String)>> {
    let name = select(vec!["\"a\"", "\"b\"", "\"r.1\"", "\"..\"", "\"x y\"", "\"\"", "1"]).prop_map(str::to_owned);
    let key = select(vec!["kernel.params.feed", "kernel.params.kill", "run.seed", "run.noise", "run.frames", "bogus"]);
    (proptest::option::weighted(0.9, name), vec(key.prop_flat_map(|k| value_for(k).prop_map(move |v| (k, v))), 0..3))
        .prop_map(|(name, overrides)| {
            let mut entries: Vec<(String, String)> = name.into_iter().map(|n| ("name".to_owned(), n)).collect();
            entries.extend(overrides.into_iter().map(|(k, v)| (k.to_owned(), v)));
            entries
        })
}

/// Renders entries as TOML: all as dotted keys at the root, or under `[table]` headers.
fn render(entries: &[(String, String)], runs: &[Vec<(String, String)>], headers: bool, junk: Option<&str>) -> String {
    let mut text = String::new();
    if headers {
        let mut tables: Vec<&str> = entries.iter().map(|(k, _)| k.split_once('.').map_or("", |(t, _)| t)).collect();
        tables.dedup();
        for (k, v) in entries.iter().filter(|(k, _)| !k.contains('.')) {
            text.push_str(&format!("{k} = {v}\n"));
        }
        for table in tables.iter().filter(|t| !t.is_empty()) {
            text.push_str(&format!("[{table}]\n"));
            for (k, v) in entries.iter().filter(|(k, _)| k.split_once('.').is_some_and(|(t, _)| t == *table)) {
                text.push_str(&format!("{} = {v}\n", &k[table.len() + 1..]));
            }
        }
    } else {
        for (k, v) in entries {
            text.push_str(&format!("{k} = {v}\n"));
        }
    }
    for run in runs {
        text.push_str("[[runs]]\n");
        for (k, v) in run {
            text.push_str(&format!("{k} = {v}\n"));
        }
    }
    if let Some(junk) = junk {
        text.push_str(junk);
    }
    text
}

/// A whole document.
fn document() -> impl Strategy<Value = String> {
    let junk = select(vec!["[grid\n", "x = = 1\n", "rows = 1\nrows = 2\n", "[grid]\n", "\"unterminated\n", "= 3\n"]);
    (vec(entry(), 0..6), vec(run_entry(), 0..3), any::<bool>(), proptest::option::weighted(0.05, junk))
        .prop_map(|(entries, runs, headers, junk)| render(&entries, &runs, headers, junk))
}

/// `--set` arguments: real keys with values, and malformed ones.
fn sets() -> impl Strategy<Value = Vec<String>> {
    let malformed = select(vec!["grid.rows", "=5", "a b=1", "grid..rows=1", "runs[0].name=x", "grid.rows=[1", ".x=1"]);
    let set = prop_oneof![
        12 => entry().prop_map(|(k, v)| format!("{k}={v}")),
        // A bare word is taken as a string.
        2 => select(vec!["output.sink=raw", "devices.select=vulkan", "io.mode=sync", "kernel.name=heat"]).prop_map(str::to_owned),
        1 => malformed.prop_map(str::to_owned),
    ];
    vec(set, 0..3)
}

/// What one parse must give: a config that holds its ranges, or an error that says where.
fn check(text: &str, sets: &[String], base: &Path, outcomes: &Outcomes) -> Result<(), TestCaseError> {
    let context = || format!("document:\n{text}\n--set: {sets:?}");
    let e = match Config::parse("fuzz.toml", text, base, sets) {
        Ok(c) => {
            let f = &c.file;
            let shape = c.grid_shape();
            prop_assert!((1..=3).contains(&shape.len()) && shape.iter().all(|n| *n >= 1), "{}", context());
            prop_assert!(f.run.frames >= 1, "{}", context());
            prop_assert!((1..=wgpipe::MAX_DEVICE_COPIES).contains(&f.devices.count), "{}", context());
            prop_assert!((0.0..=1.0).contains(&f.run.noise) && f.io.staging_buffers >= 1, "{}", context());
            outcomes.ok.set(outcomes.ok.get() + 1);
            return Ok(());
        }
        Err(e) => e,
    };
    let message = e.to_string();
    let lines = text.lines().count().max(1);
    let origin_ok = |origin: &Origin| match origin {
        Origin::Line { file, line } => file == "fuzz.toml" && (1..=lines).contains(line),
        Origin::Set(arg) => sets.contains(arg),
        Origin::File(file) => file == "fuzz.toml",
    };
    match &e {
        ConfigError::Invalid { origin, key, .. } | ConfigError::Kernel { origin, key, .. } => {
            prop_assert!(!key.is_empty() && message.contains(key.as_str()), "no key in {message:?}\n{}", context());
            prop_assert!(origin_ok(origin), "origin {origin:?} of {message:?}\n{}", context());
            prop_assert!(message.starts_with(&format!("{origin}: {key}: ")), "{message:?}\n{}", context());
            outcomes.keyed.set(outcomes.keyed.get() + 1);
        }
        ConfigError::Syntax { origin, .. } => {
            prop_assert!(matches!(origin, Origin::Line { .. }) && origin_ok(origin), "{message:?}\n{}", context());
        }
        ConfigError::BadSet { arg, .. } => {
            prop_assert!(sets.contains(arg) && message.starts_with(&format!("--set {arg}: ")), "{message:?}");
        }
        other => prop_assert!(false, "unexpected error {other:?}\n{}", context()),
    }
    Ok(())
}

/// How the cases ended, to check that the generator reaches both sides.
#[derive(Default)]
struct Outcomes {
    ok: Cell<u32>,
    keyed: Cell<u32>,
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number")),
        Err(_) => default,
    }
}

#[test]
fn random_configs_never_panic_and_every_error_says_where() {
    let cases = env_number("WGPIPE_FUZZ_CASES", 5000) as u32;
    let seed = env_number("WGPIPE_FUZZ_SEED", 0x5747_5049_5045);
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = RunnerConfig { cases, failure_persistence: None, ..RunnerConfig::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes));
    let base: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shaders-wgsl");
    let outcomes = Outcomes::default();
    let result = runner.run(&(document(), sets()), |(text, sets)| check(&text, &sets, &base, &outcomes));
    if let Err(e) = result {
        panic!("config fuzzing failed with WGPIPE_FUZZ_SEED={seed} (cases {cases}): {e}");
    }
    // The generator must reach both valid configs and the checks behind the types.
    let (ok, keyed) = (outcomes.ok.get(), outcomes.keyed.get());
    assert!(ok * 20 >= cases && keyed * 4 >= cases, "{ok} valid configs and {keyed} keyed errors in {cases} cases");
}
