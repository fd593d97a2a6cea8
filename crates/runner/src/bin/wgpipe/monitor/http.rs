//! The monitor's HTTP: one GET request per connection, answered and closed within a deadline,
//! so that a client that reads or writes slowly, or not at all, costs the server two seconds
//! at most.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::Watched;
use super::tap::{Snapshot, default_picture};
use crate::progress::json_line;
use crate::render::{picture, png_bytes};

const PAGE: &str = include_str!("page.html");
/// Longest a connection may take, request and answer.
const DEADLINE: Duration = Duration::from_secs(2);
/// Longest one read or write may block (the deadline is checked between them).
const TIMEOUT: Duration = Duration::from_millis(250);
/// Bytes written per call, so the deadline is checked while a slow client reads.
const WRITE_PIECE: usize = 64 << 10;
/// Longest request read: a GET line and its headers.
const MAX_REQUEST: usize = 8192;

struct Response {
    status: &'static str,
    content_type: &'static str,
    body: Vec<u8>,
}

impl Response {
    fn ok(content_type: &'static str, body: Vec<u8>) -> Self {
        Response { status: "200 OK", content_type, body }
    }

    fn json(value: &serde_json::Value) -> Self {
        Response::ok("application/json", value.to_string().into_bytes())
    }

    fn error(status: &'static str, message: &str) -> Self {
        Response { status, content_type: "text/plain; charset=utf-8", body: message.as_bytes().to_vec() }
    }
}

