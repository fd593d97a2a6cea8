//! The live view's server against clients that misbehave, without a browser (the browser
//! group opens the page itself): a client that trickles a request one byte at a time, forever,
//! holds the one-connection-at-a-time server for at most its 2 s deadline, so another client
//! is still answered and the run, stopped with Ctrl-C, still exits promptly.
#![cfg(unix)]
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What the server promises each connection: an answer, or the door, within this.
const DEADLINE: Duration = Duration::from_secs(2);
/// Room for a loaded 2-core machine on top of it.
const SLACK: Duration = Duration::from_secs(4);

#[test]
fn a_trickling_client_neither_starves_others_nor_delays_the_runs_exit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("run.toml"),
        "[grid]\nrows = 64\ncols = 64\n[run]\nframes = 100000\nsteps_per_frame = 8\n[devices]\nselect = [0]\n\
         [output]\nsink = \"null\"\n[analysis]\nfields = [\"v\"]\npdf_bins = 16\n",
    )
    .unwrap();
    let (mut child, rx) = common::cli::spawn_with_stderr(
        dir.path(),
        &["run", "run.toml", "--progress", "frames", "--monitor", "127.0.0.1:0"],
    );
    let mut seen = Vec::new();
    let line = common::cli::wait_for(&rx, &mut seen, |l| l.starts_with("monitor: http://"));
    let address: SocketAddr = line["monitor: http://".len()..].split('/').next().unwrap().parse().unwrap();
    common::cli::wait_for(&rx, &mut seen, |l| l.starts_with("written ") && !l.starts_with("written 0/"));

    // One byte every 100 ms of a request that never ends, until the server hangs up.
    let stop = Arc::new(AtomicBool::new(false));
    let trickler = {
        let stop = Arc::clone(&stop);
        let mut s = TcpStream::connect(address).unwrap();
        std::thread::spawn(move || {
            let started = Instant::now();
            s.write_all(b"GET /api/progress HTTP/1.1\r\nX-Slow: ").unwrap();
            while !stop.load(Ordering::Relaxed) && s.write_all(b"a").is_ok() {
                std::thread::sleep(Duration::from_millis(100));
            }
            started.elapsed()
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    // Another client is answered once the trickler's time is up.
    let asked = Instant::now();
    let mut s = TcpStream::connect(address).unwrap();
    s.set_read_timeout(Some(DEADLINE + SLACK)).unwrap();
    s.write_all(format!("GET /api/progress HTTP/1.1\r\nHost: {address}\r\n\r\n").as_bytes()).unwrap();
    let mut answer = Vec::new();
    let read = s.read_to_end(&mut answer);
    let waited = asked.elapsed();
    let text = String::from_utf8_lossy(&answer);
    assert!(read.is_ok() && text.starts_with("HTTP/1.1 200"), "no answer after {waited:?}: {read:?} {text}");
    assert!(waited <= DEADLINE + SLACK, "answered after {waited:?}");

    // A new trickler, then Ctrl-C: the run exits within the deadline (plus the frames in flight).
    let mut slow = TcpStream::connect(address).unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\n").unwrap();
    let stopped = Instant::now();
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let status = child.wait().unwrap();
    let took = stopped.elapsed();
    stop.store(true, Ordering::Relaxed);
    assert_eq!(status.code(), Some(130), "stopped by Ctrl-C");
    assert!(took <= DEADLINE + SLACK, "the run took {took:?} to exit with a client trickling");
    let _ = slow.write_all(b"x");
    let held = trickler.join().unwrap();
    assert!(held <= DEADLINE + SLACK, "the first trickler was held {held:?}: the server let it keep the connection");
}
