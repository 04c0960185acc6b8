//! Real spoken notes for tests: text → `espeak-ng` (WAV) → `opusenc` (OGG/Opus), as Telegram's
//! voice notes are. Both are Debian packages (`espeak-ng`, `opus-tools`) the test command
//! installs; when one is missing the error says which to install, so the test fails with the
//! reason instead of being skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A spoken note made from `text` in `dir`: `<dir>/<stem>.ogg` (OGG/Opus, mono, 48 kHz), with its
/// duration in whole seconds (rounded up, as Telegram reports it).
pub fn spoken_note(text: &str, dir: &Path, stem: &str) -> Result<(PathBuf, u32), String> {
    let wav = dir.join(format!("{stem}.wav"));
    let ogg = dir.join(format!("{stem}.ogg"));
    run(
        Command::new("espeak-ng").arg("-w").arg(&wav).arg(text),
        "espeak-ng",
        "espeak-ng",
    )?;
    encode(&wav, &ogg)?;
    let bytes = std::fs::read(&ogg).map_err(|e| format!("cannot read {}: {e}", ogg.display()))?;
    let info = super::parse_opus(&bytes).map_err(|e| format!("opusenc made {}: {e}", ogg.display()))?;
    Ok((ogg, info.seconds.ceil() as u32))
}

/// A note of `secs` seconds of a 440 Hz tone (a long note without speaking it): a 16 kHz mono
/// WAV written here, encoded by `opusenc` to `<dir>/<stem>.ogg`.
pub fn tone_note(secs: u32, dir: &Path, stem: &str) -> Result<PathBuf, String> {
    const RATE: u32 = 16_000;
    let wav = dir.join(format!("{stem}.wav"));
    let ogg = dir.join(format!("{stem}.ogg"));
    let samples = RATE * secs;
    let mut bytes = Vec::with_capacity(44 + samples as usize * 2);
    let data_len = samples * 2;
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&(36 + data_len).to_le_bytes());
    bytes.extend_from_slice(b"WAVEfmt ");
    bytes.extend_from_slice(&16u32.to_le_bytes());
    bytes.extend_from_slice(&1u16.to_le_bytes()); // PCM
    bytes.extend_from_slice(&1u16.to_le_bytes()); // mono
    bytes.extend_from_slice(&RATE.to_le_bytes());
    bytes.extend_from_slice(&(RATE * 2).to_le_bytes());
    bytes.extend_from_slice(&2u16.to_le_bytes());
    bytes.extend_from_slice(&16u16.to_le_bytes());
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&data_len.to_le_bytes());
    for i in 0..samples {
        let t = f64::from(i) / f64::from(RATE);
        let v = (t * 440.0 * std::f64::consts::TAU).sin() * 8000.0;
        bytes.extend_from_slice(&(v as i16).to_le_bytes());
    }
    std::fs::write(&wav, bytes).map_err(|e| format!("cannot write {}: {e}", wav.display()))?;
    encode(&wav, &ogg)?;
    Ok(ogg)
}

/// `opusenc` at 24 kb/s, as a voice note is.
fn encode(wav: &Path, ogg: &Path) -> Result<(), String> {
    run(
        Command::new("opusenc")
            .args(["--quiet", "--bitrate", "24"])
            .arg(wav)
            .arg(ogg),
        "opusenc",
        "opus-tools",
    )
}

fn run(cmd: &mut Command, program: &str, package: &str) -> Result<(), String> {
    match cmd.output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "{program} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "{program} is not installed: the voice tests need the Debian package {package} \
             (scripts/test.sh installs it as root: apt-get install -y --no-install-recommends {package})"
        )),
        Err(e) => Err(format!("cannot run {program}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spoken_sentence_becomes_a_valid_voice_note_of_its_length() {
        let dir = std::env::temp_dir().join(format!("testkit-speak-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| e.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
        let (path, secs) =
            spoken_note("remind me at nine tomorrow to call Anna", &dir, "anna").unwrap_or_else(|e| panic!("{e}"));
        let info = super::super::parse_opus(&std::fs::read(path).unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(info.channels, 1);
        assert!((1.0..6.0).contains(&info.seconds), "{info:?}");
        assert_eq!(secs, info.seconds.ceil() as u32);
        let tone = tone_note(3, &dir, "tone").unwrap_or_else(|e| panic!("{e}"));
        let info = super::super::parse_opus(&std::fs::read(tone).unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
        assert!((info.seconds - 3.0).abs() < 0.01, "{info:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