/// Reads one request from `stream` and answers it; errors only drop the connection.
pub fn answer(mut stream: TcpStream, watched: &Watched) {
    let deadline = Instant::now() + DEADLINE;
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(TIMEOUT));
    let _ = stream.set_write_timeout(Some(TIMEOUT));
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < MAX_REQUEST {
        if Instant::now() >= deadline {
            return;
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => request.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
    let text = String::from_utf8_lossy(&request);
    let mut words = text.split_whitespace();
    let response = match (words.next(), words.next()) {
        (Some("GET"), Some(target)) => route(target, watched),
        _ => Response::error("405 Method Not Allowed", "GET only"),
    };
    let head = format!(
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        response.status,
        response.content_type,
        response.body.len()
    );
    let mut out = head.into_bytes();
    out.extend_from_slice(&response.body);
    let mut sent = 0;
    while sent < out.len() && Instant::now() < deadline {
        match stream.write(&out[sent..out.len().min(sent + WRITE_PIECE)]) {
            Ok(0) => return,
            Ok(n) => sent += n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

/// `name=value` of `query`, the first one called `key`.
fn query_value<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query.split('&').filter_map(|kv| kv.split_once('=')).find(|(k, _)| *k == key).map(|(_, v)| v)
}

fn route(target: &str, watched: &Watched) -> Response {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    match path {
        "/" | "/index.html" => Response::ok("text/html; charset=utf-8", PAGE.as_bytes().to_vec()),
        "/api/progress" => progress(watched),
        "/api/fields" => fields(watched),
        "/api/frame.png" => frame_png(watched, query_value(query, "field")),
        "/api/pdf" => pdf(watched),
        _ => Response::error("404 Not Found", "no such page: try / or /api/progress"),
    }
}

/// The counters, as `--progress json` prints them, with rates since the previous request.
fn progress(watched: &Watched) -> Response {
    let now = watched.progress.snapshot();
    let elapsed = watched.started.elapsed().as_secs_f64();
    // Done once every device thread has ended (the writer may still be closing the output).
    let done = now.finished_devices >= watched.progress.devices();
    let line = match watched.previous.lock() {
        Ok(mut previous) => {
            let dt = previous.1.elapsed().as_secs_f64();
            let line = json_line(&now, &previous.0, dt, elapsed, &watched.scale, done);
            *previous = (now, Instant::now());
            line
        }
        Err(_) => json_line(&now, &now, 1.0, elapsed, &watched.scale, done),
    };
    Response::ok("application/json", line.into_bytes())
}

/// The layout's fields and streams, once the sink has begun.
fn fields(watched: &Watched) -> Response {
    let Some(layout) = watched.latest.layout.lock().ok().and_then(|l| l.clone()) else {
        return Response::error("503 Service Unavailable", "the run has not begun writing yet");
    };
    let fields: Vec<serde_json::Value> = layout
        .fields
        .iter()
        .map(|f| serde_json::json!({ "name": f.name, "dtype": f.dtype.name(), "shape": f.shape, "dims": f.dims }))
        .collect();
    let streams: Vec<&str> = layout.streams.iter().map(|s| s.name.as_str()).collect();
    Response::json(&serde_json::json!({ "fields": fields, "streams": streams }))
}

/// Asks the tap for a fresh snapshot and reads the newest one through `read`.
fn with_snapshot<T>(watched: &Watched, read: impl FnOnce(&Snapshot) -> T) -> Option<T> {
    watched.latest.wanted.store(true, Ordering::Relaxed);
    let slot = watched.latest.snapshot.lock().ok()?;
    slot.as_ref().map(read)
}

/// The newest picture of `field` (default: the first field on the grid) through the colormap,
/// a 3-D field's middle z slice.
fn frame_png(watched: &Watched, field: Option<&str>) -> Response {
    let Some(layout) = watched.latest.layout.lock().ok().and_then(|l| l.clone()) else {
        return Response::error("503 Service Unavailable", "the run has not begun writing yet");
    };
    let Some(name) = field.or_else(|| default_picture(&layout)).map(str::to_owned) else {
        return Response::error("404 Not Found", "the output has no field to show");
    };
    if layout.field_index(&name).is_none() {
        let names: Vec<&str> = layout.fields.iter().map(|f| f.name.as_str()).collect();
        return Response::error("404 Not Found", &format!("no field {name:?}: the fields are {}", names.join(", ")));
    }
    if let Ok(mut chosen) = watched.latest.field.lock() {
        *chosen = Some(name.clone());
    }
    let data = with_snapshot(watched, |s| s.picture.as_ref().filter(|(n, _)| *n == name).map(|(_, d)| d.clone()));
    let Some(data) = data.flatten() else {
        return Response::error("503 Service Unavailable", &format!("no frame of {name:?} yet: ask again in a moment"));
    };
    let values: Vec<f32> = data.to_f64().into_iter().map(|v| v as f32).collect();
    match picture(&data.shape, values, None, None).and_then(|(rows, cols, rgb)| png_bytes(rows, cols, &rgb)) {
        Ok(png) => Response::ok("image/png", png),
        Err(e) => Response::error("422 Unprocessable Entity", &format!("field {name:?}: {e}")),
    }
}

/// The newest frame's PDFs: per analysed field, the left bin edges and the counts summed
/// over the slices (the whole frame's distribution).
fn pdf(watched: &Watched) -> Response {
    let stream_names: Vec<String> = watched
        .latest
        .layout
        .lock()
        .ok()
        .and_then(|l| l.as_ref().map(|l| l.streams.iter().map(|s| s.name.clone()).collect()))
        .unwrap_or_default();
    let body = with_snapshot(watched, |s| {
        let pdfs: Vec<serde_json::Value> = s
            .pdfs
            .iter()
            .map(|p| {
                let bins = p.edges.shape.iter().product::<usize>().max(1);
                let mut total = vec![0.0f64; bins];
                for (i, c) in p.counts.to_f64().into_iter().enumerate() {
                    total[i % bins] += c;
                }
                serde_json::json!({ "field": p.field, "edges": p.edges.to_f64(), "counts": total })
            })
            .collect();
        let stream = stream_names.get(s.stream).map_or("", String::as_str);
        serde_json::json!({ "stream": stream, "frame": s.index, "step": s.step, "pdfs": pdfs })
    });
    match body {
        Some(body) => Response::json(&body),
        None => Response::error("503 Service Unavailable", "no frame yet: ask again in a moment"),
    }
}
