//! A loopback HTTP server standing in for a control plane's approval
//! webhook: it records every POSTed JSON body and can fail the first few
//! deliveries (500) so retries show.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpListener},
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use serde_json::Value;

use crate::eventually;

pub struct WebhookReceiver {
    addr: SocketAddr,
    bodies: Arc<Mutex<Vec<Value>>>,
    attempts: Arc<AtomicUsize>,
}

impl WebhookReceiver {
    /// Answers 500 to the first `fail_first` deliveries, 200 afterwards.
    pub fn start(fail_first: usize) -> WebhookReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind webhook receiver");
        let addr = listener.local_addr().expect("local addr");
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let attempts = Arc::new(AtomicUsize::new(0));
        let (seen, tried) = (bodies.clone(), attempts.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (seen, tried) = (seen.clone(), tried.clone());
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    let mut reader = BufReader::new(&stream);
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let line = line.trim_end();
                        if line.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let attempt = tried.fetch_add(1, Ordering::SeqCst);
                    let status = if attempt < fail_first {
                        "500 Internal Server Error"
                    } else {
                        if let Ok(value) = serde_json::from_slice(&body) {
                            seen.lock().expect("lock").push(value);
                        }
                        "200 OK"
                    };
                    let mut stream = &stream;
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    );
                });
            }
        });
        WebhookReceiver {
            addr,
            bodies,
            attempts,
        }
    }

    /// The URL for the daemon config's `approvals.webhook.url`.
    pub fn url(&self) -> String {
        format!("http://{}/hooks/sluice", self.addr)
    }

    /// Cards accepted (answered 200) so far.
    pub fn cards(&self) -> Vec<Value> {
        self.bodies.lock().expect("lock").clone()
    }

    /// Deliveries tried, failed ones included.
    pub fn attempts(&self) -> usize {
        self.attempts.load(Ordering::SeqCst)
    }

    /// Waits for the `n`th accepted card; returns it.
    pub fn wait_card(&self, n: usize) -> Value {
        eventually(
            &format!("approval card #{n} at the webhook"),
            crate::WAIT,
            || {
                let cards = self.cards();
                cards
                    .get(n - 1)
                    .cloned()
                    .ok_or_else(|| format!("{} card(s): {cards:?}", cards.len()))
            },
        )
    }
}
