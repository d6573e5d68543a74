//! Owns the choice of an HTTP proxy for a download: `http_proxy`/`HTTP_PROXY` for `http://`
//! URLs, `https_proxy`/`HTTPS_PROXY` for `https://` URLs (the lowercase spelling wins when
//! both are set), and `no_proxy`/`NO_PROXY` for the hosts that go direct. Every HTTP client
//! in stoat (image pulls, the recipe index) builds its agent here, so they agree.
//!
//! Only HTTP proxies are spoken (plain requests in absolute form, `https://` through
//! `CONNECT`); a proxy URL with another scheme is `invalid_spec`. Messages name a proxy by
//! its variable and `host:port`, never by its URL, which may carry a password.

use std::net::IpAddr;

use base64::Engine as _;

use crate::{Env, Error, Result};

/// The proxy settings read from the environment once.
#[derive(Debug, Clone, Default)]
pub struct ProxyEnv {
    http: Option<Setting>,
    https: Option<Setting>,
    bypass: Vec<Bypass>,
}

/// One proxy variable: its name (for messages) and its value.
#[derive(Debug, Clone)]
struct Setting {
    var: &'static str,
    value: String,
}

/// One `NO_PROXY` entry.
#[derive(Debug, Clone, PartialEq)]
enum Bypass {
    /// `*`: nothing goes through a proxy.
    All,
    /// A host name: itself and every name under it (a leading dot is ignored), on any port
    /// or on one.
    Domain { name: String, port: Option<u16> },
    /// An address or a network in CIDR form.
    Network { addr: IpAddr, prefix: u8 },
}

/// The proxy one request goes through.
#[derive(Debug, Clone)]
pub struct Route {
    /// Which variable chose it (`HTTPS_PROXY`, `http_proxy`...).
    pub var: &'static str,
    /// `host:port` of the proxy, for messages.
    pub address: String,
    proxy: ureq::Proxy,
    /// `Proxy-Authorization` for plain-HTTP requests (ureq sends it only on `CONNECT`).
    authorization: Option<String>,
}

impl ProxyEnv {
    /// Reads the proxy variables of `env`.
    pub fn from_env(env: &Env) -> ProxyEnv {
        let pick = |lower: &'static str, upper: &'static str| {
            [lower, upper].into_iter().find_map(|var| {
                env.get(var).map(|value| Setting {
                    var,
                    value: value.trim().to_owned(),
                })
            })
        };
        let bypass = env
            .get("no_proxy")
            .or_else(|| env.get("NO_PROXY"))
            .map(parse_no_proxy)
            .unwrap_or_default();
        ProxyEnv {
            http: pick("http_proxy", "HTTP_PROXY"),
            https: pick("https_proxy", "HTTPS_PROXY"),
            bypass,
        }
    }

    /// The proxy a request for `url` goes through; `None` when it goes direct.
    pub fn route(&self, url: &str) -> Result<Option<Route>> {
        let Some(target) = Target::parse(url) else {
            return Ok(None);
        };
        let setting = match target.scheme.as_str() {
            "http" => self.http.as_ref(),
            "https" => self.https.as_ref(),
            _ => None,
        };
        let Some(setting) = setting else {
            return Ok(None);
        };
        if self.bypass.iter().any(|rule| rule.matches(&target)) {
            return Ok(None);
        }
        Route::parse(setting).map(Some)
    }

    /// An agent builder for `url`, through its proxy when it has one, and that proxy.
    pub fn agent_for(&self, url: &str) -> Result<(ureq::AgentBuilder, Option<Route>)> {
        let route = self.route(url)?;
        let mut builder = ureq::AgentBuilder::new();
        if let Some(route) = &route {
            builder = builder.proxy(route.proxy.clone());
        }
        Ok((builder, route))
    }
}

