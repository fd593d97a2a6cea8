//! The monitor's HTTP: what each path answers. tiny_http reads every connection's requests on
//! a thread of that connection's own, and each request is answered on a thread of its own
//! ([`super::serve`]): a client that sends nothing, or half a request, or never reads its
//! answer, holds its own thread and no other client's.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tiny_http::{Header, Method, Request, Response};

use super::Watched;
use super::tap::{Picture, Snapshot, default_picture};
use crate::colormap::viridis_lut;
use crate::progress::json_object;
use crate::render::{self, png_bytes, value_range};

const PAGE: &str = include_str!("page.html");

/// An answer, before tiny_http writes it.
struct Reply {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    /// `no-store` but for the frame (`no-cache`: a page revalidates it by its ETag) and the
    /// colormap (never changes).
    cache: &'static str,
    headers: Vec<(&'static str, String)>,
}

impl Reply {
    fn ok(content_type: &'static str, body: Vec<u8>) -> Self {
        Reply { status: 200, content_type, body, cache: "no-store", headers: Vec::new() }
    }

    fn json(value: &serde_json::Value) -> Self {
        Reply::ok("application/json", value.to_string().into_bytes())
    }

    fn error(status: u16, message: &str) -> Self {
        Reply { status, ..Reply::ok("text/plain; charset=utf-8", message.as_bytes().to_vec()) }
    }

