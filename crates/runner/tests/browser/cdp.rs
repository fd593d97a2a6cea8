//! Headless Chromium driven over the Chrome DevTools Protocol on a pipe
//! (`--remote-debugging-pipe`: JSON messages ending in a NUL byte, commands read from the
//! browser's fd 3, answers written to its fd 4), with no crate beyond serde_json and no port.
//! Why not `--dump-dom` and `--screenshot`: each loads the page anew, so the DOM and the
//! picture came from two loads, and neither could wait for the run to end; here one page is
//! read as often as wanted, and its DOM, its pixels and a screenshot are of the same moment.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

/// Longest a command may take (a page's script, a screenshot).
const ANSWER: Duration = Duration::from_secs(60);

/// A running headless Chromium; closed and reaped when dropped.
pub struct Browser {
    child: Child,
    to: ChildStdin,
    from: Receiver<Value>,
    next_id: u64,
    log: PathBuf,
}

/// A page (a tab) of the browser, by its DevTools session.
pub struct Page {
    session: String,
}

impl Browser {
    /// Starts `binary` headless as a root process in a closed network can run it: no sandbox,
    /// no GPU, no background connections, a profile of its own in `profile` (where its stderr
    /// goes too, as `chromium.log`).
    pub fn launch(binary: &Path, profile: &Path) -> Browser {
        let log = profile.join("chromium.log");
        let mut child = Command::new("sh")
            // The command pipe becomes fd 3, the answer pipe fd 4.
            .args(["-c", r#"exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>/dev/null"#])
            .arg(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let to = child.stdin.take().unwrap();
        let from = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for message in from.split(0).map_while(Result::ok) {
                let Ok(value) = serde_json::from_slice::<Value>(&message) else { continue };
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Browser { child, to, from: rx, next_id: 1, log }
    }

    /// Sends `method` with `params` (to `session`, or to the browser) and returns its result;
    /// panics on an error answer or none within [`ANSWER`]. Events in between are skipped.
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = session.into();
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        self.to.write_all(&bytes).and_then(|()| self.to.flush()).unwrap_or_else(|e| self.fail(&format!("{e}")));
        let deadline = Instant::now() + ANSWER;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let answer = self.from.recv_timeout(left).unwrap_or_else(|e| self.fail(&format!("{method}: {e}")));
            if answer["id"] != id {
                continue;
            }
            if !answer["error"].is_null() {
                self.fail(&format!("{method}: {}", answer["error"]));
            }
            return answer["result"].clone();
        }
    }

    fn fail(&self, what: &str) -> ! {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        panic!("chromium: {what}\nits stderr:\n{log}");
    }

    /// Opens `url` in a new page of `width` × `height` CSS pixels, one device pixel each.
    pub fn open(&mut self, url: &str, width: u32, height: u32) -> Page {
        let target = self.call(None, "Target.createTarget", json!({ "url": "about:blank" }));
        let attached =
            self.call(None, "Target.attachToTarget", json!({ "targetId": target["targetId"], "flatten": true }));
        let page = Page { session: attached["sessionId"].as_str().unwrap().to_owned() };
        let metrics = json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false });
        self.call(Some(&page.session), "Emulation.setDeviceMetricsOverride", metrics);
        self.call(Some(&page.session), "Page.navigate", json!({ "url": url }));
        page
    }

    /// The value of `expression`, evaluated in `page` (a promise is awaited).
    pub fn eval(&mut self, page: &Page, expression: &str) -> Value {
        let params = json!({ "expression": expression, "returnByValue": true, "awaitPromise": true });
        let result = self.call(Some(&page.session), "Runtime.evaluate", params);
        if !result["exceptionDetails"].is_null() {
            self.fail(&format!("{expression}: {}", result["exceptionDetails"]));
        }
        result["result"]["value"].clone()
    }

    /// Evaluates `condition` in `page` every 100 ms until it is true (one that throws, as it
    /// may while the page loads, is false); panics with `what` and the page's text after
    /// `limit`.
    pub fn wait_until(&mut self, page: &Page, condition: &str, limit: Duration, what: &str) {
        let deadline = Instant::now() + limit;
        let guarded = format!("(() => {{ try {{ return ({condition}) === true; }} catch (e) {{ return false; }} }})()");
        while self.eval(page, &guarded) != Value::Bool(true) {
            if Instant::now() > deadline {
                let text = self.eval(page, "document.body.innerText");
                panic!("the page never showed {what} within {limit:?}; it shows:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A screenshot of what `page` shows, as PNG bytes.
    pub fn screenshot(&mut self, page: &Page) -> Vec<u8> {
        let shot = self.call(Some(&page.session), "Page.captureScreenshot", json!({ "format": "png" }));
        base64::engine::general_purpose::STANDARD.decode(shot["data"].as_str().unwrap()).unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.to.write_all(b"{\"id\":0,\"method\":\"Browser.close\"}\0");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
