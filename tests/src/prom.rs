//! Reading the daemon's metrics: a hand-written `GET /metrics` over a std
//! `TcpStream`, and a small parser for the Prometheus text format.

use std::{
    collections::BTreeMap,
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

/// `GET path` with `Connection: close`; returns the status code and body.
pub fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String), String> {
    let timeout = Duration::from_secs(5);
    let mut stream =
        TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect {addr}: {e}"))?;
    let _ = stream.set_read_timeout(Some(timeout));
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("send to {addr}: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("read from {addr}: {e}"))?;
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no HTTP head in {} bytes from {addr}", raw.len()))?;
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let body = &raw[head_end + 4..];
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line: {head}"))?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("truncated chunk size")?;
        let size_text = String::from_utf8_lossy(&body[..line_end]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|e| format!("bad chunk size {size_text:?}: {e}"))?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if body.len() < size + 2 {
            return Err("truncated chunk".into());
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
    }
}

/// One sample line: `name{labels} value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Parses the text exposition format (comments and blank lines skipped).
pub fn parse(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let (name, labels, rest) = parse_series(l)?;
            let value = parse_value(rest.split_whitespace().next()?)?;
            Some(Sample {
                name,
                labels,
                value,
            })
        })
        .collect()
}

fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

/// Splits `name{a="b",...} rest` into its parts.
fn parse_series(text: &str) -> Option<(String, BTreeMap<String, String>, &str)> {
    let text = text.trim_start();
    let name_end = text
        .find(|c: char| c == '{' || c.is_whitespace())
        .unwrap_or(text.len());
    let name = text[..name_end].to_owned();
    let mut labels = BTreeMap::new();
    let mut rest = &text[name_end..];
    if let Some(mut s) = rest.strip_prefix('{') {
        loop {
            s = s.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
            if let Some(after) = s.strip_prefix('}') {
                rest = after;
                break;
            }
            let eq = s.find('=')?;
            let key = s[..eq].trim().to_owned();
            s = s[eq + 1..].trim_start().strip_prefix('"')?;
            let mut value = String::new();
            let mut chars = s.char_indices();
            let end = loop {
                let (i, c) = chars.next()?;
                match c {
                    '"' => break i,
                    '\\' => {
                        let (_, escaped) = chars.next()?;
                        value.push(if escaped == 'n' { '\n' } else { escaped });
                    }
                    c => value.push(c),
                }
            };
            s = &s[end + 1..];
            labels.insert(key, value);
        }
    }
    Some((name, labels, rest))
}

/// The sum over every series of `selector`'s metric whose labels include all
/// of `selector`'s labels (`sluice_connections_total{verdict="deny"}` sums
/// every reason). `None` when no series matches.
pub fn select(samples: &[Sample], selector: &str) -> Option<f64> {
    let (name, wanted, _) =
        parse_series(selector).unwrap_or_else(|| panic!("bad metric selector {selector:?}"));
    let mut matched = samples
        .iter()
        .filter(|s| s.name == name && wanted.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
        .peekable();
    matched.peek()?;
    Some(matched.map(|s| s.value).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP sluice_connections_total x\n\
        # TYPE sluice_connections_total counter\n\
        sluice_connections_total{reason=\"policy\",verdict=\"deny\"} 2\n\
        sluice_connections_total{reason=\"sniff_timeout\",verdict=\"deny\"} 1\n\
        sluice_connections_total{reason=\"rule\",verdict=\"allow\"} 5\n\
        sluice_active_connections 0\n\
        odd{a=\"x,\\\"y\\\"}\"} 1.5e3\n";

    #[test]
    fn selects_by_label_subset() {
        let samples = parse(TEXT);
        assert_eq!(
            select(&samples, "sluice_connections_total{verdict=\"deny\"}"),
            Some(3.0)
        );
        assert_eq!(select(&samples, "sluice_connections_total"), Some(8.0));
        assert_eq!(select(&samples, "sluice_active_connections"), Some(0.0));
        assert_eq!(
            select(&samples, "sluice_connections_total{verdict=\"other\"}"),
            None
        );
        assert_eq!(select(&samples, "odd{a=\"x,\\\"y\\\"}\"}"), Some(1500.0));
    }
}
