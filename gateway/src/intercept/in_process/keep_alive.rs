//! Kept-alive HTTP/1 connections, parked between their requests
//! (`intercept::serve`): every request is answered whole, whether it comes
//! after a pause, pipelined behind another, split across the park or with
//! a body; and a parked connection still ends when hyper would have ended
//! an idle one (the header read timeout, the idle timeout, a drain, the
//! client's end).

use std::time::{Duration, Instant};

use super::*;

/// How long a test waits for what should happen at once.
const PATIENCE: Duration = Duration::from_secs(10);

/// `CONFIG` with `limits` (YAML flow mapping) added.
fn with_limits(limits: &str) -> String {
    format!("{CONFIG}limits: {limits}\n")
}

async fn harness(config: &str) -> Harness {
    let (upstream, seen) = upstream(echo()).await;
    Harness::build(config, NETWORK, &BTreeMap::new(), upstream, seen)
}

/// Waits until `parked` connections are parked.
async fn until_parked(h: &Harness, parked: i64) {
    let deadline = Instant::now() + PATIENCE;
    while h.metrics.parked_connections.get() != parked {
        assert!(
            Instant::now() < deadline,
            "{} parked, not {parked}",
            h.metrics.parked_connections.get()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Reads one whole HTTP/1 answer with a `content-length` off `stream`;
/// returns its head and body.
async fn read_answer(stream: &mut TcpStream) -> (String, String) {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut byte))
            .await
            .expect("an answer in time")
            .expect("read");
        assert_eq!(n, 1, "closed mid-head: {:?}", String::from_utf8_lossy(&got));
        got.push(byte[0]);
    }
    let head = String::from_utf8(got).expect("utf-8 head");
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().to_owned())
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no content-length: {head}"));
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.expect("body");
    (head, String::from_utf8(body).expect("utf-8 body"))
}

/// Whether the interceptor has closed `stream` (its end, or a reset).
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(within, stream.read(&mut byte)).await,
        Ok(Ok(0) | Err(_))
    )
}

fn post(path: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {HOST}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Requests after pauses, one with a body, go through one connection,
/// parked between them; the client's end closes the parked connection.
#[tokio::test]
async fn requests_after_pauses_are_answered_and_the_connection_parks_between() {
    let h = harness(CONFIG).await;
    let mut stream = h.connect().await;
    for i in 0..3 {
        stream
            .write_all(post("/echo", &format!("body {i}")).as_bytes())
            .await
            .expect("write");
        let (head, body) = read_answer(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(body, format!("body {i}"));
        until_parked(&h, 1).await;
    }
    assert_eq!(h.seen().len(), 3);
    drop(stream);
    until_parked(&h, 0).await;
}

/// Requests written at once, and a head split across the park, are all
/// answered in order: no byte is lost to the park.
#[tokio::test]
async fn pipelined_and_split_requests_lose_no_byte() {
    let h = harness(CONFIG).await;
    let mut stream = h.connect().await;
    let three = [post("/a", "one"), post("/b", "two"), post("/c", "three")].concat();
    stream.write_all(three.as_bytes()).await.expect("write");
    for want in ["one", "two", "three"] {
        let (head, body) = read_answer(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(body, want);
    }
    until_parked(&h, 1).await;
    // Part of a head wakes the connection; the rest comes later.
    let next = post("/d", "four");
    let (first, rest) = next.split_at(10);
    stream.write_all(first.as_bytes()).await.expect("write");
    until_parked(&h, 0).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    stream.write_all(rest.as_bytes()).await.expect("write");
    let (head, body) = read_answer(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body, "four");
    let bodies: Vec<String> = h.seen().into_iter().map(|s| s.body).collect();
    assert_eq!(bodies, ["one", "two", "three", "four"]);
}

/// Parked, a connection still waits at most the header read timeout
/// for its next request head (counted from the last answer, not from
/// the first byte that woke it), as hyper's own timer would.
#[tokio::test]
async fn a_parked_connection_ends_at_the_header_read_timeout() {
    let h = harness(&with_limits("{header_read_timeout_ms: 2000}")).await;
    let mut stream = h.connect().await;
    stream
        .write_all(post("/a", "one").as_bytes())
        .await
        .expect("write");
    read_answer(&mut stream).await;
    let answered = Instant::now();
    until_parked(&h, 1).await;
    assert!(closed_within(&mut stream, PATIENCE).await, "still open");
    let waited = answered.elapsed();
    assert!(
        waited >= Duration::from_millis(1950),
        "closed after {waited:?}"
    );
    until_parked(&h, 0).await;

    // Woken by part of a head, the rest of the wait is all it has.
    let mut stream = h.connect().await;
    stream
        .write_all(post("/b", "two").as_bytes())
        .await
        .expect("write");
    read_answer(&mut stream).await;
    let answered = Instant::now();
    until_parked(&h, 1).await;
    // Parked (after `PARK_AFTER`), well before the head's deadline.
    tokio::time::sleep_until((answered + Duration::from_millis(1300)).into()).await;
    stream.write_all(b"GET / HT").await.expect("write");
    assert!(closed_within(&mut stream, PATIENCE).await, "still open");
    let waited = answered.elapsed();
    assert!(
        waited < Duration::from_millis(2800),
        "the head's wait started over: closed after {waited:?}"
    );
}

/// The idle timeout ends a parked connection too.
#[tokio::test]
async fn a_parked_connection_ends_at_the_idle_timeout() {
    let h = harness(&with_limits(
        // Longer than a connection waits settled before it parks.
        "{idle_timeout_ms: 1500, header_read_timeout_ms: 60000}",
    ))
    .await;
    let mut stream = h.connect().await;
    stream
        .write_all(post("/a", "one").as_bytes())
        .await
        .expect("write");
    read_answer(&mut stream).await;
    until_parked(&h, 1).await;
    assert!(closed_within(&mut stream, PATIENCE).await, "still open");
    until_parked(&h, 0).await;
}

/// A drain closes a parked connection at once (nothing is in flight).
#[tokio::test]
async fn a_drain_closes_a_parked_connection() {
    let h = harness(CONFIG).await;
    let mut stream = h.connect().await;
    stream
        .write_all(post("/a", "one").as_bytes())
        .await
        .expect("write");
    read_answer(&mut stream).await;
    until_parked(&h, 1).await;
    h.interceptor.drain.start();
    assert!(closed_within(&mut stream, PATIENCE).await, "still open");
    until_parked(&h, 0).await;
}
