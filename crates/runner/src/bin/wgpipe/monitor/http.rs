//! The monitor's HTTP: one GET request per connection, answered and closed, with timeouts so
//! that a client that stops reading or writing costs the server a second at most.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use wgpipe::storage::{FieldData, Frame, StreamLayout};

use super::Watched;
use crate::progress::json_line;
use crate::render::{Axis, View, picture, png_bytes};

const PAGE: &str = include_str!("page.html");
/// Longest a client may take to send its request or read the answer.
const TIMEOUT: Duration = Duration::from_secs(1);
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
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(TIMEOUT));
    let _ = stream.set_write_timeout(Some(TIMEOUT));
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < MAX_REQUEST {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => request.extend_from_slice(&buf[..n]),
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
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&response.body));
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
    let line = match watched.previous.lock() {
        Ok(mut previous) => {
            let dt = previous.1.elapsed().as_secs_f64();
            let line = json_line(&now, &previous.0, dt, elapsed, &watched.scale, watched.done.load(Ordering::Relaxed));
            *previous = (now, Instant::now());
            line
        }
        Err(_) => json_line(&now, &now, 1.0, elapsed, &watched.scale, false),
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

/// The newest frame copied, with the layout it follows; asks the tap for a fresh one.
fn newest(watched: &Watched) -> Result<(StreamLayout, Frame), Response> {
    watched.latest.wanted.store(true, Ordering::Relaxed);
    let layout = watched.latest.layout.lock().ok().and_then(|l| l.clone());
    let frame = watched.latest.frame.lock().ok().and_then(|f| f.clone());
    match (layout, frame) {
        (Some(layout), Some(frame)) => Ok((layout, frame)),
        _ => Err(Response::error("503 Service Unavailable", "no frame yet: ask again in a moment")),
    }
}

/// Field `name` of `frame` as a C-order array.
fn field_data(layout: &StreamLayout, frame: &Frame, name: &str) -> Option<FieldData> {
    let i = layout.field_index(name)?;
    let range = layout.field_range(i)?;
    let spec = &layout.fields[i];
    Some(FieldData { dtype: spec.dtype, shape: spec.shape.clone(), bytes: frame.data.get(range)?.to_vec() })
}

/// The newest frame of `field` (default: the first) through the colormap, a 3-D field's
/// middle z slice.
fn frame_png(watched: &Watched, field: Option<&str>) -> Response {
    let (layout, frame) = match newest(watched) {
        Ok(newest) => newest,
        Err(response) => return response,
    };
    let name = field.unwrap_or_else(|| layout.fields.first().map_or("", |f| f.name.as_str()));
    let Some(data) = field_data(&layout, &frame, name) else {
        let names: Vec<&str> = layout.fields.iter().map(|f| f.name.as_str()).collect();
        return Response::error("404 Not Found", &format!("no field {name:?}: the fields are {}", names.join(", ")));
    };
    let values: Vec<f32> = data.to_f64().into_iter().map(|v| v as f32).collect();
    let view = (data.shape.len() == 3).then(|| View::Slice(Axis::Z, data.shape[0] / 2));
    match picture(&data.shape, values, view, None).and_then(|(rows, cols, rgb)| png_bytes(rows, cols, &rgb)) {
        Ok(png) => Response::ok("image/png", png),
        Err(e) => Response::error("422 Unprocessable Entity", &format!("field {name:?}: {e}")),
    }
}

/// The newest frame's PDFs: per analysed field, the left bin edges and the counts summed
/// over the slices (the whole frame's distribution).
fn pdf(watched: &Watched) -> Response {
    let (layout, frame) = match newest(watched) {
        Ok(newest) => newest,
        Err(response) => return response,
    };
    let mut pdfs = Vec::new();
    for f in layout.fields.iter().filter(|f| f.name.ends_with("_pdf")) {
        let base = &f.name[..f.name.len() - "_pdf".len()];
        let (Some(counts), Some(edges)) =
            (field_data(&layout, &frame, &f.name), field_data(&layout, &frame, &format!("{base}_bins")))
        else {
            continue;
        };
        let bins = edges.shape.iter().product::<usize>().max(1);
        let mut total = vec![0.0f64; bins];
        for (i, c) in counts.to_f64().into_iter().enumerate() {
            total[i % bins] += c;
        }
        pdfs.push(serde_json::json!({ "field": base, "edges": edges.to_f64(), "counts": total }));
    }
    let stream = layout.streams.get(frame.stream).map_or("", |s| s.name.as_str());
    Response::json(&serde_json::json!({ "stream": stream, "frame": frame.index, "step": frame.step, "pdfs": pdfs }))
}
