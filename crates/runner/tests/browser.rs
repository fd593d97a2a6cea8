//! The browser group (`cargo test -p wgpipe --features browser --test browser`): `wgpipe run
//! --monitor` opened in headless Chromium (Debian's `chromium`) while the run goes. The page's
//! numbers are checked against the run's own progress, read from its JSON endpoint before and
//! after the browser loaded it; the screenshot is a picture with the field and the PDF drawn;
//! a client that connects and never sends a request does not slow the run; the server stops
//! with the run. Fails, never skips, without Chromium: `apt-get install chromium`, or point
//! `WGPIPE_CHROMIUM` at a Chromium or Chrome.
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// The browser: `WGPIPE_CHROMIUM`, else `chromium` or `chromium-browser` on PATH.
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("WGPIPE_CHROMIUM") {
        return PathBuf::from(path);
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success()) {
            return PathBuf::from(name);
        }
    }
    panic!(
        "the browser test needs Chromium: sudo apt-get install chromium (Debian), or set WGPIPE_CHROMIUM to a \
         Chromium or Chrome binary"
    );
}

/// Headless Chromium as a root process in a closed network can run it: no sandbox, no GPU, no
/// background connections, a profile of its own.
fn browse(profile: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ]);
    cmd.arg(format!("--user-data-dir={}", profile.display())).args(args);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "chromium {args:?} failed:\n{}", common::cli::text(&out));
    out
}

/// `GET path` from the monitor: (status line, body).
fn get(address: SocketAddr, path: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect_timeout(&address, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {address}\r\n\r\n").unwrap();
    let mut bytes = Vec::new();
    s.read_to_end(&mut bytes).unwrap();
    let split = bytes.windows(4).position(|w| w == b"\r\n\r\n").expect("an HTTP answer");
    let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
    (head.lines().next().unwrap_or_default().to_owned(), bytes[split + 4..].to_vec())
}

fn progress(address: SocketAddr) -> serde_json::Value {
    let (status, body) = get(address, "/api/progress");
    assert!(status.contains("200"), "{status}");
    serde_json::from_slice(&body).unwrap()
}

/// The text of the element with `id` in `dom` (Chromium's serialisation).
fn element(dom: &str, id: &str) -> String {
    let at = dom.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no element {id}:\n{dom}"));
    let start = at + dom[at..].find('>').unwrap() + 1;
    let end = start + dom[start..].find('<').unwrap();
    dom[start..end].to_owned()
}

/// A 3-D run of a few hundred frames, u and v analysed with PDFs, served on a free port.
fn start_run(dir: &Path) -> (Child, Receiver<String>) {
    std::fs::write(
        dir.join("run.toml"),
        "[kernel]\nname = \"gray-scott-3d\"\nparams = { noise = 0.01 }\n[grid]\nshape = [24, 32, 32]\n\
         [run]\nframes = 100000\nsteps_per_frame = 4\n[devices]\nselect = [0]\n\
         [output]\npath = \"out.h5\"\nfields = [\"u\", \"v\"]\n\
         [analysis]\nfields = [\"u\", \"v\"]\npdf_bins = 50\n",
    )
    .unwrap();
    common::cli::spawn_with_stderr(dir, &["run", "run.toml", "--progress", "frames", "--monitor", "127.0.0.1:0"])
}

#[test]
fn the_live_view_in_chromium_shows_the_runs_own_numbers_and_never_slows_it() {
    let dir = tempfile::tempdir().unwrap();
    let profile = tempfile::tempdir().unwrap();
    let (mut child, rx) = start_run(dir.path());
    let mut seen = Vec::new();
    let line = common::cli::wait_for(&rx, &mut seen, |l| l.starts_with("monitor: http://"));
    let address: SocketAddr = line["monitor: http://".len()..].split('/').next().unwrap().parse().unwrap();
    common::cli::wait_for(&rx, &mut seen, |l| l.starts_with("written ") && !l.starts_with("written 0/"));

    // A client that connects and never asks: the run goes on meanwhile.
    let stuck = TcpStream::connect(address).unwrap();
    let during = progress(address)["written"].as_u64().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let later = progress(address)["written"].as_u64().unwrap();
    assert!(later > during, "the run stalled while a client held a connection: {during} then {later}");
    drop(stuck);

    let before = progress(address);
    let url_base = format!("http://{address}");
    let url = format!("{url_base}/?field=v");
    let shot = dir.path().join("monitor.png");
    browse(
        profile.path(),
        &["--window-size=1280,720", "--virtual-time-budget=4000", &format!("--screenshot={}", shot.display()), &url],
    );
    let dom =
        String::from_utf8(browse(profile.path(), &["--virtual-time-budget=4000", "--dump-dom", &url]).stdout).unwrap();
    let after = progress(address);

    // The page's counts are the run's: between what the run said before and after.
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap();
    let written: u64 = element(&dom, "written").parse().unwrap();
    let computed: u64 = element(&dom, "computed").parse().unwrap();
    assert!((n(&before, "written")..=n(&after, "written")).contains(&written), "page {written}: {before} .. {after}");
    assert!((n(&before, "computed")..=n(&after, "computed")).contains(&computed), "page {computed}");
    assert_eq!(element(&dom, "expected"), "100000");
    assert_eq!(element(&dom, "capacity"), n(&after, "queue_capacity").to_string());
    let label = after["devices"][0]["label"].as_str().unwrap();
    assert!(dom.contains(label), "the device {label} is listed:\n{dom}");
    assert!(dom.contains("<td>stream0</td>"), "the stream is listed:\n{dom}");
    assert!(element(&dom, "pdfinfo").starts_with("(stream stream0, frame "), "{}", element(&dom, "pdfinfo"));
    assert!(dom.contains(&format!("src=\"{url_base}/api/frame.png?field=v&amp;t=")), "the frame was loaded:\n{dom}");
    assert!(dom.contains("<option selected=\"\">v</option>"), "the field of the URL is chosen");

    // The screenshot: the page with a picture in it (the colormap's many colours).
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), (1280, 720));
    let colours: std::collections::HashSet<&[u8]> =
        pixels[..info.buffer_size()].chunks(info.line_size / info.width as usize).collect();
    assert!(colours.len() > 100, "the screenshot holds {} colours: no field picture drawn", colours.len());

    // The endpoints themselves: the newest v as a z slice, the PDFs counting every cell.
    let (status, body) = get(address, "/api/frame.png?field=v");
    assert!(status.contains("200"), "{status}");
    let info = png::Decoder::new(std::io::Cursor::new(body)).read_info().unwrap().info().clone();
    assert_eq!((info.width, info.height), (32, 32));
    let (_, body) = get(address, "/api/pdf");
    let pdf: serde_json::Value = serde_json::from_slice(&body).unwrap();
    for p in pdf["pdfs"].as_array().unwrap() {
        let total: f64 = p["counts"].as_array().unwrap().iter().map(|c| c.as_f64().unwrap()).sum();
        assert_eq!(total, 24.0 * 32.0 * 32.0, "{}", p["field"]);
        assert_eq!(p["edges"].as_array().unwrap().len(), 50);
    }
    assert_eq!(pdf["pdfs"].as_array().unwrap().len(), 2);
    let (status, _) = get(address, "/api/frame.png?field=w");
    assert!(status.contains("404"), "{status}");

    // Ctrl-C ends the run; the server goes with it.
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{}", seen.join("\n"));
    assert!(TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_err(), "the server outlived the run");
    std::fs::copy(&shot, std::env::temp_dir().join("wgpipe-monitor.png")).ok();
}
