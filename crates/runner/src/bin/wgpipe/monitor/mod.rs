//! `wgpipe run --monitor ADDRESS`: a live view of the run in a browser. An HTTP server
//! (tiny_http) serves one self-contained page (no external assets) and JSON endpoints: the
//! progress as `--progress json` prints it, with rates over a window of several frames
//! (`/api/progress`), the fields (`/api/fields`), the newest frame of a field as a PNG
//! (`/api/frame.png?field=v`, a 3-D field's middle z slice), the colormap
//! (`/api/colormap.png`), and the newest PDFs of the analysis (`/api/pdf`).
//!
//! Clients are served concurrently: tiny_http reads each connection on a thread of its own,
//! and each request is answered on a thread of its own, so a client that sends nothing, half
//! a request, or never reads its answer delays nobody else. The run never waits for the
//! server: the sink keeps what the page shows of the newest frame ([`tap`]) and the server
//! reads counters. It stops with the run, once an open page has read the final counts.
//! Should tiny_http stop accepting (clients holding every file descriptor the process may
//! open), a new server takes over on the same port as soon as it binds ([`Serving`]).

mod http;
mod rates;
mod tap;

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use wgpipe::Progress;

use crate::progress::Scale;
pub use tap::{Latest, TapSink};

/// Longest the server waits for a request before it looks at the stop signal and samples the
/// counters for the rates.
const POLL: Duration = Duration::from_millis(50);
/// A page that asked for the progress this recently is open: the server waits for it to read
/// the final counts before it stops.
const PAGE_OPEN: Duration = Duration::from_secs(2);
/// Longest the end of a run waits for an open page to read its final counts.
const LINGER: Duration = Duration::from_secs(1);
/// How often a server that stopped accepting connections tries to bind its address again.
const RESTART: Duration = Duration::from_millis(500);
/// After this long without a request the server checks that it still accepts connections
/// (and waits this long at most for the answer).
const PROBE: Duration = Duration::from_secs(1);

/// What the server reads: the run's counters and the frames the sink shows it.
pub struct Watched {
    progress: Arc<Progress>,
    scale: Scale,
    latest: Arc<Latest>,
    started: Instant,
    /// The counters sampled for rates over several frames.
    rates: Mutex<rates::Window>,
    /// The pictures of the newest snapshot as PNG.
    pngs: http::Pngs,
    /// The run has ended: the counters are final.
    ended: AtomicBool,
    /// A page read the counters after the run ended.
    end_seen: AtomicBool,
    /// When a page last asked for the progress: milliseconds after `started`, plus one (0:
    /// never).
    page_asked_ms: AtomicU64,
}

impl Watched {
    fn page_asked(&self, at: Instant) {
        let ms = at.saturating_duration_since(self.started).as_millis();
        self.page_asked_ms.store(u64::try_from(ms).unwrap_or(u64::MAX - 1) + 1, Ordering::Relaxed);
    }

    /// Whether a page asked for the progress within [`PAGE_OPEN`].
    fn page_open(&self) -> bool {
        match self.page_asked_ms.load(Ordering::Relaxed) {
            0 => false,
            ms => self.started.elapsed().saturating_sub(Duration::from_millis(ms - 1)) <= PAGE_OPEN,
        }
    }
}

