//! Differential checks for the fuzz targets (`fuzz/`, feature `fuzzing`):
//! each runs the SIMD kernels this CPU has and their scalar twins over one
//! input and says where they disagree. The crate's own differential tests
//! do the same over generated inputs; these let libFuzzer search for the
//! input that splits them. Nothing here is built without the feature.

use std::ops::Range;

use crate::engine::{Candidate, Engine, SEPARATOR};
use crate::json::tape::Tape;
use crate::{KindSet, segment};

#[cfg(target_arch = "x86_64")]
use crate::classes::{Avx2, Avx512, Vbmi};

/// The JSON reader with block decoding (AVX-512, where the CPU has it)
/// against the one that decodes escape by escape: the same verdict, the
/// same ASCII flag, and the same laid-out text, stretches and map back to
/// the body. Also that serde_json accepts exactly what the reader does
/// (after the byte-order mark the reader skips). `Err` says what differs.
pub fn json_paths(body: &[u8]) -> Result<(), String> {
    let chosen = Tape::parse(body);
    let scalar = Tape::parse_scalar(body);
    let unmarked = body.strip_prefix(crate::BOM).unwrap_or(body);
    // Into a `Value`: serde_json skips an ignored string's bytes without
    // checking their UTF-8, which the tape (and any server reading the
    // body into values) does not.
    let serde = serde_json::from_slice::<serde_json::Value>(unmarked).is_ok();
    let (chosen, scalar) = match (chosen, scalar) {
        (None, None) if !serde => return Ok(()),
        (Some(chosen), Some(scalar)) if serde => (chosen, scalar),
        (chosen, scalar) => {
            return Err(format!(
                "accepted: chosen {}, scalar {}, serde_json {serde}",
                chosen.is_some(),
                scalar.is_some()
            ));
        }
    };
    if chosen.is_ascii() != scalar.is_ascii() {
        return Err(format!(
            "is_ascii: chosen {}, scalar {}",
            chosen.is_ascii(),
            scalar.is_ascii()
        ));
    }
    match (chosen.laid_out(), scalar.laid_out()) {
        (None, None) => Ok(()),
        (Some(a), Some(b)) => {
            if a.text != b.text || a.stretches != b.stretches {
                return Err(format!(
                    "laid out: chosen {:?} {:?}, scalar {:?} {:?}",
                    String::from_utf8_lossy(a.text),
                    a.stretches,
                    String::from_utf8_lossy(b.text),
                    b.stretches
                ));
            }
            for d in 0..a.text.len() {
                let (x, y) = (
                    segment::span(a.map, d, d + 1),
                    segment::span(b.map, d, d + 1),
                );
                if x != y {
                    return Err(format!(
                        "byte {d} maps back to {x:?} (chosen), {y:?} (scalar)"
                    ));
                }
            }
            Ok(())
        }
        (a, b) => Err(format!(
            "laid out: chosen {}, scalar {}",
            a.is_some(),
            b.is_some()
        )),
    }
}

/// The PII engine's class scan (digit runs and `@` signs, with their
/// validators) by the baseline loop against every vector loop this CPU
/// runs, over `text` cut into stretches at each [`SEPARATOR`] byte, as a
/// laid-out JSON body is.
pub fn class_scans(text: &[u8]) -> Result<(), String> {
    let mut stretches: Vec<Range<usize>> = Vec::new();
    let mut start = 0;
    for (i, _) in text.iter().enumerate().filter(|(_, b)| **b == SEPARATOR) {
        stretches.push(start..i);
        start = i + 1;
    }
    stretches.push(start..text.len());
    let engine = Engine::new(KindSet::all()).map_err(|e| e.to_string())?;
    let run = |scan: &dyn Fn(&mut Vec<Candidate>)| {
        let mut out = Vec::new();
        scan(&mut out);
        out
    };
    let baseline =
        run(&|out| engine.scan_classes_with(crate::classes::Baseline, text, &stretches, out));
    let mut others = vec![(
        "chosen",
        run(&|out| engine.scan_classes(text, &stretches, out)),
    )];
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(avx2) = Avx2::detect() {
            let found = run(&|out| engine.scan_classes_avx2(avx2, text, &stretches, out));
            others.push(("avx2", found));
        }
        if let Some(avx512) = Avx512::detect() {
            let found = run(&|out| engine.scan_classes_avx512(avx512, text, &stretches, out));
            others.push(("avx512", found));
        }
        if let Some(vbmi) = Vbmi::detect() {
            let found = run(&|out| engine.scan_classes_vbmi(vbmi, text, &stretches, out));
            others.push(("vbmi", found));
        }
    }
    for (name, found) in others {
        if found != baseline {
            return Err(format!("{name} found {found:?}, baseline {baseline:?}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The `json_reader` target's first crash was this check's own: it
    /// read the body as serde_json's `IgnoredAny`, which takes a string
    /// that is not UTF-8. Both decoders refuse it, as serde_json does when
    /// it reads values.
    #[test]
    fn a_string_that_is_not_utf8_is_refused_by_every_reader() {
        let mut body =
            format!("[\"{}\\n{}\\u0040\\\"xc", "a".repeat(62), "b".repeat(70)).into_bytes();
        body.extend_from_slice(b"\xff\xff\xff\"]");
        assert_eq!(super::json_paths(&body), Ok(()));
    }
}