impl Route {
    fn parse(setting: &Setting) -> Result<Route> {
        let bad = |why: &str| {
            Error::InvalidSpec(format!(
                "{} is not a usable proxy: {why} (expected http://[user:password@]host:port)",
                setting.var
            ))
        };
        let rest = match setting.value.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) => {
                return Err(bad(&format!(
                    "stoat speaks only to HTTP proxies, not {scheme}://"
                )))
            }
            None => setting.value.as_str(),
        };
        let authority = rest.split('/').next().unwrap_or("");
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((userinfo, hostport)) => (Some(userinfo), hostport),
            None => (None, authority),
        };
        let (host, port) = split_host_port(hostport).ok_or_else(|| bad("no host"))?;
        if host.is_empty() || host.contains(char::is_whitespace) {
            return Err(bad("no host"));
        }
        let port = port.unwrap_or(80);
        // ureq's own parser handles the same forms; its error carries no detail to keep.
        let normalised = match userinfo {
            Some(userinfo) => format!("http://{userinfo}@{host}:{port}"),
            None => format!("http://{host}:{port}"),
        };
        let proxy = ureq::Proxy::new(&normalised).map_err(|_| bad("unreadable"))?;
        let authorization = userinfo.filter(|u| u.contains(':')).map(|userinfo| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(userinfo)
            )
        });
        Ok(Route {
            var: setting.var,
            address: format!("{host}:{port}"),
            proxy,
            authorization,
        })
    }

    /// Adds what a plain-HTTP request through this proxy needs (its credentials).
    pub fn prepare(&self, request: ureq::Request, url: &str) -> ureq::Request {
        match (&self.authorization, url.starts_with("http://")) {
            (Some(value), true) => request.set("Proxy-Authorization", value),
            _ => request,
        }
    }

    /// " (through proxy host:port from VAR)", for a message about a failed request.
    pub fn describe(&self) -> String {
        format!(" (through the proxy {} from {})", self.address, self.var)
    }
}

/// What `NO_PROXY` is matched against.
struct Target {
    scheme: String,
    host: String,
    port: u16,
}

impl Target {
    fn parse(url: &str) -> Option<Target> {
        let (scheme, rest) = url.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        let authority = rest.split(['/', '?', '#']).next()?;
        let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let (host, port) = split_host_port(hostport)?;
        let default = if scheme == "https" { 443 } else { 80 };
        Some(Target {
            host: host.to_ascii_lowercase(),
            port: port.unwrap_or(default),
            scheme,
        })
    }
}

/// Splits `host`, `host:port`, `[v6]` or `[v6]:port`; the host comes back without brackets.
fn split_host_port(text: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => Some(port.parse().ok()?),
            None if after.is_empty() => None,
            None => return None,
        };
        return Some((host, port));
    }
    match text.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Some((host, Some(port.parse().ok()?))),
        // A bare IPv6 address has colons and no brackets: no port.
        Some(_) => Some((text, None)),
        None => Some((text, None)),
    }
}

/// Parses a `NO_PROXY` list: entries separated by commas (or blanks); empty ones skipped.
fn parse_no_proxy(text: &str) -> Vec<Bypass> {
    text.split([',', ' ', '\t'])
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .filter_map(Bypass::parse)
        .collect()
}

impl Bypass {
    fn parse(entry: &str) -> Option<Bypass> {
        if entry == "*" {
            return Some(Bypass::All);
        }
        if let Some((addr, prefix)) = entry.split_once('/') {
            let addr: IpAddr = addr.parse().ok()?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = prefix.parse().ok().filter(|p| *p <= max)?;
            return Some(Bypass::Network { addr, prefix });
        }
        let bare = entry.trim_start_matches("*.").trim_start_matches('.');
        let (host, port) = split_host_port(bare)?;
        if let Ok(addr) = host.parse::<IpAddr>() {
            if port.is_none() {
                let prefix = if addr.is_ipv4() { 32 } else { 128 };
                return Some(Bypass::Network { addr, prefix });
            }
        }
        Some(Bypass::Domain {
            name: host.to_ascii_lowercase(),
            port,
        })
    }

    fn matches(&self, target: &Target) -> bool {
        match self {
            Bypass::All => true,
            Bypass::Domain { name, port } => {
                port.is_none_or(|p| p == target.port)
                    && (target.host == *name || target.host.ends_with(&format!(".{name}")))
            }
            Bypass::Network { addr, prefix } => target
                .host
                .parse::<IpAddr>()
                .is_ok_and(|host| in_network(host, *addr, *prefix)),
        }
    }
}

