//! Event ids for creates, derived from the chat and the tool call's id so a retried call
//! cannot create a second event. Google's rule for client-chosen ids (Calendar API, Events
//! resource, `id`): characters of base32hex (`a-v`, `0-9`, RFC 2938 §3.1.2), 5-1024 long.

use sha2::{Digest, Sha256};

const ALPHABET: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";

/// Lower-case base32hex without padding.
pub fn base32hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 8 / 5 + 1);
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

/// The event id of a create: base32hex of SHA-256(chat key, NUL, tool call id), 52 characters.
pub fn event_id(chat_key: &str, tool_call_id: &str) -> String {
    let mut h = Sha256::new();
    h.update(chat_key.as_bytes());
    h.update([0]);
    h.update(tool_call_id.as_bytes());
    base32hex(&h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_base32hex_stable_and_distinct() {
        // RFC 4648 §10 test vectors, lower case, no padding.
        assert_eq!(base32hex(b"foobar"), "cpnmuoj1e8");
        assert_eq!(base32hex(b"f"), "co");
        let id = event_id("42", "toolu_01");
        assert_eq!(id, event_id("42", "toolu_01"));
        assert_ne!(id, event_id("g42", "toolu_01"));
        assert_eq!(id.len(), 52);
        assert!(id.bytes().all(|b| matches!(b, b'a'..=b'v' | b'0'..=b'9')));
    }
}
