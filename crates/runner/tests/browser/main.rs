//! The browser group (`cargo test -p wgpipe --features browser --test browser`): `wgpipe run
//! --monitor` opened in headless Chromium (Debian's `chromium`) while the run goes, driven
//! over the DevTools protocol ([`cdp`]). The page is checked against the run's output file,
//! not against the server: after the run (Ctrl-C), the frames written that the page shows
//! are the frames in the output (read with wgpipe's reader), and the picture it shows is,
//! pixel for pixel, what `wgpipe render` draws from that frame of the output, with the colour
//! scale's min and max those of the output's values, both as the page decoded it and in a
//! screenshot. Meanwhile a client that connects and never sends a request does not slow the
//! run, and the server stops with the run. Fails, never skips, without Chromium: `apt-get
//! install chromium`, or point `WGPIPE_CHROMIUM` at a Chromium or Chrome.
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod cdp;
#[path = "../common/mod.rs"]
mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::Value;
use wgpipe::storage::open_output;

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

/// `GET path` from the monitor: (status line, body).
fn get(address: SocketAddr, path: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect_timeout(&address, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").unwrap();
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

/// A PNG's size and RGB pixels (RGBA loses its alpha).
fn rgb(png: &[u8]) -> (u32, u32, Vec<[u8; 3]>) {
    let mut reader = png::Decoder::new(std::io::Cursor::new(png)).read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    let step = info.line_size / info.width as usize;
    assert!(step >= 3 && info.bit_depth == png::BitDepth::Eight, "{info:?}");
    let rgb = pixels[..info.buffer_size()].chunks(step).map(|p| [p[0], p[1], p[2]]).collect();
    (info.width, info.height, rgb)
}

/// A 3-D run of many frames, u and v stored and analysed with PDFs, served on a free port.
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

/// What the page shows: its text by element, the picture's frame and pixels as it decoded
/// them, where the picture lies on the screen.
const READ_PAGE: &str = r##"(() => {
  const text = (id) => document.getElementById(id).textContent;
  const img = document.getElementById("frame");
  const canvas = document.createElement("canvas");
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const g = canvas.getContext("2d");
  g.drawImage(img, 0, 0);
  const rect = img.getBoundingClientRect();
  const streams = [...document.querySelectorAll("#streams tr")].slice(1).map((r) => [...r.cells].map((c) => c.textContent));
  return {
    written: text("written"), expected: text("expected"), capacity: text("capacity"), status: text("status"),
    fps: text("fps"), mbps: text("mbps"), cells: text("cells"), min: text("min"), max: text("max"),
    pdfinfo: text("pdfinfo"), devices: text("devices"), streams, selected: document.getElementById("field").value,
    plots: [...document.querySelectorAll("#pdfs canvas")].map((c) => c.getAttribute("aria-label")),
    frame: { ...img.dataset }, width: img.naturalWidth, height: img.naturalHeight,
    rgba: Array.from(g.getImageData(0, 0, canvas.width, canvas.height).data),
    box: [rect.left + img.clientLeft, rect.top + img.clientTop, img.clientWidth, img.clientHeight],
  };
})()"##;

#[test]
fn the_live_view_in_chromium_shows_what_the_output_holds_and_never_slows_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let profile = tempfile::tempdir().unwrap();
    let (mut child, rx) = start_run(dir.path());
    let mut seen = Vec::new();
    let line = common::cli::wait_for(&rx, &mut seen, |l| l.starts_with("monitor: http://"));
    let address: SocketAddr = line["monitor: http://".len()..].split('/').next().unwrap().parse().unwrap();
    common::cli::wait_for_written(&rx, &mut seen, 1);

    // A client that connects and never asks: the run goes on meanwhile.
    let stuck = TcpStream::connect(address).unwrap();
    let during = progress(address)["written"].as_u64().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let later = progress(address)["written"].as_u64().unwrap();
    assert!(later > during, "the run stalled while a client held a connection: {during} then {later}");

    let mut browser = cdp::Browser::launch(&chromium(), profile.path());
    let page = browser.open(&format!("http://{address}/?field=v"), 1280, 720);
    browser.wait_until(
        &page,
        r##"document.getElementById("frame").dataset.frame !== undefined && document.querySelectorAll("#pdfs canvas").length === 2"##,
        Duration::from_secs(60),
        "a picture and the PDFs",
    );
    let live = browser.eval(&page, READ_PAGE);
    check_live_page(&live, &progress(address));
    check_endpoints(address);

    // Ctrl-C ends the run; the page keeps what it showed last, and says the counts are final.
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{}", seen.join("\n"));
    assert!(TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_err(), "the server outlived the run");
    drop(stuck);
    browser.wait_until(
        &page,
        r#"document.getElementById("status").textContent === "the run has ended: these counts are final""#,
        Duration::from_secs(10),
        "the final counts",
    );
    let shown = browser.eval(&page, READ_PAGE);
    let shot = browser.screenshot(&page);
    drop(browser);
    std::fs::write(std::env::temp_dir().join("wgpipe-monitor.png"), &shot).ok();
    check_against_output(dir.path(), &shown, &shot);
}

