//! `wgpipe run --monitor ADDR`: a live view of the run in a browser. A small HTTP server on
//! its own thread serves one self-contained page (no external assets) and JSON endpoints:
//! the progress as `--progress json` prints it (`/api/progress`), the fields
//! (`/api/fields`), the newest frame of a field as a PNG (`/api/frame.png?field=v`, a 3-D
//! field's middle z slice), and the newest PDFs of the analysis (`/api/pdf`).
//!
//! The run never waits for it: the server reads counters and a copy of the newest frame that
//! the sink makes only when a page asked for one and the slot is free ([`tap`]); each
//! connection has short timeouts, so a stuck browser stalls only the server. It stops with
//! the run.

mod http;
mod tap;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use wgpipe::{Progress, ProgressSnapshot};

use crate::progress::Scale;
pub use tap::{Latest, TapSink};

/// How often the server looks for a connection or the stop signal.
const POLL: Duration = Duration::from_millis(20);

/// What the server reads: the run's counters and the frames the sink shows it.
pub struct Watched {
    pub progress: Arc<Progress>,
    pub scale: Scale,
    pub latest: Arc<Latest>,
    pub started: Instant,
    /// The previous snapshot `/api/progress` served, for rates over the interval since.
    pub previous: std::sync::Mutex<(ProgressSnapshot, Instant)>,
}

/// A running monitor; [`Monitor::stop`] ends it.
pub struct Monitor {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Monitor {
    /// Binds `address` and serves the run whose counters are `progress` and whose sink was
    /// tapped ([`TapSink`]) with `latest`.
    pub fn start(
        address: SocketAddr,
        progress: Arc<Progress>,
        scale: Scale,
        latest: Arc<Latest>,
    ) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(address).with_context(|| {
            format!(
                "--monitor {address}: cannot listen there (in use, or not this machine's address): choose another port"
            )
        })?;
        let address = listener.local_addr().unwrap_or(address);
        listener.set_nonblocking(true).context("--monitor: cannot make the listening socket non-blocking")?;
        let snapshot = progress.snapshot();
        let watched = Arc::new(Watched {
            progress,
            scale,
            latest,
            started: Instant::now(),
            previous: std::sync::Mutex::new((snapshot, Instant::now())),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (watched, stop) = (Arc::clone(&watched), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("monitor".to_owned())
                .spawn(move || serve(&listener, &watched, &stop))
                .context("--monitor: cannot start the server thread")?
        };
        eprintln!("monitor: http://{address}/ (JSON: /api/progress, /api/fields, /api/frame.png?field=NAME, /api/pdf)");
        Ok(Monitor { stop, thread: Some(thread) })
    }

    /// Stops serving (the run has ended) and waits for the server thread.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts connections until `stop`, answering each in turn.
fn serve(listener: &TcpListener, watched: &Watched, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => http::answer(stream, watched),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            // A connection that failed before it was accepted: the next one may work.
            Err(_) => std::thread::sleep(POLL),
        }
    }
}
