//! The progress line (without live answers, and as the draft's or preview's text while tools
//! run): the tools used so far, led by what a voice note was heard as; sent once, then edited at
//! most every [`PROGRESS_EVERY`](super::PROGRESS_EVERY).

use super::{Delivery, RunState};

impl Delivery {
    /// Sends the progress line (Mode::Off) or marks it for the next edit.
    pub(super) async fn show_progress(&self, st: &mut RunState) {
        if st.progress.is_some() {
            st.dirty = true;
            return;
        }
        let line = progress_line(st.heard.as_deref(), &st.tools);
        if let Ok(m) = self.tg.send_plain(self.to, &line, None).await {
            st.progress = Some(m.id.0);
            self.marks.set(self.to, m.id.0);
        }
    }

    /// Edits the progress line to what it shows now (the edit marked by
    /// [`show_progress`](Self::show_progress) is due).
    pub(super) async fn edit_progress(&self, st: &mut RunState) {
        if let Some(id) = st.progress {
            let line = progress_line(st.heard.as_deref(), &st.tools);
            self.tg.edit_progress(self.to, id, &line).await;
        }
        st.dirty = false;
    }
}

/// The progress line, led by what a voice note was `heard` as (on a line of its own).
pub(super) fn progress_line(heard: Option<&str>, tools: &[String]) -> String {
    match (heard, tools.is_empty()) {
        (Some(quote), true) => quote.to_owned(),
        (Some(quote), false) => format!("{quote}\n{}", progress_text(tools)),
        (None, _) => progress_text(tools),
    }
}

/// The progress line: the tools used so far, short.
pub(super) fn progress_text(tools: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut names: Vec<&str> = tools.iter().map(String::as_str).collect();
    let more = names.len().saturating_sub(SHOWN);
    names.drain(..more);
    let mut s = format!("⚙️ {}", names.join(" → "));
    if more > 0 {
        s = format!("⚙️ … +{more} → {}", names.join(" → "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_text_keeps_the_last_tools() {
        assert_eq!(progress_text(&["bash".into(), "read".into()]), "⚙️ bash → read");
        let many: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
        assert!(progress_text(&many).starts_with("⚙️ … +2 → t2"));
        let heard = Some("🎤 “call Anna”");
        assert_eq!(progress_line(heard, &[]), "🎤 “call Anna”");
        assert_eq!(progress_line(heard, &["bash".into()]), "🎤 “call Anna”\n⚙️ bash");
    }
}