/// A running monitor; [`Monitor::stop`] ends it.
pub struct Monitor {
    watched: Arc<Watched>,
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
        let server = tiny_http::Server::from_listener(listener, None)
            .map_err(|e| anyhow::anyhow!("--monitor {address}: cannot start the server: {e}"))?;
        let started = Instant::now();
        let watched = Arc::new(Watched {
            rates: Mutex::new(rates::Window::new(started, progress.snapshot())),
            progress,
            scale,
            latest,
            started,
            pngs: http::Pngs::default(),
            ended: AtomicBool::new(false),
            end_seen: AtomicBool::new(false),
            page_asked_ms: AtomicU64::new(0),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (watched, stop) = (Arc::clone(&watched), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("monitor".to_owned())
                .spawn(move || serve(Serving::new(server, address), &watched, &stop))
                .context("--monitor: cannot start the server thread")?
        };
        say!("monitor: http://{address}/ (JSON: /api/progress, /api/fields, /api/frame.png?field=NAME, /api/pdf)");
        Ok(Monitor { watched, stop, thread: Some(thread) })
    }

    /// Stops serving (the run has ended, its output is closed) and waits for the server
    /// thread; first, if a page is open, until it has read the final counts, [`LINGER`] at
    /// most, so that what it shows last is what the output holds.
    pub fn stop(mut self) {
        self.watched.ended.store(true, Ordering::SeqCst);
        if self.watched.page_open() {
            let until = Instant::now() + LINGER;
            while !self.watched.end_seen.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Hands each request to a thread of its own until `stop`, sampling the counters for the
/// rates in between. Dropping the server closes the port; threads still answering or
/// waiting on a client end with it or with the process.
fn serve(mut serving: Serving, watched: &Arc<Watched>, stop: &AtomicBool) {
    let mut sampled = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if let Some(request) = serving.next(stop) {
            let watched = Arc::clone(watched);
            // Without a thread (the system is out of them) the request is dropped, and
            // tiny_http answers it 500.
            let _ = std::thread::Builder::new()
                .name("monitor-answer".to_owned())
                .spawn(move || http::answer(request, &watched));
        }
        if sampled.elapsed() >= POLL {
            sampled = Instant::now();
            if let Ok(mut window) = watched.rates.lock() {
                window.record(sampled, watched.progress.snapshot());
            }
        }
    }
}

/// The server, kept accepting. tiny_http stops accepting for good, its port closed, after a
/// failed accept (too many open files; a connection aborted while queued: its issue #283),
/// and when its accepting thread panics because a connection's second descriptor cannot be
/// had (issue #195): a new server takes over on the same address once it binds again.
struct Serving {
    server: tiny_http::Server,
    address: SocketAddr,
    /// When the server last showed that it accepts: a request, or a probe that connected.
    alive: Instant,
    /// Accepting stopped, and no request came since: said once, and when it is over.
    failing: bool,
}

impl Serving {
    fn new(server: tiny_http::Server, address: SocketAddr) -> Self {
        Serving { server, address, alive: Instant::now(), failing: false }
    }

    /// The next request within [`POLL`], if any; first a new server if this one stopped.
    fn next(&mut self, stop: &AtomicBool) -> Option<tiny_http::Request> {
        match self.server.recv_timeout(POLL) {
            Ok(Some(request)) => {
                self.alive = Instant::now();
                if std::mem::take(&mut self.failing) {
                    say!("monitor: serving http://{}/ again", self.address);
                }
                Some(request)
            }
            Ok(None) if self.alive.elapsed() >= PROBE => {
                self.probe(stop);
                None
            }
            Ok(None) => None,
            Err(e) => {
                self.restart(&e.to_string(), stop);
                None
            }
        }
    }

    /// Connects to the server: refused means its accepting thread is gone. Other failures
    /// (this process out of descriptors itself) say nothing, and it asks again later.
    fn probe(&mut self, stop: &AtomicBool) {
        self.alive = Instant::now();
        let mut target = self.address;
        if target.ip().is_unspecified() {
            target.set_ip(if target.is_ipv4() { Ipv4Addr::LOCALHOST.into() } else { Ipv6Addr::LOCALHOST.into() });
        }
        if let Err(e) = TcpStream::connect_timeout(&target, PROBE)
            && e.kind() == std::io::ErrorKind::ConnectionRefused
        {
            self.restart("it refused a connection", stop);
        }
    }

    /// Binds a new server on the address, every [`RESTART`] until it binds or `stop`.
    fn restart(&mut self, why: &str, stop: &AtomicBool) {
        if !std::mem::replace(&mut self.failing, true) {
            say!("monitor: the server stopped accepting connections ({why}): serving again when the port binds");
        }
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(RESTART);
            let bound = TcpListener::bind(self.address).ok();
            if let Some(server) = bound.and_then(|l| tiny_http::Server::from_listener(l, None).ok()) {
                (self.server, self.alive) = (server, Instant::now());
                return;
            }
        }
    }
}
