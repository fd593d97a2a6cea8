//! Writing less (`output.every`, `output.when`) as a user runs it: in every backend that reads
//! back, the reductions' output holds every frame's reductions and the fields' output exactly
//! the frames promised, each bit-identical to the run that stores every frame; the summary
//! says what it saved; wrong settings are refused at their key. (A killed thinned run resumes
//! bit-identical: tests/checkpoints.rs.)
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::path::Path;
use std::process::Command;

use wgpipe::config::Config;
use wgpipe::storage::{AttrValue, Output, open_output};

/// A small 2-D run with noise whose `v_max` falls from frame to frame, u and v stored and
/// analysed. Three streams: frames interleave at the writer.
const CONFIG: &str = r#"
[grid]
rows = 24
cols = 20
[run]
frames = 12
steps_per_frame = 20
seed = 5
noise = 0.05
[devices]
select = [0]
count = 3
[output]
fields = ["u", "v"]
[analysis]
fields = ["u", "v"]
pdf_bins = 8
"#;

/// The condition the thinned runs use (also given as `output.when`).
const WHEN: &str = "v_max > 0.3 and not u_mean > 0.8";
const EVERY: u64 = 4;

fn run(dir: &Path, sets: &[&str]) -> std::process::Output {
    std::fs::write(dir.join("run.toml"), CONFIG).unwrap();
    let mut args = vec!["run", "run.toml", "--progress", "none"];
    for s in sets {
        args.extend(["--set", s]);
    }
    common::cli::wgpipe(dir, &args)
}

/// Every field of frame `i` of stream `s`, as bytes, by field name.
fn frame(out: &Output, s: usize, i: u64) -> Vec<(String, Vec<u8>)> {
    out.fields()
        .iter()
        .enumerate()
        .map(|(f, spec)| (spec.name.clone(), out.read_field(s, f, i).unwrap().bytes))
        .collect()
}

#[test]
fn exactly_the_promised_frames_are_stored_bit_identical_in_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for (sink, ext) in [("hdf5", ".h5"), ("raw", ""), ("zarr", ".zarr")] {
        let path = |name: &str| format!("output.path=\"{name}{ext}\"");
        let sink_set = format!("output.sink=\"{sink}\"");
        let all = run(dir.path(), &[&sink_set, &path("all")]);
        assert!(all.status.success(), "{sink}: {}", common::cli::text(&all));
        let when = format!("output.when=\"{WHEN}\"");
        let every = format!("output.every={EVERY}");
        let thin = run(dir.path(), &[&sink_set, &path("thin"), &when, &every]);
        let text = common::cli::text(&thin);
        assert!(thin.status.success(), "{sink}: {text}");

        let all = open_output(dir.path().join(format!("all{ext}"))).unwrap();
        let fields = open_output(dir.path().join(format!("thin{ext}"))).unwrap();
        let reductions = open_output(dir.path().join(format!("thin.analysis{ext}"))).unwrap();
        let names = |o: &Output| o.fields().iter().map(|f| f.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&fields), ["u", "v"], "{sink}: the fields' output holds the fields only");
        assert_eq!(names(&reductions), names(&all)[2..], "{sink}: the reductions' output holds the reductions");
        assert!(fields.complete() && reductions.complete(), "{sink}: both outputs complete");
        for o in [&fields, &reductions] {
            assert_eq!(o.attributes().get("output_when"), Some(&AttrValue::Text(WHEN.to_owned())), "{sink}");
            assert_eq!(o.attributes().get("output_every"), Some(&AttrValue::Int(EVERY as i64)), "{sink}");
        }

        let (mut skipped, mut kept_somewhere, mut skipped_somewhere, mut not_somewhere) = (0u64, false, false, false);
        for (s, stream) in all.streams().iter().enumerate() {
            let rs = reductions.stream_index(&stream.name).unwrap();
            let fs = fields.stream_index(&stream.name).unwrap();
            let steps = all.steps(s).unwrap();
            assert_eq!(reductions.steps(rs).unwrap(), steps, "{sink}: every frame's reductions");
            // The promise, computed here from the reference run's own reductions.
            let v_max = all.field_index("v_max").unwrap();
            let u_mean = all.field_index("u_mean").unwrap();
            let mut promised = Vec::new();
            for i in 0..stream.frames {
                let v = f64::from(all.read_f32(s, v_max, i).unwrap()[0]);
                let u = f64::from(all.read_f32(s, u_mean, i).unwrap()[0]);
                not_somewhere |= i % EVERY != 0 && v > 0.3 && u > 0.8;
                if i % EVERY == 0 || (v > 0.3 && u <= 0.8) {
                    promised.push(i);
                }
                // Every frame's reductions, bit-identical to the run storing every frame.
                let want: Vec<_> = frame(&all, s, i).into_iter().skip(2).collect();
                assert_eq!(frame(&reductions, rs, i), want, "{sink}: stream {} frame {i}", stream.name);
            }
            let kept_steps: Vec<u64> = promised.iter().map(|&i| steps[i as usize]).collect();
            assert_eq!(fields.steps(fs).unwrap(), kept_steps, "{sink}: stream {}: the frames promised", stream.name);
            for (k, &i) in promised.iter().enumerate() {
                let want: Vec<_> = frame(&all, s, i).into_iter().take(2).collect();
                assert_eq!(frame(&fields, fs, k as u64), want, "{sink}: stream {} frame {i}", stream.name);
            }
            kept_somewhere |= promised.iter().any(|i| i % EVERY != 0);
            skipped_somewhere |= (promised.len() as u64) < stream.frames;
            skipped += stream.frames - promised.len() as u64;
        }
        assert!(kept_somewhere && skipped_somewhere, "{sink}: the condition both keeps and drops frames");
        assert!(not_somewhere, "{sink}: `not` drops a frame the rest of the condition keeps");
        // The summary says what was saved: the skipped frames' u and v.
        let frame_bytes = 2 * 24 * 20 * 4;
        assert!(
            text.contains(&format!(
                "fields not stored (output.every, output.when): {skipped} of 36 frames, {:.1} MB saved",
                (skipped * frame_bytes) as f64 / 1e6
            )),
            "{sink}: {text}"
        );
        assert!(
            text.contains(&format!("thin{ext} (fields), thin.analysis{ext} (reductions of every frame)")),
            "{text}"
        );
    }
}

