//! Headless Chromium, driven over WebDriver (`chromedriver`), for the
//! browser viewer's tests and benchmarks: a session, a page, scripts run
//! in it, pointer and wheel actions, screenshots.
//!
//! Debian's `chromium` and `chromium-driver`; [`Browser::start`] says
//! `None` (with the reason) where they are not installed, and the caller
//! skips.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

/// Chromium and its driver, found on `PATH` or where Debian puts them.
fn find(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([
            PathBuf::from("/usr/bin"),
            PathBuf::from("/usr/lib/chromium"),
        ])
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

/// A headless Chromium session; the driver and the browser end with it.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    agent: ureq::Agent,
    profile: PathBuf,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self
            .agent
            .delete(&format!("{}/session/{}", self.base, self.session))
            .call();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

impl Browser {
    /// Starts chromedriver and a headless Chromium `width` × `height`
    /// (software WebGL, SwiftShader); `Err` says what is missing.
    pub fn start(width: u32, height: u32) -> Result<Browser, String> {
        Browser::start_with(width, height, &[])
    }

    /// [`Browser::start`], with more Chromium switches (a certificate to
    /// accept by its key, a name to resolve).
    pub fn start_with(width: u32, height: u32, switches: &[String]) -> Result<Browser, String> {
        let chromium = find(&["chromium", "chromium-browser"])
            .ok_or("chromium not installed (Debian: apt-get install chromium chromium-driver)")?;
        let driver_bin = find(&["chromedriver"])
            .ok_or("chromedriver not installed (Debian: chromium-driver)")?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("chromedriver does not start: {e}"))?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(60)))
            .http_status_as_error(false)
            .build()
            .into();
        let base = format!("http://127.0.0.1:{port}");
        let profile =
            std::env::temp_dir().join(format!("typhon-chromium-{}-{port}", std::process::id()));
        let mut browser = Browser {
            driver,
            base,
            session: String::new(),
            agent,
            profile,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while browser.get("/status").is_err() {
            if Instant::now() > deadline {
                return Err("chromedriver did not answer within 20 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut args = vec![
            "--headless=new".to_owned(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--enable-unsafe-swiftshader".into(),
            "--use-angle=swiftshader".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", browser.profile.display()),
        ];
        args.extend(switches.iter().cloned());
        let created = browser.post(
            "/session",
            &json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {"binary": chromium, "args": args}
            }}}),
        )?;
        browser.session = created["sessionId"]
            .as_str()
            .ok_or_else(|| format!("no session: {created}"))?
            .to_owned();
        Ok(browser)
    }

    fn get(&self, path: &str) -> Result<Value, String> {
        let mut answer = self
            .agent
            .get(&format!("{}{path}", self.base))
            .call()
            .map_err(|e| e.to_string())?;
        answer
            .body_mut()
            .read_json::<Value>()
            .map_err(|e| e.to_string())
    }

    fn post(&self, path: &str, body: &Value) -> Result<Value, String> {
        let mut answer = self
            .agent
            .post(&format!("{}{path}", self.base))
            .send_json(body)
            .map_err(|e| e.to_string())?;
        let status = answer.status();
        let value = answer
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_json::<Value>()
            .map_err(|e| e.to_string())?;
        if status.is_success() {
            Ok(value["value"].clone())
        } else {
            Err(format!("{path}: {status}: {}", value["value"]))
        }
    }

    fn session_post(&self, path: &str, body: &Value) -> Result<Value, String> {
        self.post(&format!("/session/{}{path}", self.session), body)
    }

    /// Opens `url`.
    pub fn open(&self, url: &str) -> Result<(), String> {
        self.session_post("/url", &json!({ "url": url })).map(drop)
    }

    /// Runs `script` (a function body) in the page and returns what it
    /// returns.
    pub fn run(&self, script: &str) -> Result<Value, String> {
        self.session_post("/execute/sync", &json!({"script": script, "args": []}))
    }

    /// Waits at most `wait` for `script` to return something that
    /// satisfies `want`, and returns it; `Err` with the last value.
    pub fn wait_for(
        &self,
        script: &str,
        wait: Duration,
        want: impl Fn(&Value) -> bool,
    ) -> Result<Value, String> {
        let deadline = Instant::now() + wait;
        loop {
            let value = self.run(script);
            if let Ok(v) = &value {
                if want(v) {
                    return Ok(v.clone());
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "not within {wait:?}: the last answer was {value:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Performs `actions`, then releases every input source, so that the
    /// next gesture starts from the page's state, not the driver's memory
    /// of the last one (a move to where the driver thinks the pointer
    /// already is sends no event).
    fn perform(&self, actions: &Value) -> Result<(), String> {
        self.session_post("/actions", actions)?;
        let release = format!("{}/session/{}/actions", self.base, self.session);
        self.agent
            .delete(&release)
            .call()
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Clicks at `(x, y)` of the viewport.
    pub fn click(&self, x: f64, y: f64) -> Result<(), String> {
        let actions = json!({"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [
                {"type": "pointerMove", "duration": 0, "x": x.round() as i64, "y": y.round() as i64},
                {"type": "pointerDown", "button": 0},
                {"type": "pause", "duration": 50},
                {"type": "pointerUp", "button": 0}
            ]
        }]});
        self.perform(&actions)
    }

    /// Types `text` on the keyboard, into whatever has the focus.
    pub fn type_text(&self, text: &str) -> Result<(), String> {
        let keys: Vec<Value> = text
            .chars()
            .flat_map(|c| {
                let c = c.to_string();
                [
                    json!({"type": "keyDown", "value": c}),
                    json!({"type": "keyUp", "value": c}),
                ]
            })
            .collect();
        let actions = json!({"actions": [{"type": "key", "id": "keyboard", "actions": keys}]});
        self.perform(&actions)
    }

    /// Moves the mouse to `(x, y)`, then turns its wheel by `delta_y`
    /// pixels there (negative: away from the user, which zooms in).
    pub fn wheel(&self, x: f64, y: f64, delta_y: f64) -> Result<(), String> {
        let moved = json!({"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [{"type": "pointerMove", "duration": 0, "x": x.round() as i64, "y": y.round() as i64}]
        }]});
        self.perform(&moved)?;
        let actions = json!({"actions": [{
            "type": "wheel", "id": "wheel",
            "actions": [{"type": "scroll", "x": x.round() as i64, "y": y.round() as i64,
                         "deltaX": 0, "deltaY": delta_y.round() as i64, "duration": 0}]
        }]});
        self.perform(&actions)
    }

    /// A screenshot of the viewport: PNG bytes.
    pub fn screenshot(&self) -> Result<Vec<u8>, String> {
        let value = self.get(&format!("/session/{}/screenshot", self.session))?;
        let text = value["value"].as_str().ok_or("no screenshot")?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| e.to_string())
    }
}

/// Distinct colours of a PNG (RGB), counted up to `cap`: a blank or
/// single-colour page has one or two.
pub fn colours(png_bytes: &[u8], cap: usize) -> Result<usize, String> {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
    let mut buf = vec![0; reader.output_buffer_size().ok_or("no size")?];
    let info = reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
    let step = info.color_type.samples();
    let mut seen = std::collections::HashSet::new();
    for pixel in buf[..info.buffer_size()].chunks_exact(step) {
        seen.insert((pixel[0], pixel.get(1).copied(), pixel.get(2).copied()));
        if seen.len() >= cap {
            break;
        }
    }
    Ok(seen.len())
}
