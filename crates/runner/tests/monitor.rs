//! The live view's server against clients that misbehave, without a browser (the browser
//! group opens the page itself): eight clients that connect and send nothing, send half a
//! request, or trickle one a byte at a time, forever, while the run goes flat out on both
//! cores, and another client's request is still answered within 100 ms: clients are served
//! concurrently. The run, stopped with Ctrl-C, still exits promptly, and its port closes.
//! Clients that hold every file descriptor the process may open stop the server accepting
//! (tiny_http's accepting ends): it serves again once they let go.
#![cfg(unix)]
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Clients that never finish a request.
const STUCK: usize = 8;
/// Longest another client's request may take, connection to last byte of the answer.
const PROMPT: Duration = Duration::from_millis(100);
/// Longest the run may take to exit after Ctrl-C: its frames in flight, closing the output.
const EXIT: Duration = Duration::from_secs(6);

/// Client `i` of the stuck ones: a third connect and say nothing, a third send half a
/// request, the rest trickle one byte every 50 ms until `stop`.
fn stuck_client(address: SocketAddr, i: usize, stop: &Arc<AtomicBool>) -> TcpStream {
    let mut s = TcpStream::connect(address).unwrap();
    match i % 3 {
        0 => {}
        1 => s.write_all(b"GET /api/progress HTTP/1.1\r\nHost: x\r\nX-Half: ").unwrap(),
        _ => {
            let (mut s, stop) = (s.try_clone().unwrap(), Arc::clone(stop));
            std::thread::spawn(move || {
                let _ = s.write_all(b"GET /api/progress HTTP/1.1\r\nX-Slow: ");
                while !stop.load(Ordering::Relaxed) && s.write_all(b"a").is_ok() {
                    std::thread::sleep(Duration::from_millis(50));
                }
            });
        }
    }
    s
}

/// Whether the server still holds `s` open: nothing to read, and no end of stream.
fn still_open(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let open = matches!((&*s).read(&mut [0u8; 1]), Err(e) if e.kind() == ErrorKind::WouldBlock);
    s.set_nonblocking(false).unwrap();
    open
}

/// A run of many small frames that keeps both cores busy, analysed, stored nowhere.
const RUN: &str = "[grid]\nrows = 64\ncols = 64\n[run]\nframes = 100000\nsteps_per_frame = 8\n[devices]\n\
                   select = [0]\n[output]\nsink = \"null\"\n[analysis]\nfields = [\"v\"]\npdf_bins = 16\n";

/// `GET /api/progress` with `Connection: close`: the status line, or why none came.
fn ask(address: SocketAddr) -> Result<String, std::io::Error> {
    let mut s = TcpStream::connect_timeout(&address, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.write_all(format!("GET /api/progress HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").as_bytes())?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    Ok(String::from_utf8_lossy(&answer).lines().next().unwrap_or_default().to_owned())
}

#[test]
fn stuck_clients_delay_no_other_request_by_100_ms_nor_the_runs_exit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.toml"), RUN).unwrap();
    let (mut child, rx) = common::cli::spawn_with_stderr(
        dir.path(),
        &["run", "run.toml", "--progress", "frames", "--monitor", "127.0.0.1:0"],
    );
    let mut seen = Vec::new();
    let line = common::cli::wait_for(&rx, &mut seen, |l| l.starts_with("monitor: http://"));
    let address: SocketAddr = line["monitor: http://".len()..].split('/').next().unwrap().parse().unwrap();
    common::cli::wait_for_written(&rx, &mut seen, 1);

    let stop = Arc::new(AtomicBool::new(false));
    let stuck: Vec<TcpStream> = (0..STUCK).map(|i| stuck_client(address, i, &stop)).collect();
    // Long enough for the server to have taken every one of them in.
    std::thread::sleep(Duration::from_millis(300));

    // The one request measured: connect, ask, read the whole answer.
    let asked = Instant::now();
    let mut s = TcpStream::connect(address).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("GET /api/progress HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let mut answer = Vec::new();
    let read = s.read_to_end(&mut answer);
    let waited = asked.elapsed();
    let text = String::from_utf8_lossy(&answer);
    assert!(read.is_ok() && text.starts_with("HTTP/1.1 200"), "no answer after {waited:?}: {read:?} {text}");
    let body = &text[text.find("\r\n\r\n").unwrap() + 4..];
    let progress: serde_json::Value = serde_json::from_str(body).unwrap();
    assert!(progress["written"].as_u64().unwrap() > 0, "{body}");
    assert!(waited <= PROMPT, "answered after {waited:?} with {STUCK} clients stuck: more than {PROMPT:?}");
    eprintln!("answered in {waited:?} with {STUCK} clients stuck");
    // Served alongside them, not after hanging up on them.
    assert!(stuck.iter().all(still_open), "the server dropped a stuck client to answer another");

    // Ctrl-C with them all still stuck: the run exits promptly, and the port closes.
    let stopped = Instant::now();
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let status = child.wait().unwrap();
    let took = stopped.elapsed();
    stop.store(true, Ordering::Relaxed);
    assert_eq!(status.code(), Some(130), "stopped by Ctrl-C: {}", seen.join("\n"));
    assert!(took <= EXIT, "the run took {took:?} to exit with {STUCK} clients stuck");
    assert!(TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_err(), "the server outlived the run");
}

#[test]
fn a_server_out_of_file_descriptors_serves_again_once_clients_let_go() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.toml"), RUN).unwrap();
    // The run may open 128 files: the clients below hold all it has left.
    let mut child = Command::new("sh")
        .args(["-c", r#"ulimit -n 128 && exec "$0" "$@""#, env!("CARGO_BIN_EXE_wgpipe")])
        .args(["run", "run.toml", "--progress", "frames", "--monitor", "127.0.0.1:0"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = common::cli::lines(child.stderr.take().unwrap());
    let mut seen = Vec::new();
    let line = common::cli::wait_for(&rx, &mut seen, |l| l.starts_with("monitor: http://"));
    let address: SocketAddr = line["monitor: http://".len()..].split('/').next().unwrap().parse().unwrap();
    common::cli::wait_for_written(&rx, &mut seen, 1);

    let mut held = Vec::new();
    while held.len() < 200 {
        match TcpStream::connect_timeout(&address, Duration::from_millis(500)) {
            Ok(s) => held.push(s),
            Err(_) => break,
        }
    }
    assert!(held.len() < 200, "the server accepted 200 clients: the limit of 128 files did not hold");
    // Until they let go the server cannot even be told it stopped.
    std::thread::sleep(Duration::from_millis(500));
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = ask(address);
    while !last.as_ref().is_ok_and(|l| l.starts_with("HTTP/1.1 200")) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        last = ask(address);
    }
    assert!(last.as_ref().is_ok_and(|l| l.starts_with("HTTP/1.1 200")), "not served again: {last:?}");
    common::cli::wait_for(&rx, &mut seen, |l| l.starts_with("monitor: the server stopped accepting connections"));
    common::cli::wait_for(&rx, &mut seen, |l| l.starts_with("monitor: serving http://") && l.ends_with(" again"));
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    assert_eq!(child.wait().unwrap().code(), Some(130), "{}", seen.join("\n"));
}
