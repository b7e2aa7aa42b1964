//! Templates that write a value the way people do: `#` a digit, `%` a
//! digit from 1 to 9 (where a subscriber number starts), `{a|b|c}` one of
//! the alternatives (area codes, mobile prefixes, issuers' ranges), which
//! may hold `#` and `%` themselves.

use crate::common::Rng;

pub fn fill(rng: &mut Rng, template: &str) -> String {
    let mut out = String::with_capacity(template.len());
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        match c {
            '#' => out.push(rng.digit() as char),
            '%' => out.push(char::from(b'1' + rng.below(9) as u8)),
            '{' => {
                let group: String = chars.by_ref().take_while(|&c| c != '}').collect();
                let options: Vec<&str> = group.split('|').collect();
                let pick = *rng.pick(&options);
                out.push_str(&fill(rng, pick));
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether every `{` is closed before the next opens and no `}` stands
/// alone (the set's check of its own templates).
pub fn balanced(template: &str) -> bool {
    let mut open = false;
    for c in template.chars() {
        match c {
            '{' if open => return false,
            '{' => open = true,
            '}' if !open => return false,
            '}' => open = false,
            _ => {}
        }
    }
    !open
}