#[test]
fn every_alone_keeps_every_kth_frame_and_a_second_run_refuses_both_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["output.path=\"a.h5\"", "output.every=5"]);
    assert!(out.status.success(), "{}", common::cli::text(&out));
    let fields = open_output(dir.path().join("a.h5")).unwrap();
    for (s, stream) in fields.streams().iter().enumerate() {
        assert_eq!(fields.steps(s).unwrap(), [20, 120, 220], "frames 0, 5 and 10 of {}", stream.name);
        assert!(stream.complete, "a stream of the frames every 5th is complete with 3");
    }
    // Either output existing stops a new run.
    std::fs::remove_file(dir.path().join("a.h5")).unwrap();
    let again = run(dir.path(), &["output.path=\"a.h5\"", "output.every=5"]);
    let text = common::cli::text(&again);
    assert!(!again.status.success() && text.contains("a.analysis.h5 already exists"), "{text}");
}

#[test]
fn wrong_thinning_settings_are_refused_at_their_key() {
    let dir = tempfile::tempdir().unwrap();
    for (sets, says) in [
        (&["output.every=0"][..], "output.every: 0 is out of range"),
        (&["output.when=\"v_max > \""][..], "column 9: the condition ends too soon"),
        (&["output.when=\"v_max = 0.3\""][..], "compare with `==`"),
        (
            &["output.when=\"w_max > 0.3\""][..],
            "\"w_max\" is not a one-value reduction of analysis.fields: choose from u_min",
        ),
        (&["output.when=\"v_pdf > 0.3\""][..], "\"v_pdf\" is not a one-value reduction"),
        (&["output.when=\"v_max\""][..], "not a condition"),
        (&["output.every=1", "output.when=\"v_max > 0\""][..], "1 keeps every frame"),
        (&["output.every=2", "analysis.fields=[]", "analysis.pdf_bins=0"][..], "analysis.fields lists none"),
        (&["output.every=2", "output.fields=[]"][..], "no frame stores fields"),
    ] {
        let out = run(dir.path(), sets);
        let text = common::cli::text(&out);
        assert!(!out.status.success(), "{sets:?} ran");
        assert!(text.contains(says), "{sets:?}: {text}");
    }
    // At the line of the file.
    let config = CONFIG.replace("[output]\n", "[output]\nwhen = \"v_max >> 1\"\n");
    let parsed = Config::parse("c.toml", &config, dir.path(), &[]);
    let e = parsed.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("c.toml line 14") && e.contains("output.when") && e.contains("column 8: unexpected `>`"), "{e}");
    assert!(!dir.path().join("output.h5").exists() && !dir.path().join("output.analysis.h5").exists());
    // Outputs shared by MPI ranks thin by both rules (tests/mpi.rs runs them).
    for rule in ["output.every=2", "output.when=\"v_max > 0.3\""] {
        let config = Config::parse("c.toml", CONFIG, dir.path(), &[rule.to_owned()]).unwrap();
        assert!(config.check_ranks(2).is_ok(), "{rule}");
    }
}

