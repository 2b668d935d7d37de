//! What keeps anyone but the operator's own browser, and any other site or
//! host name, from driving the console. The console acts with the operator's
//! own AWS credentials, so whoever could read its pages or post its forms
//! could read payloads and approve or reject held work in their name.
//!
//! First, every request must carry the session cookie (`HttpOnly`,
//! `SameSite=Strict`), which only a browser that opened the one-time login
//! link the console printed at start holds: another local process or OS user
//! who can reach 127.0.0.1 gets nothing (red team R1). The link works once.
//!
//! A cookie alone is not enough: a browser sends a host's cookies to every
//! port of that host (RFC 6265 §8.5), so any other listener on 127.0.0.1 the
//! operator's browser visits receives it. The session also rests on a
//! per-session secret in the path (`/s/<secret>/…`, where the login link
//! sends the browser), which a browser sends to the console's port only. Its
//! pages are served with `Referrer-Policy: no-referrer`, so no link or
//! request from them carries it elsewhere, and it is never logged.
//!
//! Then three checks, each enough alone against a cross-site form:
//! - the `Host` header names the console's own loopback address, so a DNS
//!   name rebound to 127.0.0.1 reaches nothing;
//! - a state-changing request carries an `Origin` that is the console's own
//!   (browsers send it on every cross-origin and every same-origin POST);
//! - and it carries the per-process token that only the console's own pages
//!   hold, compared in constant time.
//!
//! Another site may still link to a page (a top-level navigation, as if the
//! operator typed the address), but not load one inside its own: an image or
//! frame pointed at the console would make it read the tables and metrics
//! with the operator's credentials on every view of that site.

use subtle::ConstantTimeEq;

/// Why a request was refused, as the operator reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Host,
    Origin,
    Token,
    Embedded,
    /// No session cookie, or a wrong one.
    Session,
    /// A login link already used, or never printed.
    Login,
    /// Not under the session's secret path.
    Path,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::Host => {
                "refused: the console answers only as 127.0.0.1 or localhost on its own port"
            }
            Refusal::Origin => {
                "refused: a decision must come from the console's own page (cross-site request)"
            }
            Refusal::Token => {
                "refused: the form's console token is missing or stale; reload the page and try again"
            }
            Refusal::Embedded => {
                "refused: another site may link to the console, not load it inside its own page"
            }
            Refusal::Session => {
                "refused: no console session; open the login link `hookgate console` printed at start"
            }
            Refusal::Login => {
                "refused: this login link was used already or is wrong; restart `hookgate console` for a new one"
            }
            Refusal::Path => {
                "refused: not a page of this console session; open the login link `hookgate console` printed at start"
            }
        })
    }
}

/// The session cookie's name.
pub const COOKIE: &str = "hookgate_console";

/// The console's address, its per-process form token, its session secret and
/// its one-time login secret.
pub struct Guard {
    port: u16,
    token: String,
    session: String,
    /// The session's path secret: every page is under `/s/<path>/`.
    path: String,
    login: std::sync::Mutex<Option<String>>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("port", &self.port)
            .field("token", &"<redacted>")
            .field("session", &"<redacted>")
            .field("path", &"<redacted>")
            .finish()
    }
}

impl Guard {
    pub fn new(port: u16, token: String, session: String, path: String, login: String) -> Self {
        Self {
            port,
            token,
            session,
            path,
            login: std::sync::Mutex::new(Some(login)),
        }
    }

    /// A guard with 32 random bytes from the OS for each secret.
    pub fn random(port: u16) -> std::io::Result<Self> {
        use std::io::Read;
        let secret = || -> std::io::Result<String> {
            let mut bytes = [0u8; 32];
            std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
            Ok(hex::encode(bytes))
        };
        Ok(Self::new(port, secret()?, secret()?, secret()?, secret()?))
    }

    /// The one-time link that gives a browser its session (printed at start).
    pub fn login_url(&self) -> Option<String> {
        let login = self
            .login
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        login
            .as_ref()
            .map(|key| format!("http://127.0.0.1:{}/login?key={key}", self.port))
    }

    /// The login link's `key`: the session cookie to set, once; the link is
    /// spent by its first use.
    pub fn take_login(&self, key: Option<&str>) -> Result<String, Refusal> {
        let mut login = self
            .login
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match (login.as_deref(), key) {
            (Some(expected), Some(key))
                if bool::from(key.as_bytes().ct_eq(expected.as_bytes())) =>
            {
                *login = None;
                Ok(format!(
                    "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
                    self.session
                ))
            }
            _ => Err(Refusal::Login),
        }
    }

