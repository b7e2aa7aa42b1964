//! The JSON reader (`sluice_scan`'s tape): on any bytes, the block decoder
//! (AVX-512 where the CPU has it) against the escape-by-escape one: the
//! same verdict as serde_json, the same laid-out text and the same map from
//! each decoded byte back to the body (`sluice_scan::fuzzing::json_paths`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    if let Err(why) = sluice_scan::fuzzing::json_paths(body) {
        panic!("the JSON readers disagree: {why}");
    }
});
