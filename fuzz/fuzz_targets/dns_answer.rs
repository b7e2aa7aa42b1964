//! DNS message handling (`dns::answer`): any datagram, answered from a
//! static resolver (no network) through a gate that holds each question to
//! a tunnelling guard (`dns_guard`). Never panics; sends nothing for what
//! has no header or is a response; anything it does send parses as a DNS
//! response with the query's id, and fits the 512-byte UDP limit unless
//! the query advertised a larger EDNS payload (never past 4096).
#![no_main]

use std::{
    collections::BTreeMap,
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
    sync::Mutex,
    time::Instant,
};

use hickory_proto::{
    op::{Message, MessageType, ResponseCode},
    rr::RecordType,
};
use libfuzzer_sys::fuzz_target;
use sluice::{
    dns::{Admission, Gate, answer},
    dns_guard::{Guard, Limits, Verdict},
    resolve::Resolver,
};

struct Guarded(Mutex<Guard>);

const LIMITS: Limits = Limits {
    max_queries_per_second: 1_000_000,
    max_label_length: 63,
    max_name_length: 253,
    max_unique_subdomains_per_minute: 64,
};

impl Gate for Guarded {
    fn admit(&self, name: &str, qtype: RecordType) -> Admission {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match guard.check(
            Instant::now(),
            name,
            u16::from(qtype),
            &LIMITS,
            &[10, 16, 255],
        ) {
            Verdict::Refuse(reason) => Admission::Refuse(ResponseCode::Refused, reason.as_str()),
            Verdict::Pass if name.starts_with("f") => Admission::ResolveFiltered,
            Verdict::Pass => Admission::Resolve,
        }
    }
    fn keep(&self, ip: IpAddr) -> bool {
        ip.is_ipv4()
    }
}

thread_local! {
    static WORLD: (tokio::runtime::Runtime, Resolver, Guarded) = {
        let mut hosts = BTreeMap::new();
        let v4 = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
        let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
        for name in ["example.com", "f.example.com", "a.b", "x"] {
            hosts.insert(name.to_owned(), vec![v4, v6]);
        }
        hosts.insert("empty.example".to_owned(), Vec::new());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        (runtime, Resolver::static_only(&hosts), Guarded(Mutex::new(Guard::new())))
    };
}

fuzz_target!(|query: &[u8]| {
    WORLD.with(|(runtime, resolver, gate)| {
        let (reply, _label) = runtime.block_on(answer(query, resolver, gate));
        if query.len() < 12 || query[2] & 0x80 != 0 {
            assert!(reply.is_empty());
        }
        if reply.is_empty() {
            return;
        }
        let message = Message::from_vec(&reply).expect("a reply that parses");
        assert_eq!(message.message_type(), MessageType::Response);
        assert_eq!(message.id(), u16::from_be_bytes([query[0], query[1]]));
        assert!(reply.len() <= 4096, "{} bytes", reply.len());
        let edns = Message::from_vec(query)
            .ok()
            .and_then(|m| m.extensions().as_ref().map(|e| e.max_payload()));
        if edns.is_none_or(|size| size <= 512) {
            assert!(reply.len() <= 512, "{} bytes without EDNS", reply.len());
        }
    });
});