    /// The session's pages' root: `/s/<secret>` (where the login link
    /// sends the browser; never logged).
    pub fn root(&self) -> String {
        format!("/s/{}", self.path)
    }

    /// The console's own path of a request's `path` (`/` when it is the
    /// root), when it is under the session's secret path.
    pub fn strip<'a>(&self, path: &'a str) -> Result<&'a str, Refusal> {
        let rest = path.strip_prefix("/s/").ok_or(Refusal::Path)?;
        let (secret, own) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
        if bool::from(secret.as_bytes().ct_eq(self.path.as_bytes())) {
            Ok(own)
        } else {
            Err(Refusal::Path)
        }
    }

    /// The request's `Cookie` headers carry the session.
    pub fn check_session<'a>(&self, cookies: impl Iterator<Item = &'a str>) -> Result<(), Refusal> {
        let found = cookies
            .flat_map(|header| header.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| {
                name == COOKIE && bool::from(value.as_bytes().ct_eq(self.session.as_bytes()))
            });
        if found { Ok(()) } else { Err(Refusal::Session) }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The token the console's forms carry.
    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn check_host(&self, host: Option<&str>) -> Result<(), Refusal> {
        let ok = host.is_some_and(|h| {
            h == format!("127.0.0.1:{}", self.port) || h == format!("localhost:{}", self.port)
        });
        if ok { Ok(()) } else { Err(Refusal::Host) }
    }

    /// A state-changing request's `Origin`: the console's own, exactly. A
    /// request without one is refused too: every browser sends it on a POST,
    /// and a script that is not a browser can send it.
    pub fn check_origin(&self, origin: Option<&str>) -> Result<(), Refusal> {
        let ok = origin.is_some_and(|o| {
            o == format!("http://127.0.0.1:{}", self.port)
                || o == format!("http://localhost:{}", self.port)
        });
        if ok { Ok(()) } else { Err(Refusal::Origin) }
    }

    /// A state-changing request's `Origin` as [`Self::check_origin`], or
    /// `null` from the console's own page: under `Referrer-Policy:
    /// no-referrer` a browser sends `Origin: null` on a same-origin form
    /// post, and says it is same-origin in `Sec-Fetch-Site` (which no page
    /// can set).
    pub fn check_post_origin(
        &self,
        origin: Option<&str>,
        site: Option<&str>,
    ) -> Result<(), Refusal> {
        match (origin, site) {
            (Some("null"), Some("same-origin")) => Ok(()),
            _ => self.check_origin(origin),
        }
    }

    /// A browser's fetch metadata (`Sec-Fetch-Site`, `-Mode`, `-Dest`): a
    /// request another site started must be a top-level navigation. Without
    /// the headers (not a browser, or an old one) this check passes; the
    /// others still apply.
    pub fn check_fetch(
        &self,
        site: Option<&str>,
        mode: Option<&str>,
        dest: Option<&str>,
    ) -> Result<(), Refusal> {
        match site {
            None | Some("none" | "same-origin") => Ok(()),
            Some(_) if mode == Some("navigate") && dest == Some("document") => Ok(()),
            Some(_) => Err(Refusal::Embedded),
        }
    }

    pub fn check_token(&self, sent: Option<&str>) -> Result<(), Refusal> {
        match sent {
            Some(sent) if bool::from(sent.as_bytes().ct_eq(self.token.as_bytes())) => Ok(()),
            _ => Err(Refusal::Token),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::new(
            8790,
            "t0ken".into(),
            "s3ssion".into(),
            "p4th".into(),
            "l0gin".into(),
        )
    }

    #[test]
    fn the_login_link_gives_the_session_once() {
        let g = guard();
        assert_eq!(
            g.login_url().as_deref(),
            Some("http://127.0.0.1:8790/login?key=l0gin")
        );
        assert_eq!(g.take_login(Some("guess")), Err(Refusal::Login));
        assert_eq!(g.take_login(None), Err(Refusal::Login));
        assert_eq!(
            g.take_login(Some("l0gin")).as_deref(),
            Ok("hookgate_console=s3ssion; HttpOnly; SameSite=Strict; Path=/")
        );
        assert_eq!(g.take_login(Some("l0gin")), Err(Refusal::Login), "spent");
        assert_eq!(g.login_url(), None);
    }

    #[test]
    fn every_request_needs_the_session_cookie() {
        let g = guard();
        assert_eq!(
            g.check_session(["hookgate_console=s3ssion"].into_iter()),
            Ok(())
        );
        assert_eq!(
            g.check_session(["a=b; hookgate_console=s3ssion; c=d"].into_iter()),
            Ok(())
        );
        for cookies in [
            vec![],
            vec!["hookgate_console=guess"],
            vec!["other=s3ssion"],
            vec!["hookgate_console=s3ssion2"],
        ] {
            assert_eq!(
                g.check_session(cookies.clone().into_iter()),
                Err(Refusal::Session),
                "{cookies:?}"
            );
        }
        assert!(!format!("{g:?}").contains("s3ssion"));
    }

    #[test]
    fn every_page_is_under_the_session_s_secret_path() {
        let g = guard();
        assert_eq!(g.root(), "/s/p4th");
        assert_eq!(g.strip("/s/p4th"), Ok("/"));
        assert_eq!(g.strip("/s/p4th/"), Ok("/"));
        assert_eq!(g.strip("/s/p4th/triage/t1"), Ok("/triage/t1"));
        for path in [
            "/",
            "/triage",
            "/s/",
            "/s/p4t",
            "/s/p4th2/triage",
            "/s/P4TH/",
            "/p4th/",
        ] {
            assert_eq!(g.strip(path), Err(Refusal::Path), "{path}");
        }
        assert!(!format!("{g:?}").contains("p4th"));
    }

    #[test]
    fn a_null_origin_is_taken_only_from_the_own_page() {
        let g = guard();
        assert_eq!(
            g.check_post_origin(Some("null"), Some("same-origin")),
            Ok(())
        );
        assert_eq!(
            g.check_post_origin(Some("http://127.0.0.1:8790"), None),
            Ok(())
        );
        for site in [None, Some("same-site"), Some("cross-site"), Some("none")] {
            assert_eq!(
                g.check_post_origin(Some("null"), site),
                Err(Refusal::Origin),
                "{site:?}"
            );
        }
    }

    #[test]
    fn only_the_loopback_names_on_the_own_port_are_served() {
        let g = guard();
        assert_eq!(g.check_host(Some("127.0.0.1:8790")), Ok(()));
        assert_eq!(g.check_host(Some("localhost:8790")), Ok(()));
        for host in [
            None,
            Some("127.0.0.1"),
            Some("127.0.0.1:8791"),
            Some("evil.example:8790"),
            Some("localhost.evil.example:8790"),
            Some("[::1]:8790"),
        ] {
            assert_eq!(g.check_host(host), Err(Refusal::Host), "{host:?}");
        }
    }

    #[test]
    fn only_the_own_origin_may_change_state() {
        let g = guard();
        assert_eq!(g.check_origin(Some("http://127.0.0.1:8790")), Ok(()));
        assert_eq!(g.check_origin(Some("http://localhost:8790")), Ok(()));
        for origin in [
            None,
            Some("null"),
            Some("http://127.0.0.1:9999"),
            Some("https://127.0.0.1:8790"),
            Some("http://evil.example"),
        ] {
            assert_eq!(g.check_origin(origin), Err(Refusal::Origin), "{origin:?}");
        }
    }

    #[test]
    fn another_site_may_link_but_not_embed() {
        let g = guard();
        assert_eq!(g.check_fetch(None, None, None), Ok(()));
        assert_eq!(
            g.check_fetch(Some("none"), Some("navigate"), Some("document")),
            Ok(())
        );
        assert_eq!(
            g.check_fetch(Some("same-origin"), Some("no-cors"), Some("style")),
            Ok(())
        );
        assert_eq!(
            g.check_fetch(Some("cross-site"), Some("navigate"), Some("document")),
            Ok(())
        );
        for (mode, dest) in [
            ("no-cors", "image"),
            ("navigate", "iframe"),
            ("cors", "empty"),
        ] {
            for site in ["cross-site", "same-site"] {
                assert_eq!(
                    g.check_fetch(Some(site), Some(mode), Some(dest)),
                    Err(Refusal::Embedded),
                    "{site} {mode} {dest}"
                );
            }
        }
    }

    #[test]
    fn the_token_must_match_exactly_and_never_shows_in_debug() {
        let g = guard();
        assert_eq!(g.check_token(Some("t0ken")), Ok(()));
        for sent in [None, Some(""), Some("t0ke"), Some("t0ken0"), Some("T0KEN")] {
            assert_eq!(g.check_token(sent), Err(Refusal::Token), "{sent:?}");
        }
        assert!(!format!("{g:?}").contains("t0ken"));
        let random = Guard::random(1).unwrap();
        assert_eq!(random.token().len(), 64);
        assert_ne!(random.token(), Guard::random(1).unwrap().token());
    }
}