    fn into_response(self) -> Response<std::io::Cursor<Vec<u8>>> {
        // A known length always: tiny_http would chunk bodies above 32 kB.
        let mut response =
            Response::from_data(self.body).with_status_code(self.status).with_chunked_threshold(usize::MAX);
        let fixed = [("Content-Type", self.content_type.to_owned()), ("Cache-Control", self.cache.to_owned())];
        for (name, value) in fixed.into_iter().chain(self.headers) {
            if let Ok(header) = Header::from_bytes(name.as_bytes(), value.as_bytes()) {
                response.add_header(header);
            }
        }
        response
    }
}

/// Answers `request`; a client gone meanwhile is no error worth reporting.
pub fn answer(request: Request, watched: &Watched) {
    let reply = match request.method() {
        Method::Get | Method::Head => {
            let known = request.headers().iter().find(|h| h.field.equiv("If-None-Match")).map(|h| h.value.as_str());
            route(request.url(), known, watched)
        }
        _ => Reply::error(405, "GET only"),
    };
    let _ = request.respond(reply.into_response());
}

/// `name=value` of `query`, the first one called `key`.
fn query_value<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query.split('&').filter_map(|kv| kv.split_once('=')).find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// What `target` asks for; `known` is the ETag of the frame the client has.
fn route(target: &str, known: Option<&str>, watched: &Watched) -> Reply {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    match path {
        "/" | "/index.html" => Reply::ok("text/html; charset=utf-8", PAGE.as_bytes().to_vec()),
        "/api/progress" => progress(watched),
        "/api/fields" => fields(watched),
        "/api/frame.png" => frame_png(watched, query_value(query, "field"), known),
        "/api/colormap.png" => colormap(),
        "/api/pdf" => pdf(watched),
        _ => Reply::error(404, "no such page: try / or /api/progress"),
    }
}

/// The counters, as `--progress json` prints them, with rates over a window of several frames
/// (`rate_window_s` long) and `final`: the run has ended and the counts will not change.
fn progress(watched: &Watched) -> Reply {
    let at = Instant::now();
    watched.page_asked(at);
    // Read before the counters: once it is set, they are the run's last.
    let ended = watched.ended.load(Ordering::SeqCst);
    let now = watched.progress.snapshot();
    let elapsed = at.saturating_duration_since(watched.started).as_secs_f64();
    let done = ended || now.finished_devices >= watched.progress.devices();
    let (mut value, window) = match watched.rates.lock().ok().as_ref().and_then(|w| w.start(at, now.written)) {
        Some(start) => (json_object(&now, start.counters, start.seconds, elapsed, &watched.scale, done), start.seconds),
        None => (json_object(&now, &now, 1.0, elapsed, &watched.scale, done), 0.0),
    };
    value["rate_window_s"] = window.into();
    value["final"] = ended.into();
    if ended {
        watched.end_seen.store(true, Ordering::SeqCst);
    }
    Reply::json(&value)
}

/// The layout's fields and streams, once the sink has begun.
fn fields(watched: &Watched) -> Reply {
    let Some(layout) = watched.latest.layout() else {
        return Reply::error(503, "the run has not begun writing yet");
    };
    let fields: Vec<serde_json::Value> = layout
        .fields
        .iter()
        .map(|f| serde_json::json!({ "name": f.name, "dtype": f.dtype.name(), "shape": f.shape, "dims": f.dims }))
        .collect();
    let streams: Vec<&str> = layout.streams.iter().map(|s| s.name.as_str()).collect();
    Reply::json(&serde_json::json!({ "fields": fields, "streams": streams }))
}

/// A field's picture as PNG, with the colour range it spans.
pub struct Rendered {
    seq: u64,
    png: Vec<u8>,
    range: Option<(f32, f32)>,
}

/// The newest snapshot's pictures as PNG, encoded once per snapshot and field however many
/// pages ask.
#[derive(Default)]
pub struct Pngs(Mutex<HashMap<String, Arc<Rendered>>>);

impl Pngs {
    fn get(&self, snapshot: &Snapshot, picture: &Picture) -> anyhow::Result<Arc<Rendered>> {
        let cached = self.0.lock().ok().and_then(|c| c.get(&picture.field).cloned());
        if let Some(rendered) = cached.filter(|r| r.seq == snapshot.seq) {
            return Ok(rendered);
        }
        let values: Vec<f32> = picture.data.to_f64().into_iter().map(|v| v as f32).collect();
        let range = value_range(&values);
        // What `wgpipe render` draws: the values' own range through the same colormap.
        let (rows, cols, rgb) = render::picture(&picture.data.shape, values, None, None)?;
        let rendered = Arc::new(Rendered { seq: snapshot.seq, png: png_bytes(rows, cols, &rgb)?, range });
        if let Ok(mut cache) = self.0.lock() {
            cache.insert(picture.field.clone(), Arc::clone(&rendered));
        }
        Ok(rendered)
    }
}

/// The newest picture of `field` (default: the first field on the grid) through the colormap,
/// a 3-D field's middle z slice, with headers saying which frame it is and the range its
/// colours span. `known`: the ETag the client has, answered 304 while it is the newest.
fn frame_png(watched: &Watched, field: Option<&str>, known: Option<&str>) -> Reply {
    let Some(layout) = watched.latest.layout() else {
        return Reply::error(503, "the run has not begun writing yet");
    };
    let Some(name) = field.or_else(|| default_picture(&layout)).map(str::to_owned) else {
        return Reply::error(404, "the output has no field to show");
    };
    if layout.field_index(&name).is_none() {
        let names: Vec<&str> = layout.fields.iter().map(|f| f.name.as_str()).collect();
        return Reply::error(404, &format!("no field {name:?}: the fields are {}", names.join(", ")));
    }
    let Some(snapshot) = watched.latest.newest() else {
        return Reply::error(503, "no frame written yet: the picture comes with the first one");
    };
    let Some(picture) = snapshot.picture(&name) else {
        let why = "not kept for the live view (larger than it keeps, or not on the grid)";
        return Reply::error(422, &format!("field {name:?} is {why}: `wgpipe render` draws it from the output"));
    };
    let rendered = match watched.pngs.get(&snapshot, picture) {
        Ok(rendered) => rendered,
        Err(e) => return Reply::error(422, &format!("field {name:?}: {e}")),
    };
    let etag = format!("\"{}-{name}\"", snapshot.seq);
    let headers = frame_headers(watched, &snapshot, picture, rendered.range, etag.clone());
    let reply = if known == Some(etag.as_str()) {
        Reply { status: 304, ..Reply::ok("image/png", Vec::new()) }
    } else {
        Reply::ok("image/png", rendered.png.clone())
    };
    Reply { cache: "no-cache", headers, ..reply }
}

/// Which frame a picture is, as the page and `wgpipe render` name it, and its colour range.
fn frame_headers(
    watched: &Watched,
    snapshot: &Snapshot,
    picture: &Picture,
    range: Option<(f32, f32)>,
    etag: String,
) -> Vec<(&'static str, String)> {
    let stream = watched.scale.streams.get(snapshot.stream).cloned().unwrap_or_default();
    let mut headers = vec![
        ("ETag", etag),
        ("X-Wgpipe-Field", picture.field.clone()),
        ("X-Wgpipe-Stream", stream),
        ("X-Wgpipe-Frame", snapshot.index.to_string()),
        ("X-Wgpipe-Step", snapshot.step.to_string()),
    ];
    if let Some(slice) = &picture.slice {
        headers.push(("X-Wgpipe-Slice", slice.clone()));
    }
    if let Some((lo, hi)) = range {
        headers.extend([("X-Wgpipe-Min", lo.to_string()), ("X-Wgpipe-Max", hi.to_string())]);
    }
    headers
}

/// The colormap, 256 colours from the smallest value to the largest: the page's colour scale.
fn colormap() -> Reply {
    let rgb: Vec<u8> = viridis_lut().into_iter().flatten().collect();
    match png_bytes(1, rgb.len() / 3, &rgb) {
        Ok(png) => Reply { cache: "max-age=86400", ..Reply::ok("image/png", png) },
        Err(e) => Reply::error(500, &e.to_string()),
    }
}

/// The newest frame's PDFs: per analysed field, the left bin edges and the counts summed
/// over the slices (the whole frame's distribution).
fn pdf(watched: &Watched) -> Reply {
    let Some(snapshot) = watched.latest.newest() else {
        return Reply::error(503, "no frame written yet: the PDFs come with the first one");
    };
    let pdfs: Vec<serde_json::Value> = snapshot
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
    let stream = watched.scale.streams.get(snapshot.stream).map_or("", String::as_str);
    Reply::json(&serde_json::json!({ "stream": stream, "frame": snapshot.index, "step": snapshot.step, "pdfs": pdfs }))
}
