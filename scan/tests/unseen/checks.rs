//! Checks of a generated set's bodies that do not depend on the set: every
//! JSON document a body holds parses (those nested in its strings too),
//! and the digit runs of a text, for the negatives' census. Both unseen
//! sets use them.

use crate::common::Labelled;

/// Every JSON string in `value` that holds a JSON document parses too.
fn check_nested_json(value: &serde_json::Value) -> Result<(), String> {
    match value {
        serde_json::Value::String(s) if s.starts_with('{') => {
            let inner: serde_json::Value = serde_json::from_str(s).map_err(|e| e.to_string())?;
            check_nested_json(&inner)
        }
        serde_json::Value::Array(items) => items.iter().try_for_each(check_nested_json),
        serde_json::Value::Object(map) => map.values().try_for_each(check_nested_json),
        _ => Ok(()),
    }
}

pub fn check_body(case: &Labelled) -> Result<(), String> {
    let documents: Vec<&str> = match case.content_type {
        "application/json" => vec![case.text.as_str()],
        "application/x-ndjson" => case.text.lines().collect(),
        _ => Vec::new(),
    };
    for doc in documents {
        let value: serde_json::Value = serde_json::from_str(doc).map_err(|e| e.to_string())?;
        check_nested_json(&value)?;
    }
    Ok(())
}

/// The digits of each run of digits in `s` joined by single spaces,
/// dashes or dots.
pub fn digit_runs(s: &str) -> Vec<String> {
    let mut runs = vec![String::new()];
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let joins = " -.".contains(c)
            && i > 0
            && chars[i - 1].is_ascii_digit()
            && chars.get(i + 1).is_some_and(char::is_ascii_digit);
        if c.is_ascii_digit() {
            runs.last_mut().expect("a run").push(c);
        } else if !joins && !runs.last().expect("a run").is_empty() {
            runs.push(String::new());
        }
    }
    runs.retain(|r| !r.is_empty());
    runs
}
