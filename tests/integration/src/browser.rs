//! A real headless Chromium for the console's tests, driven through
//! ChromeDriver's W3C WebDriver protocol (JSON over HTTP on loopback). It
//! speaks only the commands the tests use: open a page, find an element by
//! CSS, read its text, type, click, read the URL, take a screenshot.
//!
//! Chromium and ChromeDriver are Debian's packages (`make browser-tools`
//! installs them); `HOOKGATE_CHROMIUM` and `HOOKGATE_CHROMEDRIVER` point
//! elsewhere. A missing browser fails the test: it is never skipped.

use std::{path::Path, process::Stdio, time::Duration};

use base64::Engine;
use serde_json::{Value, json};

/// The key under which WebDriver returns an element's id.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

#[derive(Debug)]
pub struct Browser {
    http: reqwest::Client,
    session: String,
    _driver: tokio::process::Child,
    _profile: TempDir,
}

/// A directory removed when dropped: Chromium's throwaway profile.
#[derive(Debug)]
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn program(var: &str, default: &str) -> String {
    let path = std::env::var(var).unwrap_or_else(|_| default.to_owned());
    assert!(
        Path::new(&path).exists(),
        "{path} is missing: run `make browser-tools` (Debian's chromium and chromium-driver), \
         or set {var}"
    );
    path
}

impl Browser {
    /// ChromeDriver on a free loopback port, and one headless Chromium
    /// session with a fresh profile and no background networking (this
    /// machine has no internet; Chromium's own calls home would only fail).
    pub async fn start() -> Browser {
        let driver_path = program("HOOKGATE_CHROMEDRIVER", "/usr/bin/chromedriver");
        let chromium = program("HOOKGATE_CHROMIUM", "/usr/bin/chromium");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = tokio::process::Command::new(driver_path)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start chromedriver");
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let ready = http.get(format!("{base}/status")).send().await;
            if let Ok(r) = ready
                && let Ok(v) = r.json::<Value>().await
                && v["value"]["ready"] == true
            {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "chromedriver did not start"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile =
            std::env::temp_dir().join(format!("hookgate-chromium-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&profile).expect("profile dir");
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-extensions", "--no-first-run", "--window-size=1280,1000",
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
        }}});
        let created: Value = http
            .post(format!("{base}/session"))
            .json(&capabilities)
            .send()
            .await
            .expect("new session")
            .json()
            .await
            .expect("session JSON");
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_owned();
        Browser {
            http,
            session: format!("{base}/session/{session}"),
            _driver: driver,
            _profile: TempDir(profile),
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        self.try_call(method, path, body)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A WebDriver command; its error (a stale element while a page
    /// reloads, say) as text.
    async fn try_call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        let mut request = self.http.request(method, format!("{}{path}", self.session));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request
            .send()
            .await
            .expect("webdriver call")
            .json()
            .await
            .expect("webdriver JSON");
        match answer["value"]["error"].as_str() {
            Some(error) => Err(format!(
                "webdriver {path}: {error}: {}",
                answer["value"]["message"]
            )),
            None => Ok(answer["value"].clone()),
        }
    }

    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
    }

    pub async fn url(&self) -> String {
        self.call(reqwest::Method::GET, "/url", None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    async fn element(&self, css: &str) -> String {
        let found = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_owned()
    }

    /// How many elements match `css`.
    pub async fn count(&self, css: &str) -> usize {
        self.call(
            reqwest::Method::POST,
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        )
        .await
        .as_array()
        .map_or(0, Vec::len)
    }

    /// The rendered text of the first element matching `css`.
    pub async fn text(&self, css: &str) -> String {
        let id = self.element(css).await;
        self.call(reqwest::Method::GET, &format!("/element/{id}/text"), None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub async fn click(&self, css: &str) {
        let id = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            Some(json!({})),
        )
        .await;
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        )
        .await;
    }

    /// Waits (up to 20 s, reloading nothing: the page refreshes itself) until
    /// the text of `css` contains `wanted`; returns it.
    pub async fn wait_for_text(&self, css: &str, wanted: &str) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let mut last = String::from("(no such element)");
        loop {
            let found = self
                .try_call(
                    reqwest::Method::POST,
                    "/elements",
                    Some(json!({"using": "css selector", "value": css})),
                )
                .await
                .unwrap_or_default();
            // The page may reload between finding and reading: try again.
            if let Some(id) = found[0][ELEMENT].as_str()
                && let Ok(text) = self
                    .try_call(reqwest::Method::GET, &format!("/element/{id}/text"), None)
                    .await
                && let Some(text) = text.as_str()
            {
                if text.contains(wanted) {
                    return text.to_owned();
                }
                text.clone_into(&mut last);
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{css} never showed {wanted:?}; it shows {last:?} at {}, in {:?}",
                self.url().await,
                self.text("body").await
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A PNG of the window, written to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let data = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap_or_default())
            .expect("screenshot base64");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot dir");
        }
        std::fs::write(path, png).expect("write screenshot");
    }

    /// Ends the session (Chromium exits with it), then the driver.
    pub async fn quit(self) {
        let _ = self.http.delete(&self.session).send().await;
    }
}