/// The page while the run goes: the config's numbers, the device and the stream, rates that
/// are not 0, PDFs with labelled axes, the field of the URL chosen.
fn check_live_page(page: &Value, progress: &Value) {
    let text = |k: &str| page[k].as_str().unwrap().to_owned();
    assert_eq!(text("expected"), "100000");
    assert_eq!(text("capacity"), progress["queue_capacity"].to_string());
    let label = progress["devices"][0]["label"].as_str().unwrap();
    assert!(text("devices").contains(label), "the device {label} is listed: {}", text("devices"));
    assert_eq!(page["streams"][0][0], "stream0", "the stream is listed: {}", page["streams"]);
    assert!(text("pdfinfo").starts_with("(stream stream0, frame "), "{}", text("pdfinfo"));
    assert_eq!(text("selected"), "v", "the field of the URL is chosen");
    for k in ["fps", "mbps", "cells"] {
        let rate: f64 = text(k).replace(',', "").parse().unwrap_or_else(|_| panic!("{k}: {}", text(k)));
        assert!(rate > 0.0, "{k} reads {rate} while frames are written");
    }
    let plots: Vec<&str> = page["plots"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    for (plot, field) in plots.iter().zip(["u", "v"]) {
        let axes = format!("PDF of {field}: cells per bin, 0 to ");
        assert!(plot.starts_with(&axes) && plot.contains(&format!("against the value of {field}, ")), "{plot}");
    }
    assert_eq!(plots.len(), 2);
    let (w, h) = (page["width"].as_u64().unwrap(), page["height"].as_u64().unwrap());
    assert_eq!((w, h), (32, 32), "the picture is the middle z slice of v, 32 × 32");
}

/// The endpoints themselves: the newest v as a z slice, the PDFs counting every cell.
fn check_endpoints(address: SocketAddr) {
    let (status, body) = get(address, "/api/frame.png?field=v");
    assert!(status.contains("200"), "{status}");
    assert_eq!(rgb(&body).0, 32);
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
}

/// The page after the run against the output: its frames written are the output's; its
/// picture is `wgpipe render`'s of the same frame (the step checked too), exactly as the page
/// decoded it, and in the screenshot at the centre of each enlarged pixel; the colour scale
/// spans the slice's min and max.
fn check_against_output(dir: &Path, page: &Value, shot: &[u8]) {
    let text = |k: &str| page[k].as_str().unwrap().to_owned();
    let out = open_output(dir.join("out.h5")).unwrap();
    let frames = out.streams()[0].frames;
    assert_eq!(text("written"), frames.to_string(), "the page's frames written against the output's");
    assert_eq!(page["streams"][0][1], frames.to_string(), "the page's frames of stream0 against the output's");

    let frame = &page["frame"];
    assert_eq!((frame["field"].as_str(), frame["stream"].as_str()), (Some("v"), Some("stream0")), "{frame}");
    let index: u64 = frame["frame"].as_str().unwrap().parse().unwrap();
    assert!(index < frames, "the page shows frame {index} of {frames}");
    let step: u64 = frame["step"].as_str().unwrap().parse().unwrap();
    assert_eq!(out.steps(0).unwrap()[index as usize], step, "frame {index}'s step");
    assert_eq!(frame["slice"], "z=12");

    let rendered = common::cli::wgpipe(
        dir,
        &["render", "out.h5", "--stream", "stream0", "--field", "v", "--frame", &index.to_string(), "-o", "r.png"],
    );
    assert!(rendered.status.success(), "{}", common::cli::text(&rendered));
    let (w, h, expected) = rgb(&std::fs::read(dir.join("r.png")).unwrap());
    assert_eq!((w, h), (32, 32));
    let rgba: Vec<u8> = page["rgba"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u8).collect();
    let decoded: Vec<[u8; 3]> = rgba.chunks(4).map(|p| [p[0], p[1], p[2]]).collect();
    assert!(decoded == expected, "the page's picture of frame {index} is not `wgpipe render`'s");

    let v = out.field_index("v").unwrap();
    let values = out.read_f32(0, v, index).unwrap();
    let slice = &values[12 * 32 * 32..13 * 32 * 32];
    let (lo, hi) = slice.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
    let min: f32 = frame["min"].as_str().unwrap().parse().unwrap();
    let max: f32 = frame["max"].as_str().unwrap().parse().unwrap();
    assert_eq!((min, max), (lo, hi), "the colour scale's ends against the slice's values");
    assert!(!text("min").is_empty() && !text("max").is_empty());

    check_screenshot(page, shot, &expected);
}

/// The picture as drawn on the screen: the page enlarges each pixel to a square (12 device
/// pixels a side) without smoothing (`image-rendering: pixelated`), so the centre of each
/// square, 6 device pixels from its edges, is that pixel's colour, exactly, wherever the
/// squares' edges were rounded to (the picture may start at a fraction of a pixel).
fn check_screenshot(page: &Value, shot: &[u8], expected: &[[u8; 3]]) {
    let (width, height, screen) = rgb(shot);
    assert_eq!((width, height), (1280, 720));
    let b: Vec<f64> = page["box"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    let scale = b[2] / 32.0;
    assert!(scale == 12.0 && b[3] == b[2], "the picture lies at {b:?}: not 384 × 384 CSS pixels");
    let mut wrong = Vec::new();
    for (i, want) in expected.iter().enumerate() {
        let (r, c) = ((i / 32) as f64, (i % 32) as f64);
        let (x, y) = ((b[0] + (c + 0.5) * scale) as usize, (b[1] + (r + 0.5) * scale) as usize);
        let got = screen[y * width as usize + x];
        if got != *want {
            wrong.push(format!("({r}, {c}) at ({x}, {y}): {got:?} not {want:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of 1024 pixels differ on the screen: {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(8)]
    );
}