fn in_network(host: IpAddr, net: IpAddr, prefix: u8) -> bool {
    let (host, net, width) = match (host, net) {
        (IpAddr::V4(h), IpAddr::V4(n)) => (u32::from(h) as u128, u32::from(n) as u128, 32),
        (IpAddr::V6(h), IpAddr::V6(n)) => (u128::from(h), u128::from(n), 128),
        _ => return false,
    };
    let shift = width - u32::from(prefix);
    shift >= width || (host >> shift) == (net >> shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routed(pairs: &[(&str, &str)], url: &str) -> Option<String> {
        let env = Env::from_pairs(pairs.iter().copied());
        ProxyEnv::from_env(&env)
            .route(url)
            .unwrap()
            .map(|r| format!("{} {}", r.var, r.address))
    }

    #[test]
    fn each_scheme_reads_its_own_variable_lowercase_first() {
        let vars = [
            ("HTTP_PROXY", "http://upper:3128"),
            ("http_proxy", "lower:8080"),
            ("HTTPS_PROXY", "http://secure:3129/"),
        ];
        assert_eq!(
            routed(&vars, "http://a.example/x").as_deref(),
            Some("http_proxy lower:8080")
        );
        assert_eq!(
            routed(&vars, "https://a.example/x").as_deref(),
            Some("HTTPS_PROXY secure:3129")
        );
        assert_eq!(routed(&[("HTTPS_PROXY", "p:1")], "http://a/"), None);
        assert_eq!(
            routed(&[("HTTP_PROXY", "http://p")], "http://a/").as_deref(),
            Some("HTTP_PROXY p:80")
        );
    }

    #[test]
    fn no_proxy_matches_domains_suffixes_ports_and_networks() {
        let no = |list: &str, url: &str| {
            routed(&[("HTTP_PROXY", "p:1"), ("NO_PROXY", list)], url).is_none()
        };
        assert!(no("*", "http://anything/"));
        assert!(no("example.com", "http://example.com/"));
        assert!(no("example.com", "http://cdn.Example.COM:8080/"));
        assert!(no(".example.com", "http://cdn.example.com/"));
        assert!(!no("example.com", "http://badexample.com/"));
        assert!(no("a, example.com:8080", "http://example.com:8080/"));
        assert!(!no("example.com:8080", "http://example.com/"));
        assert!(no("127.0.0.1", "http://127.0.0.1:4000/"));
        assert!(no("10.0.0.0/8", "http://10.2.3.4/"));
        assert!(!no("10.0.0.0/8", "http://11.2.3.4/"));
        assert!(no("::1", "http://[::1]:8000/"));
        assert!(!no("", "http://example.com/"));
        // The lowercase list wins.
        let both = [
            ("HTTP_PROXY", "p:1"),
            ("no_proxy", "a.test"),
            ("NO_PROXY", "b.test"),
        ];
        assert!(routed(&both, "http://a.test/").is_none());
        assert!(routed(&both, "http://b.test/").is_some());
    }

    #[test]
    fn a_proxy_of_another_scheme_is_invalid_spec_without_its_value() {
        let env = Env::from_pairs([("HTTPS_PROXY", "socks5://user:sekrit@p:1080")]);
        let err = ProxyEnv::from_env(&env)
            .route("https://a.example/")
            .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::InvalidSpec(_)), "{err:?}");
        assert!(
            text.contains("HTTPS_PROXY") && !text.contains("sekrit"),
            "{text}"
        );
    }

    #[test]
    fn credentials_become_a_header_for_plain_requests_only_and_stay_out_of_messages() {
        let env = Env::from_pairs([("HTTP_PROXY", "http://me:pw@p:3128")]);
        let route = ProxyEnv::from_env(&env)
            .route("http://a/")
            .unwrap()
            .unwrap();
        assert_eq!(route.authorization.as_deref(), Some("Basic bWU6cHc="));
        assert!(!route.describe().contains("pw"), "{}", route.describe());
    }
}
