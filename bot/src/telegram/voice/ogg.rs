//! The length of an OGG/Opus stream, read page by page as it passes (RFC 3533 pages, RFC 7845
//! Opus mapping): Telegram shows a voice message's `duration` as the bot gives it, and the
//! speech service does not say it. Only the page being read is held.
//!
//! Length = (the last granule position − the `OpusHead` pre-skip) / 48 000, per RFC 7845 §4
//! (granule positions count 48 kHz samples whatever the input rate). CRCs are not checked here:
//! Telegram checks what it plays.

/// Bytes of a page header before its segment table (RFC 3533 §6).
const HEADER: usize = 27;
/// Samples per second of Opus granule positions (RFC 7845 §4).
const RATE: f64 = 48_000.0;

/// Why a stream is not OGG/Opus, or is cut short.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotOpus(pub String);

/// Reads an OGG/Opus stream fed in any pieces; [`finish`](OpusLength::finish) gives its length.
#[derive(Debug, Default)]
pub struct OpusLength {
    /// The start of a page not yet whole.
    pending: Vec<u8>,
    /// The first page's stream serial number (other streams are not counted).
    serial: Option<u32>,
    /// `OpusHead`'s pre-skip, in samples.
    pre_skip: Option<u64>,
    /// The last granule position of the stream (−1, "no packet ends here", skipped).
    last_granule: Option<u64>,
}

impl OpusLength {
    /// Reads `bytes`, the stream's next piece. Errors: not an Ogg page where one must start, a
    /// first packet that is not `OpusHead`.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), NotOpus> {
        self.pending.extend_from_slice(bytes);
        let mut at = 0;
        while let Some(len) = page_len(&self.pending[at..])? {
            let page = &self.pending[at..at + len];
            let (serial, granule) = (le32(&page[14..18]), i64::from_le_bytes(le64(&page[6..14])));
            let body = &page[HEADER + usize::from(page[26])..];
            match self.serial {
                None => {
                    if !body.starts_with(b"OpusHead") || body.len() < 19 {
                        return Err(NotOpus("its first packet is not an OpusHead".into()));
                    }
                    self.serial = Some(serial);
                    self.pre_skip = Some(u64::from(u16::from_le_bytes([body[10], body[11]])));
                }
                Some(s) if s == serial && granule >= 0 => self.last_granule = Some(granule.unsigned_abs()),
                Some(_) => {}
            }
            at += len;
        }
        self.pending.drain(..at);
        Ok(())
    }

    /// The stream's length in seconds. Errors: it ended inside a page, or before any audio.
    pub fn finish(self) -> Result<f64, NotOpus> {
        if !self.pending.is_empty() {
            return Err(NotOpus(format!(
                "it ends inside a page ({} bytes left over)",
                self.pending.len()
            )));
        }
        match (self.pre_skip, self.last_granule) {
            (Some(skip), Some(granule)) => Ok(granule.saturating_sub(skip) as f64 / RATE),
            (None, _) => Err(NotOpus("it is empty".into())),
            (Some(_), None) => Err(NotOpus("it holds no audio".into())),
        }
    }
}

/// Telegram's `duration` for `seconds` of audio: whole seconds, rounded up, at least 1.
pub fn whole_seconds(seconds: f64) -> u32 {
    (seconds.ceil() as u32).max(1)
}

/// The length of the page at the start of `b`, `None` while it is not whole yet.
fn page_len(b: &[u8]) -> Result<Option<usize>, NotOpus> {
    if b.len() < HEADER {
        return Ok(None);
    }
    if &b[..4] != b"OggS" || b[4] != 0 {
        return Err(NotOpus(
            "it is not an Ogg stream (no OggS page where one must start)".into(),
        ));
    }
    let segments = usize::from(b[26]);
    let Some(table) = b.get(HEADER..HEADER + segments) else {
        return Ok(None);
    };
    let len = HEADER + segments + table.iter().map(|&l| usize::from(l)).sum::<usize>();
    Ok((b.len() >= len).then_some(len))
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn le64(b: &[u8]) -> [u8; 8] {
    let mut a = [0; 8];
    a.copy_from_slice(&b[..8]);
    a
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn page(granule: i64, serial: u32, body: &[u8]) -> Vec<u8> {
        let mut p = b"OggS\0\0".to_vec();
        p.extend_from_slice(&granule.to_le_bytes());
        p.extend_from_slice(&serial.to_le_bytes());
        p.extend_from_slice(&[0; 8]);
        let mut lacing = vec![255; body.len() / 255];
        lacing.push((body.len() % 255) as u8);
        p.push(lacing.len() as u8);
        p.extend_from_slice(&lacing);
        p.extend_from_slice(body);
        p
    }

    fn head(pre_skip: u16) -> Vec<u8> {
        let mut h = b"OpusHead\x01\x01".to_vec();
        h.extend_from_slice(&pre_skip.to_le_bytes());
        h.extend_from_slice(&[0x80, 0xbb, 0, 0, 0, 0, 0]);
        h
    }

    fn stream() -> Vec<u8> {
        [
            page(0, 7, &head(312)),
            page(0, 7, b"OpusTags...."),
            page(48_000 + 312, 7, &[1; 300]),
            page(-1, 7, &[2; 40]),
            page(2 * 48_000 + 24_000 + 312, 7, &[3; 10]),
            page(10 * 48_000, 9, &[4; 10]),
        ]
        .concat()
    }

    #[test]
    fn the_length_is_read_from_the_last_granule_in_any_pieces() {
        let bytes = stream();
        for piece in [1, 7, 27, 100, bytes.len()] {
            let mut r = OpusLength::default();
            for c in bytes.chunks(piece) {
                r.feed(c).unwrap();
            }
            assert_eq!(r.finish().unwrap(), 2.5, "pieces of {piece}");
        }
        assert_eq!(whole_seconds(2.5), 3);
        assert_eq!(whole_seconds(0.2), 1);
    }

    #[test]
    fn what_is_not_a_whole_opus_stream_is_told() {
        let mut r = OpusLength::default();
        assert!(r.feed(b"ID3\x04 an mp3 with enough bytes to be a page").is_err());
        let mut r = OpusLength::default();
        assert!(r.feed(&page(0, 1, b"vorbis header, long enough")).is_err());
        let bytes = stream();
        let mut r = OpusLength::default();
        r.feed(&bytes[..bytes.len() - 3]).unwrap();
        assert!(r.finish().unwrap_err().0.contains("ends inside a page"));
        let mut r = OpusLength::default();
        r.feed(&page(0, 7, &head(312))).unwrap();
        assert_eq!(r.finish(), Err(NotOpus("it holds no audio".into())));
    }
}
