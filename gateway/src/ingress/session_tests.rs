use super::*;

fn viewer(exp: u64) -> Viewer {
    Viewer {
        sub: "ann".into(),
        org: None,
        exp,
    }
}

#[test]
fn url_tokens_are_taken_out_of_the_url() {
    type Want = Result<Option<(&'static str, &'static str)>, ()>;
    let table: Vec<(&str, Want)> = vec![
        ("/", Ok(None)),
        ("/a?b=1", Ok(None)),
        ("/a?sluice_token=x.y.z", Ok(Some(("x.y.z", "/a")))),
        (
            "/a?b=1&sluice_token=x.y.z&c=2",
            Ok(Some(("x.y.z", "/a?b=1&c=2"))),
        ),
        ("/?sluice_token=a-b_c.d", Ok(Some(("a-b_c.d", "/")))),
        ("/?sluice_tokens=x", Ok(None)),
        ("/?sluice_token=", Err(())),
        ("/?sluice_token", Err(())),
        ("/?sluice_token=a%2Eb", Err(())),
        ("/?sluice_token=a&sluice_token=b", Err(())),
    ];
    for (pq, want) in table {
        let got = query_token(pq);
        let got = got
            .as_ref()
            .map(|o| o.as_ref().map(|(t, c)| (t.as_str(), c.as_str())))
            .map_err(|&()| ());
        assert_eq!(got, want, "{pq}");
    }
}

#[test]
fn cookies_and_bearers_are_found() {
    let mut h = HeaderMap::new();
    h.append(
        header::COOKIE,
        HeaderValue::from_static("a=1; __Host-sluice-session=abc"),
    );
    h.append(header::COOKIE, HeaderValue::from_static("b=2"));
    h.insert(
        header::AUTHORIZATION,
        HeaderValue::from_static("bearer t.o.k"),
    );
    assert_eq!(cookie(&h, "__Host-sluice-session"), Some("abc"));
    assert_eq!(cookie(&h, "b"), Some("2"));
    assert_eq!(cookie(&h, "c"), None);
    assert_eq!(bearer(&h), Some("t.o.k"));
    h.insert(
        header::AUTHORIZATION,
        HeaderValue::from_static("Basic eA=="),
    );
    assert_eq!(bearer(&h), None);
}

#[test]
fn a_url_token_opens_one_session_once() {
    let sessions = Sessions::default();
    let id = sessions
        .exchange("t1", viewer(100), "demo", 10)
        .expect("first");
    assert_eq!(sessions.get(&id, "demo", 50), Some(viewer(100)));
    assert_eq!(sessions.get(&id, "other", 50), None, "bound to its app");
    assert_eq!(
        sessions.exchange("t1", viewer(100), "demo", 11),
        Err(ExchangeError::Reused)
    );
    assert_eq!(sessions.get(&id, "demo", 100), None, "ends with its token");
    assert_eq!(sessions.get("forged", "demo", 50), None);
    let again = sessions
        .exchange("t2", viewer(100), "demo", 10)
        .expect("new token");
    sessions.forget_app("demo");
    assert_eq!(sessions.get(&again, "demo", 50), None);
}

#[test]
fn cookies_are_host_only_http_only_and_secure() {
    assert_eq!(cookie_name(false, "demo"), "__Host-sluice-session");
    assert_eq!(cookie_name(true, "demo"), "__Host-sluice-session-demo");
    assert_eq!(
        set_cookie("__Host-sluice-session", "id", 60, SameSite::Lax),
        "__Host-sluice-session=id; Path=/; Max-Age=60; HttpOnly; Secure; SameSite=Lax"
    );
    assert!(
        set_cookie("n", "id", 60, SameSite::None)
            .to_str()
            .expect("ascii")
            .ends_with("SameSite=None; Partitioned")
    );
}
