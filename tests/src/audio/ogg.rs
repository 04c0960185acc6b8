//! A strict reader of OGG/Opus files (RFC 3533 for the pages, RFC 7845 for Opus in Ogg): every
//! page's capture pattern, version, CRC and sequence, one logical stream, `OpusHead` then
//! `OpusTags` first, the last page marked end-of-stream; the duration from the last granule
//! position minus the pre-skip, at 48 kHz.

/// What a valid OGG/Opus file holds.
#[derive(Debug, Clone, PartialEq)]
pub struct OpusInfo {
    /// `OpusHead` channel count.
    pub channels: u8,
    /// `OpusHead` input sample rate (informational; Opus always decodes at 48 kHz).
    pub input_rate: u32,
    /// Pages in the file.
    pub pages: usize,
    /// Playing time in seconds: (last granule position − pre-skip) / 48000.
    pub seconds: f64,
}

/// Why a file is not valid OGG/Opus.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("not a valid OGG/Opus file: {0}")]
pub struct OggError(pub String);

fn bad<T>(what: impl Into<String>) -> Result<T, OggError> {
    Err(OggError(what.into()))
}

/// One page: its header fields and its body.
struct Page<'a> {
    flags: u8,
    granule: i64,
    serial: u32,
    sequence: u32,
    body: &'a [u8],
}

/// Checks `bytes` as OGG/Opus and reads its details.
pub fn parse_opus(bytes: &[u8]) -> Result<OpusInfo, OggError> {
    let pages = pages(bytes)?;
    let Some(first) = pages.first() else {
        return bad("no pages");
    };
    if first.flags & 0x02 == 0 {
        return bad("the first page is not marked beginning-of-stream");
    }
    let head = first.body;
    if head.len() < 19 || &head[..8] != b"OpusHead" {
        return bad("the first packet is not OpusHead");
    }
    if head[8] != 1 {
        return bad(format!("OpusHead version {}", head[8]));
    }
    let channels = head[9];
    let pre_skip = u16::from_le_bytes([head[10], head[11]]);
    let input_rate = u32::from_le_bytes([head[12], head[13], head[14], head[15]]);
    if channels == 0 {
        return bad("OpusHead has 0 channels");
    }
    if !pages.get(1).is_some_and(|p| p.body.starts_with(b"OpusTags")) {
        return bad("the second page does not start with OpusTags");
    }
    for (i, p) in pages.iter().enumerate() {
        if p.serial != first.serial {
            return bad(format!("page {i} belongs to another stream (chained or multiplexed)"));
        }
        if p.sequence as usize != i {
            return bad(format!("page {i} has sequence number {}", p.sequence));
        }
    }
    let Some(last) = pages.last().filter(|p| p.flags & 0x04 != 0) else {
        return bad("the last page is not marked end-of-stream");
    };
    let samples = last.granule - i64::from(pre_skip);
    if samples < 0 || pages.len() < 3 {
        return bad("no audio");
    }
    Ok(OpusInfo {
        channels,
        input_rate,
        pages: pages.len(),
        seconds: samples as f64 / 48_000.0,
    })
}

/// Splits `bytes` into pages, checking each one's header and CRC.
fn pages(bytes: &[u8]) -> Result<Vec<Page<'_>>, OggError> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.len() < 27 || &rest[..4] != b"OggS" {
            return bad(format!("no page at byte {at} (capture pattern OggS missing)"));
        }
        if rest[4] != 0 {
            return bad(format!("page at byte {at}: version {}", rest[4]));
        }
        let segments = usize::from(rest[26]);
        let header_len = 27 + segments;
        let Some(table) = rest.get(27..header_len) else {
            return bad(format!("page at byte {at}: truncated segment table"));
        };
        let body_len: usize = table.iter().map(|&s| usize::from(s)).sum();
        let Some(page) = rest.get(..header_len + body_len) else {
            return bad(format!("page at byte {at}: truncated body"));
        };
        let stored = u32::from_le_bytes([page[22], page[23], page[24], page[25]]);
        if crc(page) != stored {
            return bad(format!("page at byte {at}: CRC mismatch"));
        }
        let le32 = |i: usize| u32::from_le_bytes([page[i], page[i + 1], page[i + 2], page[i + 3]]);
        out.push(Page {
            flags: page[5],
            granule: i64::from_le_bytes([
                page[6], page[7], page[8], page[9], page[10], page[11], page[12], page[13],
            ]),
            serial: le32(14),
            sequence: le32(18),
            body: &page[header_len..],
        });
        at += page.len();
    }
    Ok(out)
}

/// Ogg's CRC-32 (polynomial 0x04C11DB7, not reflected, initial 0) of a page with its CRC field
/// taken as zero.
fn crc(page: &[u8]) -> u32 {
    let mut crc: u32 = 0;
    for (i, &byte) in page.iter().enumerate() {
        let b = if (22..26).contains(&i) { 0 } else { byte };
        crc ^= u32::from(b) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ 0x04C1_1DB7
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A page with a correct CRC.
    fn page(flags: u8, granule: i64, sequence: u32, body: &[u8]) -> Vec<u8> {
        let mut p = b"OggS".to_vec();
        p.push(0);
        p.push(flags);
        p.extend_from_slice(&granule.to_le_bytes());
        p.extend_from_slice(&7u32.to_le_bytes());
        p.extend_from_slice(&sequence.to_le_bytes());
        p.extend_from_slice(&[0; 4]);
        let mut lacing = vec![255; body.len() / 255];
        lacing.push(u8::try_from(body.len() % 255).unwrap_or(0));
        p.push(u8::try_from(lacing.len()).unwrap_or(0));
        p.extend_from_slice(&lacing);
        p.extend_from_slice(body);
        let c = crc(&p).to_le_bytes();
        p[22..26].copy_from_slice(&c);
        p
    }

    fn file(last_granule: i64) -> Vec<u8> {
        let mut head = b"OpusHead".to_vec();
        head.extend_from_slice(&[1, 1]);
        head.extend_from_slice(&312u16.to_le_bytes());
        head.extend_from_slice(&16_000u32.to_le_bytes());
        head.extend_from_slice(&[0, 0, 0]);
        let mut f = page(0x02, 0, 0, &head);
        f.extend(page(0, 0, 1, b"OpusTags\x00\x00\x00\x00\x00\x00\x00\x00"));
        f.extend(page(0x04, last_granule, 2, &[0xfc; 40]));
        f
    }

    #[test]
    fn a_well_formed_file_reads_with_its_duration() {
        let info = parse_opus(&file(48_000 * 3 + 312)).unwrap();
        assert_eq!(
            info,
            OpusInfo {
                channels: 1,
                input_rate: 16_000,
                pages: 3,
                seconds: 3.0
            }
        );
    }

    #[test]
    fn damage_is_found() {
        let mut flipped = file(48_000);
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(parse_opus(&flipped).unwrap_err().0.contains("CRC"));
        let good = file(48_000);
        assert!(parse_opus(&good[..good.len() - 3]).unwrap_err().0.contains("truncated"));
        assert!(parse_opus(b"ID3\x03 not ogg at all, an mp3").is_err());
        assert!(parse_opus(&[]).is_err());
    }
}
