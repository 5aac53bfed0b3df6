//! A real browser for the console's tests: Debian's `chromium`, headless, driven through
//! `chromedriver` over the W3C WebDriver protocol (plain HTTP and JSON, spoken with
//! reqwest). Missing either program is a failure that says how to install them, never a
//! skipped test.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// The key WebDriver names an element by.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The first of `candidates` that exists, else on `PATH` by its file name.
fn program(candidates: &[&str]) -> Option<PathBuf> {
    for c in candidates {
        let p = PathBuf::from(c);
        if p.is_file() {
            return Some(p);
        }
    }
    let name = PathBuf::from(candidates[0]);
    let name = name.file_name()?;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

const INSTALL: &str = "install Debian's packages: `apt-get install -y --no-install-recommends \
                       chromium chromium-driver` (.ci/run does this when they are missing)";

/// A chromedriver process and one headless chromium session in it.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
}

impl Browser {
    /// Whether a test that drives a browser must stop here: chromium or chromedriver is not
    /// installed (see `sluice_fake_provider::services`).
    ///
    /// # Panics
    /// When one is missing and `SLUICE_REQUIRE_SERVICES` is set.
    pub fn unavailable() -> bool {
        let found = program(&["/usr/bin/chromium", "/usr/bin/chromium-browser"]).is_some()
            && program(&["/usr/bin/chromedriver"]).is_some();
        sluice_fake_provider::services::missing("chromium and chromedriver", found, INSTALL)
    }

    /// Starts chromedriver on a free loopback port and opens a headless session with a
    /// `width` x `height` window.
    pub async fn start(width: u32, height: u32) -> Browser {
        let chromium = program(&["/usr/bin/chromium", "/usr/bin/chromium-browser"])
            .unwrap_or_else(|| panic!("chromium is not installed: {INSTALL}"));
        let driver_bin = program(&["/usr/bin/chromedriver"])
            .unwrap_or_else(|| panic!("chromedriver is not installed: {INSTALL}"));
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let driver = Command::new(&driver_bin)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{} could not start: {e}", driver_bin.display()));
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let mut ready = false;
        for _ in 0..100 {
            if let Ok(r) = http.get(format!("{base}/status")).send().await
                && let Ok(v) = r.json::<Value>().await
                && v["value"]["ready"] == true
            {
                ready = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut browser = Browser {
            driver,
            base,
            session: String::new(),
            http,
        };
        assert!(ready, "chromedriver never answered /status on port {port}");
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.display().to_string(),
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--hide-scrollbars",
                         format!("--window-size={width},{height}")],
            },
        }}});
        let v = browser.command("POST", "/session", Some(caps)).await;
        browser.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session from chromedriver: {v}"))
            .to_owned();
        browser
    }

    /// One WebDriver command: its `value`, or a panic naming the command and the error.
    async fn command(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.base);
        let req = match method {
            "GET" => self.http.get(&url),
            "DELETE" => self.http.delete(&url),
            _ => self
                .http
                .post(&url)
                .json(&body.unwrap_or_else(|| json!({}))),
        };
        let r = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{method} {path}: {status} {v}");
        v["value"].clone()
    }

    fn at(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    /// Opens `url`.
    pub async fn go(&self, url: &str) {
        self.command("POST", &self.at("/url"), Some(json!({"url": url})))
            .await;
    }

    /// The element `css` selects, waiting for it up to 10 s.
    pub async fn find(&self, css: &str) -> String {
        for _ in 0..100 {
            let r = self
                .http
                .post(format!("{}{}", self.base, self.at("/element")))
                .json(&json!({"using": "css selector", "value": css}))
                .send()
                .await
                .unwrap();
            if r.status().is_success() {
                let v: Value = r.json().await.unwrap();
                return v["value"][ELEMENT]
                    .as_str()
                    .unwrap_or_else(|| panic!("finding `{css}`: {v}"))
                    .to_owned();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let page = self.text("body").await;
        panic!("no element `{css}` appeared in 10 s; the page reads:\n{page}");
    }

    /// Clicks the element `css` selects.
    pub async fn click(&self, css: &str) {
        let e = self.find(css).await;
        self.command("POST", &self.at(&format!("/element/{e}/click")), None)
            .await;
    }

    /// Types `text` into the element `css` selects.
    pub async fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css).await;
        self.command(
            "POST",
            &self.at(&format!("/element/{e}/value")),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// The visible text of the element `css` selects.
    pub async fn text(&self, css: &str) -> String {
        let v = self
            .command(
                "POST",
                &self.at("/element"),
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        let e = v[ELEMENT].as_str().unwrap().to_owned();
        let t = self
            .command("GET", &self.at(&format!("/element/{e}/text")), None)
            .await;
        t.as_str().unwrap_or_default().to_owned()
    }

    /// Waits up to 10 s for the text of `css` to hold `want`; the text.
    pub async fn until_text(&self, css: &str, want: &str) -> String {
        let mut last = String::new();
        for _ in 0..100 {
            self.find(css).await;
            last = self.text(css).await;
            if last.contains(want) {
                return last;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("`{css}` never read `{want}`; it reads `{last}`");
    }

    /// A PNG of the window.
    pub async fn screenshot(&self) -> Vec<u8> {
        let v = self.command("GET", &self.at("/screenshot"), None).await;
        base64(v.as_str().expect("a base64 screenshot"))
    }

    /// Ends the session and the driver.
    pub async fn quit(mut self) {
        self.command("DELETE", &self.at(""), None).await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // A failed test ends the driver too (and chromium with it).
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Standard base64, as WebDriver sends screenshots.
fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let clean: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= u32::from(value(*c)) << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

#[test]
fn base64_decodes_what_webdriver_sends() {
    assert_eq!(base64("aGVsbG8="), b"hello");
    assert_eq!(base64("aGk="), b"hi");
    assert_eq!(base64("YWJj"), b"abc");
}
