//! A test DNS server for Sluice's resolver to ask: UDP on 127.0.0.1, a free
//! port, answered from a background thread. It records every question it
//! is asked, so a test can tell which names left Sluice.
//!
//! Every A question is answered 127.0.0.1 (TTL 60), every other type with
//! no records (NOERROR), except names under a zone given to
//! [`TestDns::nxdomain`], which are answered NXDOMAIN. [`TestDns::fail`]
//! turns it into a failing server (SERVFAIL to everything, or silence).

use std::{
    net::{Ipv4Addr, SocketAddr, UdpSocket},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU8, Ordering},
    },
};

const HEADER_LEN: usize = 12;
const TYPE_A: u16 = 1;
const CLASS_IN: u16 = 1;
const RCODE_SERVFAIL: u16 = 2;
const RCODE_NXDOMAIN: u16 = 3;
/// QR (a response) and RA (recursion available).
const RESPONSE_FLAGS: u16 = 0x8080;
/// The query's opcode and RD bits, echoed in the response.
const ECHOED_FLAGS: u16 = 0x7900;
/// A compression pointer to the question's name, right after the header.
const NAME_AT_QUESTION: [u8; 2] = [0xc0, 0x0c];
const TTL: u32 = 60;

/// One question as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// Lower case, no trailing dot.
    pub name: String,
    pub qtype: u16,
}

#[derive(Default)]
struct State {
    asked: Mutex<Vec<Asked>>,
    /// Zones (lower case, no trailing dot) answered NXDOMAIN.
    nxdomain: Mutex<Vec<String>>,
    /// A [`Failure`] as its discriminant; 0 answers.
    failing: AtomicU8,
}

/// How a failing server fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Failure {
    /// Answers again.
    None = 0,
    /// SERVFAIL to every question.
    Servfail = 1,
    /// No answer at all: the asker times out.
    Silent = 2,
}

pub struct TestDns {
    addr: SocketAddr,
    state: Arc<State>,
    stop: Arc<AtomicBool>,
}

impl TestDns {
    /// On 127.0.0.1, a free port.
    pub fn start() -> TestDns {
        let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the test DNS server");
        let addr = socket.local_addr().expect("local_addr");
        let state = Arc::new(State::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (state2, stop2) = (state.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while !stop2.load(Ordering::SeqCst) {
                let Ok((len, peer)) = socket.recv_from(&mut buf) else {
                    continue;
                };
                let Some(reply) = answer(&buf[..len], &state2) else {
                    continue;
                };
                let _ = socket.send_to(&reply, peer);
            }
        });
        TestDns { addr, state, stop }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answers names in `zone` (and `zone` itself) NXDOMAIN from now on.
    pub fn nxdomain(&self, zone: &str) -> &TestDns {
        let zone = zone.trim_end_matches('.').to_ascii_lowercase();
        self.state.nxdomain.lock().expect("zones").push(zone);
        self
    }

    /// Fails as `failure` says from now on (or answers again).
    pub fn fail(&self, failure: Failure) {
        self.state.failing.store(failure as u8, Ordering::SeqCst);
    }

    /// Every question asked so far, in order.
    pub fn asked(&self) -> Vec<Asked> {
        self.state.asked.lock().expect("asked").clone()
    }

    /// The questions asked for `zone` or any name below it.
    pub fn asked_under(&self, zone: &str) -> Vec<Asked> {
        let zone = zone.trim_end_matches('.').to_ascii_lowercase();
        self.asked()
            .into_iter()
            .filter(|asked| in_zone(&asked.name, &zone))
            .collect()
    }
}

impl Drop for TestDns {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the receive loop so the thread (and the port) goes away.
        if let Ok(waker) = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)) {
            let _ = waker.send_to(&[], self.addr);
        }
    }
}

fn in_zone(name: &str, zone: &str) -> bool {
    name == zone || name.ends_with(&format!(".{zone}"))
}

/// The reply to one datagram, recording its question; `None` for what is
/// not a query with one readable question.
fn answer(query: &[u8], state: &State) -> Option<Vec<u8>> {
    let header = query.get(..HEADER_LEN)?;
    let flags = u16::from_be_bytes([header[2], header[3]]);
    let qdcount = u16::from_be_bytes([header[4], header[5]]);
    if flags & 0x8000 != 0 || qdcount != 1 {
        return None;
    }
    let (name, end) = read_name(query, HEADER_LEN)?;
    let fixed = query.get(end..end + 4)?;
    let qtype = u16::from_be_bytes([fixed[0], fixed[1]]);
    let qclass = u16::from_be_bytes([fixed[2], fixed[3]]);
    let question = query.get(HEADER_LEN..end + 4)?;
    state.asked.lock().expect("asked").push(Asked {
        name: name.clone(),
        qtype,
    });

    let failing = state.failing.load(Ordering::SeqCst);
    if failing == Failure::Silent as u8 {
        return None;
    }
    let servfail = failing == Failure::Servfail as u8;
    let nxdomain = !servfail
        && state
            .nxdomain
            .lock()
            .expect("zones")
            .iter()
            .any(|zone| in_zone(&name, zone));
    let with_address = !servfail && !nxdomain && qtype == TYPE_A && qclass == CLASS_IN;
    let rcode = match (servfail, nxdomain) {
        (true, _) => RCODE_SERVFAIL,
        (_, true) => RCODE_NXDOMAIN,
        _ => 0,
    };
    let mut reply = Vec::with_capacity(query.len() + 16);
    reply.extend_from_slice(&header[..2]);
    reply.extend_from_slice(&(RESPONSE_FLAGS | (flags & ECHOED_FLAGS) | rcode).to_be_bytes());
    reply.extend_from_slice(&1u16.to_be_bytes());
    reply.extend_from_slice(&u16::from(with_address).to_be_bytes());
    reply.extend_from_slice(&[0, 0, 0, 0]);
    reply.extend_from_slice(question);
    if with_address {
        reply.extend_from_slice(&NAME_AT_QUESTION);
        reply.extend_from_slice(&TYPE_A.to_be_bytes());
        reply.extend_from_slice(&CLASS_IN.to_be_bytes());
        reply.extend_from_slice(&TTL.to_be_bytes());
        reply.extend_from_slice(&4u16.to_be_bytes());
        reply.extend_from_slice(&Ipv4Addr::LOCALHOST.octets());
    }
    Some(reply)
}

/// An uncompressed name at `at`: lower case, no trailing dot, and where the
/// question's fixed part starts.
fn read_name(message: &[u8], mut at: usize) -> Option<(String, usize)> {
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*message.get(at)?);
        at += 1;
        if len == 0 {
            return Some((labels.join("."), at));
        }
        // A pointer, or a label longer than DNS allows: not a question
        // Sluice would send.
        if len > 63 {
            return None;
        }
        let label = message.get(at..at + len)?;
        labels.push(String::from_utf8_lossy(label).to_ascii_lowercase());
        at += len;
    }
}