/// One stream as a reader sees it: name, completeness, steps, every field's bytes of every frame.
type StreamContents = (String, bool, Vec<u64>, Vec<Vec<u8>>);

/// Everything a reader sees of an output: its completeness and its streams.
fn contents(path: &Path) -> (bool, Vec<StreamContents>) {
    let out = open_output(path).unwrap();
    let streams = out
        .streams()
        .iter()
        .enumerate()
        .map(|(s, st)| {
            let frames = (0..st.frames).flat_map(|i| frame(&out, s, i).into_iter().map(|(_, b)| b)).collect();
            (st.name.clone(), st.complete, out.steps(s).unwrap(), frames)
        })
        .collect();
    (out.complete(), streams)
}

/// A batch of three runs on one device (one after the other), stopped with Ctrl-C during the
/// second, then resumed: the first run is complete in both outputs and skipped, the others
/// run again, and both outputs end as an uninterrupted run leaves them, `complete` included.
#[test]
fn a_stopped_thinned_batch_resumes_to_the_uninterrupted_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[grid]\nrows = 24\ncols = 20\n[run]\nframes = 40\nsteps_per_frame = 200\nnoise = 0.05\n\
                  [devices]\nselect = [0]\n[output]\npath = \"out.h5\"\nevery = 7\nwhen = \"v_max > 0.3\"\n\
                  [analysis]\nfields = [\"v\"]\n[[runs]]\nname = \"a\"\n[[runs]]\nname = \"b\"\n[[runs]]\n\
                  name = \"c\"\n";
    for sub in ["reference", "stopped"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        std::fs::write(dir.path().join(sub).join("c.toml"), config).unwrap();
    }
    let reference = common::cli::wgpipe(&dir.path().join("reference"), &["run", "c.toml"]);
    assert!(reference.status.success(), "{}", common::cli::text(&reference));
    let stopped = dir.path().join("stopped");
    let (mut child, lines) = common::cli::spawn_with_stderr(&stopped, &["run", "c.toml", "--progress", "frames"]);
    let mut seen = Vec::new();
    common::cli::wait_for_written(&lines, &mut seen, 50);
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let status = child.wait().unwrap();
    seen.extend(lines.try_iter());
    assert_eq!(status.code(), Some(130), "stopped by Ctrl-C: {seen:?}");
    for output in ["out.h5", "out.analysis.h5"] {
        let (complete, streams) = contents(&stopped.join(output));
        assert!(!complete, "{output}");
        assert!(streams[0].1 && !streams[1].1, "{output}: run a complete, run b stopped short: {:?}", streams[1].2);
    }
    let resumed = common::cli::wgpipe(&stopped, &["run", "c.toml", "--resume"]);
    let text = common::cli::text(&resumed);
    assert!(resumed.status.success() && text.contains("1 runs complete, 2 to run"), "{text}");
    for output in ["out.h5", "out.analysis.h5"] {
        assert!(
            contents(&stopped.join(output)) == contents(&dir.path().join("reference").join(output)),
            "{output}: the resumed output differs from the uninterrupted run's"
        );
    }
}
