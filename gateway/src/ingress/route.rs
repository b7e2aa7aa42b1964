//! Which publication a viewer's request is for: `NAME.<apps domain>` (one
//! origin per app, the default) or `<apps domain>/NAME/…` (one origin for
//! all, `route_by: path`), and the path the app is asked for. Pure.

use serde::Deserialize;

/// How publications are told apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteBy {
    /// `https://NAME.<apps domain>/`: each app its own origin, so one
    /// app's scripts cannot reach another's pages or session cookie.
    #[default]
    Host,
    /// `https://<apps domain>/NAME/`: one certificate name and one origin
    /// for every app; the prefix is removed toward the app.
    Path,
}

/// A request's publication and the path and query the app is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub name: String,
    pub path: String,
}

/// Why a request names no publication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// 404: the host is not the apps domain or one label below it.
    OtherHost,
    /// 404: the host or path holds no valid publication name.
    NoName,
    /// 308 to the same path with a `/`: `/NAME` in path routing, so the
    /// app's relative links resolve under its prefix.
    AddSlash(String),
}

impl Miss {
    pub fn reason(&self) -> &'static str {
        match self {
            Miss::OtherHost => "unknown_host",
            Miss::NoName => "no_app_name",
            Miss::AddSlash(_) => "add_slash",
        }
    }
}

/// A publication name: one DNS label, lower case.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The host of a `Host` header or `:authority`, lower case, without its
/// port or a final dot.
fn host_of(authority: &str) -> String {
    let host = if authority.starts_with('[') {
        authority.split_inclusive(']').next().unwrap_or(authority)
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// The publication `authority` and `path_and_query` name under
/// `apps_domain` (lower case, no final dot).
pub fn route(
    by: RouteBy,
    apps_domain: &str,
    authority: &str,
    path_and_query: &str,
) -> Result<Route, Miss> {
    let host = host_of(authority);
    match by {
        RouteBy::Host => {
            let name = host
                .strip_suffix(apps_domain)
                .and_then(|n| n.strip_suffix('.'))
                .ok_or(Miss::OtherHost)?;
            if !valid_name(name) {
                return Err(Miss::NoName);
            }
            Ok(Route {
                name: name.to_owned(),
                path: path_and_query.to_owned(),
            })
        }
        RouteBy::Path => {
            if host != apps_domain {
                return Err(Miss::OtherHost);
            }
            let (path, query) = match path_and_query.split_once('?') {
                Some((p, q)) => (p, Some(q)),
                None => (path_and_query, None),
            };
            let rest = path.strip_prefix('/').ok_or(Miss::NoName)?;
            let (name, tail) = match rest.split_once('/') {
                Some((name, tail)) => (name, Some(tail)),
                None => (rest, None),
            };
            if !valid_name(name) {
                return Err(Miss::NoName);
            }
            let Some(tail) = tail else {
                let q = query.map(|q| format!("?{q}")).unwrap_or_default();
                return Err(Miss::AddSlash(format!("/{name}/{q}")));
            };
            let q = query.map(|q| format!("?{q}")).unwrap_or_default();
            Ok(Route {
                name: name.to_owned(),
                path: format!("/{tail}{q}"),
            })
        }
    }
}

/// The URL a publication is reached at, for `sluice app ls`.
pub fn url_of(by: RouteBy, apps_domain: &str, port: Option<u16>, name: &str) -> String {
    let port = port.map(|p| format!(":{p}")).unwrap_or_default();
    match by {
        RouteBy::Host => format!("https://{name}.{apps_domain}{port}/"),
        RouteBy::Path => format!("https://{apps_domain}{port}/{name}/"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_paths_name_publications() {
        let ok = |name: &str, path: &str| {
            Ok(Route {
                name: name.into(),
                path: path.into(),
            })
        };
        let table: Vec<(RouteBy, &str, &str, Result<Route, Miss>)> = vec![
            (RouteBy::Host, "demo.apps.example", "/", ok("demo", "/")),
            (
                RouteBy::Host,
                "Demo.Apps.Example.:8443",
                "/a?b=1",
                ok("demo", "/a?b=1"),
            ),
            (RouteBy::Host, "apps.example", "/", Err(Miss::OtherHost)),
            (RouteBy::Host, "x.demo.apps.example", "/", Err(Miss::NoName)),
            (RouteBy::Host, "demoapps.example", "/", Err(Miss::OtherHost)),
            (
                RouteBy::Host,
                "demo.other.example",
                "/",
                Err(Miss::OtherHost),
            ),
            (RouteBy::Host, "-x.apps.example", "/", Err(Miss::NoName)),
            (RouteBy::Host, "a_b.apps.example", "/", Err(Miss::NoName)),
            (RouteBy::Host, "[::1]:443", "/", Err(Miss::OtherHost)),
            (
                RouteBy::Path,
                "apps.example",
                "/demo/x/y?q=1",
                ok("demo", "/x/y?q=1"),
            ),
            (RouteBy::Path, "apps.example:443", "/demo/", ok("demo", "/")),
            (
                RouteBy::Path,
                "apps.example",
                "/demo",
                Err(Miss::AddSlash("/demo/".into())),
            ),
            (
                RouteBy::Path,
                "apps.example",
                "/demo?t=1",
                Err(Miss::AddSlash("/demo/?t=1".into())),
            ),
            (RouteBy::Path, "apps.example", "/", Err(Miss::NoName)),
            (RouteBy::Path, "apps.example", "/Demo/", Err(Miss::NoName)),
            (
                RouteBy::Path,
                "demo.apps.example",
                "/demo/",
                Err(Miss::OtherHost),
            ),
            (RouteBy::Path, "apps.example", "*", Err(Miss::NoName)),
        ];
        for (by, authority, path, want) in table {
            assert_eq!(
                route(by, "apps.example", authority, path),
                want,
                "{by:?} {authority} {path}"
            );
        }
    }

    #[test]
    fn names_are_dns_labels() {
        for good in ["a", "demo-1", "0", &"a".repeat(63)] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "A", "a.b", "a_b", &"a".repeat(64)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn urls_follow_the_routing() {
        assert_eq!(
            url_of(RouteBy::Host, "apps.example", None, "demo"),
            "https://demo.apps.example/"
        );
        assert_eq!(
            url_of(RouteBy::Path, "apps.example", Some(8443), "demo"),
            "https://apps.example:8443/demo/"
        );
    }
}
