use super::*;
use pretty_assertions::assert_eq;
use volcanic_abstractions::processes::SecretRedactor;

#[test]
fn replaces_every_occurrence_of_every_secret() {
    let r = Redactor::with_secrets(["abc123xyz", "p4ssw0rd!"]);
    assert_eq!(
        r.redact("key=abc123xyz pw=p4ssw0rd! again abc123xyz."),
        "key=[REDACTED] pw=[REDACTED] again [REDACTED]."
    );
}

#[test]
fn text_without_secrets_is_unchanged() {
    let r = Redactor::with_secrets(["abc123xyz"]);
    assert_eq!(r.redact("nothing to see here"), "nothing to see here");
    assert_eq!(Redactor::new().redact("empty redactor"), "empty redactor");
}

#[test]
fn short_values_are_ignored() {
    let r = Redactor::with_secrets(["12345", "", "123456"]);
    assert_eq!(r.len(), 1);
    assert_eq!(r.redact("12345 and 123456"), "12345 and [REDACTED]");
}

#[test]
fn longer_secret_containing_a_shorter_one_is_redacted_whole() {
    let r = Redactor::with_secrets(["abcdef12", "abcdef1234567"]);
    assert_eq!(r.redact("x abcdef1234567 y abcdef12 z"), "x [REDACTED] y [REDACTED] z");
}

#[test]
fn overlapping_occurrences_become_one_redaction() {
    let r = Redactor::with_secrets(["aaaa-bbbb", "bbbb-cccc"]);
    assert_eq!(r.redact("<aaaa-bbbb-cccc>"), "<[REDACTED]>");
}

#[test]
fn secrets_added_at_run_time_are_redacted() {
    let r = Redactor::new();
    assert_eq!(r.redact("token ya29.oauth-token"), "token ya29.oauth-token");
    r.add_secret("ya29.oauth-token");
    r.add_secret("ya29.oauth-token");
    assert_eq!(r.len(), 1);
    assert_eq!(r.redact("token ya29.oauth-token"), "token [REDACTED]");
    assert!(r.contains_secret("xx ya29.oauth-token"));
}

#[test]
fn multibyte_text_around_secrets_survives() {
    let r = Redactor::with_secrets(["сек-рет-ключ"]);
    assert_eq!(r.redact("ключ: сек-рет-ключ ✓"), "ключ: [REDACTED] ✓");
}

#[test]
fn a_removed_secret_is_no_longer_redacted_and_the_others_still_are() {
    let r = Redactor::with_secrets(["old-access-token", "refresh-token-1"]);
    r.remove_secret("old-access-token");
    r.add_secret("new-access-token");
    assert_eq!(r.len(), 2);
    assert_eq!(
        r.redact("old-access-token new-access-token refresh-token-1"),
        "old-access-token [REDACTED] [REDACTED]"
    );
    r.remove_secret("not-there");
    assert_eq!(r.len(), 2);
}
