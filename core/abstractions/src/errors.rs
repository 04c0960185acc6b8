//! Error text for people: an error and its causes on one line.

/// `error` and its causes, joined with `: `, each cause left out when the text so far already
/// contains it (HTTP clients such as reqwest put the useful part, e.g. "connection refused", in
/// the sources, and some repeat their source in their own text).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("error sending request: {0}")]
    struct Repeats(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("cannot connect")]
    struct Hides(#[source] std::io::Error);

    #[test]
    fn causes_follow_once() {
        let refused = || std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        assert_eq!(error_chain(&Hides(refused())), "cannot connect: connection refused");
        assert_eq!(
            error_chain(&Repeats(refused())),
            "error sending request: connection refused"
        );
    }
}
