//! Tool names as providers accept them: `<server>__<tool>`, `[A-Za-z0-9_-]`, at most 64
//! characters (the strictest common rule: OpenAI's `^[a-zA-Z0-9_-]{1,64}$`, which Anthropic's
//! tool names share).

/// The longest name a provider accepts.
pub const MAX_NAME: usize = 64;

/// `<server>__<tool>` with every other character replaced by `_`, cut to [`MAX_NAME`]; a name
/// that had to be cut ends with 8 hex digits of its full name's hash, so two long names stay apart.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full: String = format!("{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if full.len() <= MAX_NAME {
        return full;
    }
    // FNV-1a: stable across runs and builds (the model sees the name in the session's history).
    let hash = full
        .bytes()
        .fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    format!("{}_{hash:08x}", &full[..MAX_NAME - 9])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_and_bounded() {
        assert_eq!(tool_name("everything", "get-sum"), "everything__get-sum");
        assert_eq!(tool_name("fs", "read.file/v2"), "fs__read_file_v2");
        let long = tool_name("server", &"x".repeat(100));
        assert_eq!(long.len(), MAX_NAME);
        assert_ne!(long, tool_name("server", &"x".repeat(101)));
        assert!(long.starts_with("server__xxx"));
    }
}
